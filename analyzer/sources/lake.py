"""Trace files in object storage: ``--traces s3://bucket/prefix/`` (and ``gs://``, ``az://``).

The OpenTelemetry Collector's file and S3 exporters leave OTLP/JSON objects (``.json``, ``.jsonl``,
``.json.gz``) under a prefix, often partitioned by time (``year=2026/month=12/day=01/hour=03/``).
An object-storage path is read the way a folder is: every trace file under it, at any depth. The
objects are copied into a temporary spool folder (fsspec: s3fs for ``s3://``, gcsfs for ``gs://``,
adlfs for ``az://``; credentials from the standard environment and profile chain of each, never from
the command line; ``AWS_ENDPOINT_URL`` points at another S3 service) and ingested from there as local
files, so every check a local file gets (gzip bombs, bad lines, the line count) holds for them too;
the store records each object by its URL. An object whose URL and size the store already holds is not
downloaded again (objects do not grow; one written again under the same key with another size is read
again whole).

What cannot be read is named, and the rest is read: a bucket or prefix that does not exist, a key
the credentials may not read, an object that breaks off in transfer. An object whose content is cut
short (a truncated ``.gz``, a last line cut mid-way) is read as a local file of that content is.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from citeline.analyzer.problems import Problem
from citeline.analyzer.store import target
from citeline.instrumentation.redact import redact_text

if TYPE_CHECKING:
    import duckdb


class Report(Protocol):
    """What an ingest's report says that the spool rewrites (sources/ingest.py's IngestReport)."""

    problems: list[Problem]
    paths: list[str]
    files_skipped_unchanged: int


#: URL schemes read through fsspec, and the package each needs
SCHEMES = {"s3": "s3fs", "gs": "gcsfs", "gcs": "gcsfs", "az": "adlfs", "abfs": "adlfs", "abfss": "adlfs"}
#: objects fetched in one concurrent request, and the bytes one such batch may hold in memory
BATCH_OBJECTS = 64
BATCH_BYTES = 64 * 1024 * 1024


def is_url(path: str | Path) -> bool:
    """Whether ``path`` names object storage (``s3://...``) rather than a local file or folder."""
    text = str(path)
    scheme, sep, _rest = text.partition("://")
    return bool(sep) and scheme.lower() in SCHEMES


class LakeError(Exception):
    """An object-storage path that cannot be listed at all (no bucket, no access, no driver)."""


@dataclass
class Spool:
    """The objects copied to a local folder: each local file and the URL it stands for."""

    root: str = ""  # the temporary folder the copies are in
    files: list[Path] = field(default_factory=list)
    url_of: dict[str, str] = field(default_factory=dict)  # local path -> URL
    unchanged: list[str] = field(default_factory=list)  # URLs the store already holds at this size
    problems: list[tuple[str, str]] = field(default_factory=list)  # (URL, what went wrong)

    def url(self, local: str) -> str:
        return self.url_of.get(local, local)

    def record(self, con: duckdb.DuckDBPyConnection, report: Report) -> None:
        """After the ingest: the objects copied are recorded by their URL, not by the temporary copy's path
        (in the report and in the store's rows)."""
        for url, why in self.problems:
            report.problems.append(Problem(url, "-", "-", f"{why}; skipped"))
        report.files_skipped_unchanged += len(self.unchanged)
        report.paths = sorted({*(self.url(p) for p in report.paths), *self.unchanged})
        for i, p in enumerate(report.problems):
            message = p.message
            if self.root and self.root in message:  # a reader's error quoting the copy's path
                for local, url in self.url_of.items():
                    message = message.replace(local, url)
            if p.source in self.url_of or message != p.message:
                report.problems[i] = Problem(self.url(p.source), p.place, p.field, message, p.skipped)
        if not self.url_of:
            return
        con.execute("CREATE OR REPLACE TEMP TABLE t_spooled (local VARCHAR, url VARCHAR)")
        con.executemany("INSERT INTO t_spooled VALUES (?, ?)", list(self.url_of.items()))
        for table, column in (
            ("spans", "source_file"),
            ("file_traces", "source_file"),
            ("ingested_files", "path"),
            ("logs", "source_file"),
        ):
            own = target(con, table)  # the store's own rows: a partitioned run's files are never rewritten
            con.execute(f"UPDATE {own} AS o SET {column} = s.url FROM t_spooled AS s WHERE o.{column} = s.local")
        con.execute("DROP TABLE t_spooled")


def _fs(url: str) -> tuple[Any, str]:
    scheme = url.partition("://")[0].lower()
    try:
        import fsspec
    except ImportError as exc:
        raise LakeError(
            f"reading {scheme}:// needs fsspec and {SCHEMES[scheme]}: pip install 'citeline[lake]'"
        ) from exc
    try:
        fs, root = fsspec.core.url_to_fs(url, skip_instance_cache=True)  # credentials as the environment has them now
    except ImportError as exc:
        raise LakeError(
            f"reading {scheme}:// needs the {SCHEMES[scheme]} package: pip install {SCHEMES[scheme]}"
        ) from exc
    return fs, str(root)


def open_object(url: str) -> Any:
    """The object at ``url`` open for reading bytes at any offset (ranged requests, never the whole object)."""
    try:
        fs, root = _fs(url)
    except LakeError as exc:
        raise OSError(str(exc)) from exc
    return fs.open(root, "rb")


def why(exc: BaseException) -> str:
    """What went wrong reading an object, in words for the person running the job (never a credential)."""
    return _why(exc)


def _why(exc: BaseException) -> str:
    """What went wrong, in words for the person running the job (never a credential)."""
    if isinstance(exc, FileNotFoundError):
        what = "does not exist"
    elif isinstance(exc, PermissionError):
        what = "access denied: the credentials in the environment (or profile) may not read it"
    else:
        what = f"could not be read ({type(exc).__name__})"
    detail = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ""
    return redact_text(f"{what}: {detail}" if detail and detail.lower() not in what.lower() else what)


def listing(url: str, patterns: Iterable[str]) -> list[tuple[str, int]]:
    """The trace files under ``url`` (or ``url`` itself when it names one object): (URL, size), sorted.

    Raises :class:`LakeError` when the bucket or prefix does not exist or may not be listed."""
    fs, root = _fs(url)
    scheme = url.partition("://")[0]
    globs = tuple(patterns)
    try:
        if fs.isfile(root):
            info = fs.info(root)
            return [(url, int(info.get("size") or 0))]
        found = fs.find(root, detail=True)
    except (OSError, ValueError) as exc:
        raise LakeError(f"{url}: {_why(exc)}") from exc
    if not found and not fs.exists(root):
        raise LakeError(f"{url}: no such bucket or prefix")
    out = [
        (f"{scheme}://{key}", int(info.get("size") or 0))
        for key, info in found.items()
        if info.get("type", "file") == "file" and any(fnmatch.fnmatch(key.rsplit("/", 1)[-1], g) for g in globs)
    ]
    return sorted(out)


def fetch(urls: Iterable[str], into: Path, patterns: Iterable[str], known: set[tuple[str, int]]) -> Spool:
    """Copy every trace file under ``urls`` into ``into``; an object the store holds at its size is left."""
    spool = Spool(root=str(into))
    globs = tuple(patterns)
    todo: list[tuple[str, int]] = []
    for url in urls:
        try:
            objects = listing(url, globs)
        except LakeError as exc:
            spool.problems.append((url, str(exc).removeprefix(f"{url}: ")))
            continue
        for obj, size in objects:
            if (obj, size) in known:
                spool.unchanged.append(obj)
            else:
                todo.append((obj, size))
    todo = list(dict.fromkeys(todo))  # a prefix and an object under it, both given
    for start in range(0, len(todo), BATCH_OBJECTS):
        _fetch_batch(todo[start : start + BATCH_OBJECTS], into, start, spool)
    return spool


def _fetch_batch(batch: list[tuple[str, int]], into: Path, offset: int, spool: Spool) -> None:
    fs, _root = _fs(batch[0][0])
    small = [(u, s) for u, s in batch if s <= BATCH_BYTES // BATCH_OBJECTS]
    large = [(u, s) for u, s in batch if s > BATCH_BYTES // BATCH_OBJECTS]
    got: dict[str, Any] = {}
    if small:
        keys = [fs._strip_protocol(u) for u, _ in small]
        try:
            read = fs.cat(keys, on_error="return")  # one concurrent request for the batch
        except (OSError, ValueError) as exc:
            read = dict.fromkeys(keys, exc)
        got.update({u: read.get(k, FileNotFoundError(u)) for (u, _), k in zip(small, keys, strict=True)})
    for n, (url, size) in enumerate(batch, start=offset):
        local = into / f"{n:07d}" / url.rsplit("/", 1)[-1]
        local.parent.mkdir(parents=True, exist_ok=True)
        if (url, size) in large:
            outcome = _stream(fs, url, local)
        else:
            data = got[url]
            if isinstance(data, BaseException):
                outcome = data
            else:
                local.write_bytes(data)
                outcome = None
        if outcome is None and local.stat().st_size != size:
            outcome = OSError(f"broke off in transfer: {local.stat().st_size} of {size} bytes arrived")
        if outcome is not None:
            local.unlink(missing_ok=True)
            spool.problems.append((url, _why(outcome)))
            continue
        spool.files.append(local)
        spool.url_of[str(local)] = url


def _stream(fs: Any, url: str, local: Path) -> BaseException | None:
    """Copy a large object in blocks (never whole in memory); the error, or None."""
    try:
        with fs.open(fs._strip_protocol(url), "rb") as src, open(local, "wb") as dst:
            while block := src.read(8 * 1024 * 1024):
                dst.write(block)
    except (OSError, ValueError) as exc:
        return exc
    return None
