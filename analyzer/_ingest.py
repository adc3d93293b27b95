"""Trace files into the store: DuckDB parses, Python only counts lines and explains failures.

Every span keeps the hash and length of the line it came from; when the lines
that gave spans cover a file's bytes exactly, the file was read whole. If not,
the file is re-read line by line to name each bad line; this slow path runs
only for files with something wrong in them. Files already ingested at the same
size are skipped; spans already stored are never added twice.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import gzip
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import orjson

from ._store import SCHEMA_VERSIONS, run

PATTERNS = ("*.jsonl", "*.json", "*.jsonl.gz", "*.json.gz", "*.ndjson")
# One query reads a batch of files: fewer queries are faster (one query per file was 2-4x
# slower), but DuckDB's multi-file reader holds more memory the more files and bytes are in
# flight (8 files of 340 MB ran out of 1.5 GB where the same bytes in one file used 0.5 GB).
BATCH_BYTES = 1024 * 1024 * 1024
BATCH_FILES = 32
NEWLINE = b"\n"
# The batch query reads lines up to LINE_BYTES: DuckDB's CSV reader holds buffers of twice
# that per thread, and 256 MiB lines made it run out of memory on content-heavy traces.
# A file with longer lines (a Collector writes one batch of spans per line) is read again
# on its own with a limit fitted to its longest line, up to MAX_LINE_BYTES.
LINE_BYTES = 8 * 1024 * 1024
MAX_LINE_BYTES = 256 * 1024 * 1024


@dataclass(frozen=True)
class Problem:
    """Something in the input that was skipped, with its place."""

    source: str
    place: str
    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.source}:{self.place}: {self.field}: {self.message}"


@dataclass
class IngestReport:
    files: int = 0
    files_skipped_unchanged: int = 0
    bytes: int = 0
    spans_added: int = 0
    skipped: int = 0
    problems: list[Problem] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)  # every trace file the run covers, read now or before


def trace_files(paths: Iterable[str | Path]) -> list[Path]:
    """Trace files named directly or found (recursively) in folders, sorted."""
    out: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            for pattern in PATTERNS:
                out.extend(x for x in p.rglob(pattern) if x.is_file())
        elif p.exists():
            out.append(p)
    return sorted(set(out))


def _read(path: Path) -> bytes:
    if path.suffix == ".gz":
        with gzip.open(path, "rb") as f:
            return f.read()
    return path.read_bytes()


_SNIFF_BYTES = 64 * 1024


def _not_trace_file(path: Path) -> str | None:
    """Why ``path`` cannot be a trace file, or None. Looks at the start of its first line only
    (a gzip file truncated further on is found when its batch fails: :func:`_broken_gzip`)."""
    try:
        if path.suffix == ".gz":
            if path.stat().st_size == 0:
                return "an empty .gz file (zero bytes), not gzip data"
            with gzip.open(path, "rb") as f:
                head = f.read(_SNIFF_BYTES)
        else:
            with open(path, "rb") as f:
                head = f.read(_SNIFF_BYTES)
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        return f"not a readable gzip file ({type(exc).__name__}: {exc})"
    first = head.lstrip().split(NEWLINE, 1)[0]
    if not first:
        return None  # empty or blank: nothing to read, nothing wrong
    if not first.startswith(b"{") or b'"resourceSpans"' not in first:
        return "not a trace file: its first line is not an OTLP ExportTraceServiceRequest (resourceSpans)"
    return None


def _broken_gzip(path: Path) -> str | None:
    """Why a .gz file cannot be read to its end (truncated, corrupt), or None. Read only after a
    batch failed: a healthy run decompresses each file once, in DuckDB."""
    try:
        with gzip.open(path, "rb") as f:
            while f.read(16 * 1024 * 1024):
                pass
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        return f"not a readable gzip file ({type(exc).__name__}: {exc})"
    return None


def _line_count(data: bytes) -> int:
    """Lines in a file's bytes (blank lines count; _diagnose sorts that out when it matters)."""
    return data.count(NEWLINE) + (1 if data and not data.endswith(NEWLINE) else 0)


def _diagnose(path: Path, lines: list[bytes]) -> list[Problem]:
    """Name every line of ``path`` DuckDB could not read: truncated JSON, binary junk, wrong shape."""
    problems: list[Problem] = []
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        if len(line) > MAX_LINE_BYTES:
            problems.append(
                Problem(
                    str(path),
                    f"line {n}",
                    "-",
                    f"line of {len(line):,} bytes is longer than the {MAX_LINE_BYTES:,} citeline reads; line skipped "
                    "(write smaller batches: one trace or a few thousand spans per line)",
                )
            )
            continue
        try:
            doc = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            kind = "not UTF-8 text (binary junk?)" if b"\x00" in line or _not_utf8(line) else "invalid JSON"
            problems.append(Problem(str(path), f"line {n}", "-", f"{kind}: {exc}; line skipped"))
            continue
        if not isinstance(doc, dict) or "resourceSpans" not in doc:
            problems.append(
                Problem(
                    str(path),
                    f"line {n}",
                    "resourceSpans",
                    "not an OTLP ExportTraceServiceRequest; line skipped",
                )
            )
    return problems


def _not_utf8(line: bytes) -> bool:
    try:
        line.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


def _whole(size: int, lines: int, covered: int) -> bool:
    """Did the lines that gave spans cover the file (each line plus its newline)?"""
    return covered in (size, size + 1) or (size == 0 and lines == 0)


_LINE_TABLES = ("spans", "t_batch")


def _read_lines(
    con: duckdb.DuckDBPyConnection, files: list[str], table: str = "spans"
) -> dict[str, tuple[int, int, int]]:
    """Per file: the spans in ``table`` from it, the distinct lines that gave them, the bytes those cover.

    ``spans``: what the store holds from each file; ``t_batch``: what the last batch
    read from it (every line, also those whose spans were stored before).

    Counted from the line hash and length every span keeps, so no second parse and no
    second read. When the covered bytes (each line plus its newline) equal the file's
    size, every line was read. Anything else (a refused line, a blank one, a line
    repeated, a line whose spans all came in earlier from another file) sends the
    file down the slow path that reads it line by line and names what it finds.
    """
    assert table in _LINE_TABLES  # an identifier from this module, never user input
    rows = con.execute(
        "SELECT source_file, sum(spans), count(*), sum(line_bytes + 1) FROM "
        f"(SELECT source_file, line_hash, line_bytes, count(*) AS spans FROM {table} "
        " WHERE list_contains($files, source_file) GROUP BY ALL) "
        "GROUP BY source_file",
        {"files": files},
    ).fetchall()
    return {str(name): (int(spans), int(n), int(covered)) for name, spans, n, covered in rows}


def _batches(files: list[Path], sizes: dict[Path, int]) -> Iterable[list[Path]]:
    batch: list[Path] = []
    size = 0
    for f in files:
        if batch and (size + sizes[f] > BATCH_BYTES or len(batch) >= BATCH_FILES):
            yield batch
            batch, size = [], 0
        batch.append(f)
        size += sizes[f]
    if batch:
        yield batch


@contextlib.contextmanager
def _reporting(
    con: duckdb.DuckDBPyConnection,
    progress: Callable[[int, int], None] | None,
    done: int,
    batch_bytes: int,
    total: int,
) -> Iterator[None]:
    """While a batch runs, report its share read so far (DuckDB's own query progress)."""
    if progress is None:
        yield
        return
    con.execute("SET enable_progress_bar = true")
    con.execute("SET enable_progress_bar_print = false")
    stop = threading.Event()

    def poll() -> None:
        while not stop.wait(0.25):
            pct = con.query_progress()
            if 0 < pct < 100:
                progress(done + int(batch_bytes * pct / 100), total)

    watcher = threading.Thread(target=poll, name="citeline-ingest-progress", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        stop.set()
        watcher.join()


def ingest(
    con: duckdb.DuckDBPyConnection,
    paths: Iterable[str | Path],
    *,
    progress: Callable[[int, int], None] | None = None,
) -> IngestReport:
    """Read trace files into ``spans``; returns what was read and what was skipped."""
    report = IngestReport()
    files = trace_files(paths)
    report.paths = [str(f) for f in files]
    for p in map(Path, paths):
        if not p.exists():
            report.problems.append(Problem(str(p), "-", "-", "no such file or folder"))
    known = {(str(path), int(size)) for path, size in con.execute("SELECT path, size FROM ingested_files").fetchall()}
    sizes = {f: f.stat().st_size for f in files}
    todo = []
    for f in files:
        if (str(f), sizes[f]) in known:
            report.files_skipped_unchanged += 1
        elif (why := _not_trace_file(f)) is not None:  # named once, skipped whole
            report.problems.append(Problem(str(f), "-", "-", f"{why}; file skipped"))
            report.skipped += 1
            report.paths.remove(str(f))
        else:
            todo.append(f)
    total = sum(sizes[f] for f in todo)
    done = 0
    seen_paths = {path for path, _size in known}
    for planned in _batches(todo, sizes):
        batch = list(planned)
        names = [str(f) for f in batch]
        grown = [n for n in names if n in seen_paths]  # read before at another size: count what was there
        before = _read_lines(con, grown) if grown else {}
        batch_bytes = sum(sizes[f] for f in batch)
        with _reporting(con, progress, done, batch_bytes, total):
            try:
                report.spans_added += _read_batch(con, names, LINE_BYTES)
            except duckdb.Error:
                # a gzip file that breaks off fails its whole batch: name it, read the rest
                broken = {f: why for f in batch if f.suffix == ".gz" and (why := _broken_gzip(f)) is not None}
                if not broken:
                    raise
                for f, why in broken.items():
                    report.problems.append(Problem(str(f), "-", "-", f"{why}; file skipped"))
                    report.skipped += 1
                    report.paths.remove(str(f))
                    done += sizes[f]
                batch = [f for f in batch if f not in broken]
                names = [str(f) for f in batch]
                if names:
                    report.spans_added += _read_batch(con, names, LINE_BYTES)
        read = _read_lines(con, names, "t_batch")
        stored = _read_lines(con, names)
        for f in batch:
            lines, spans, bad = _settle(con, f, sizes[f], read, stored, before, report)
            con.execute(
                "INSERT INTO ingested_files VALUES (?, ?, ?, ?, ?, ?)",
                [str(f), sizes[f], lines, spans, bad, dt.datetime.now(dt.UTC).replace(tzinfo=None)],
            )
            done += sizes[f]
            report.bytes += sizes[f]
            report.files += 1
        span_problems = _span_problems(con, names)
        report.problems.extend(span_problems)
        # an unreadable stage is named, not skipped: its span stays and its claims are not_evaluable
        report.skipped += sum(1 for p in span_problems if p.field != "citeline.adapter_error")
        if progress:
            progress(done, total)
    con.execute("DROP TABLE IF EXISTS t_batch")
    return report


# a span read more than once in one batch (checking costs ~1% of the parse; dropping the
# repeats with a window over every row cost 30%, so it runs only when there are any)
_REPEATS = "SELECT count(*) - count(DISTINCT (trace_id, span_id)) FROM t_batch"
_DROP_REPEATS = "DELETE FROM t_batch WHERE rowid NOT IN (SELECT min(rowid) FROM t_batch GROUP BY trace_id, span_id)"


def _read_batch(con: duckdb.DuckDBPyConnection, files: list[str], max_line: int) -> int:
    """Parse ``files`` into t_batch, record the files' traces, store each new span once; spans added.

    A span read twice in the batch keeps its first reading; t_batch then no longer holds
    every line, so the files involved take the slow path that counts their lines.
    """
    run(con, "ingest_spans", {"files": files, "max_line": max_line})
    run(con, "file_traces")
    repeats = con.execute(_REPEATS).fetchall()[0][0]
    if repeats:
        con.execute(_DROP_REPEATS)
    added = run(con, "store_spans").fetchall()
    return int(added[0][0]) if added else 0


def _settle(
    con: duckdb.DuckDBPyConnection,
    f: Path,
    size: int,
    read: dict[str, tuple[int, int, int]],
    stored: dict[str, tuple[int, int, int]],
    before: dict[str, tuple[int, int, int]],
    report: IngestReport,
) -> tuple[int, int, int]:
    """After a batch: was ``f`` read whole? If not, read its long lines or name its bad ones.

    Whole means the lines that gave spans in this batch cover the file's bytes (also
    when those spans were already stored from another file). Returns the file's lines,
    the spans this ingest added from it, and the lines skipped.
    """
    _spans, lines, covered = read.get(str(f), (0, 0, 0))
    spans = stored.get(str(f), (0, 0, 0))[0]
    earlier = before.get(str(f), (0, 0, 0))[0]  # spans stored from an earlier, shorter version
    if _whole(size, lines, covered):
        return lines, spans - earlier, 0
    data = _read(f)  # the slow path: the file once, for both checks below
    split = data.split(NEWLINE)
    if (longest := max(map(len, split), default=0)) > LINE_BYTES:  # long lines: this file again, alone
        limit = min(longest + 1, MAX_LINE_BYTES)
        report.spans_added += _read_batch(con, [str(f)], limit)
        _spans, lines, covered = _read_lines(con, [str(f)], "t_batch").get(str(f), (0, 0, 0))
        spans = _read_lines(con, [str(f)]).get(str(f), (0, 0, 0))[0]
        if _whole(size, lines, covered):
            return lines, spans - earlier, 0
    found = _diagnose(f, split)  # some line gave no span: name each bad one
    report.problems.extend(found)
    report.skipped += len(found)
    return _line_count(data), spans - earlier, len(found)


def _line_of(path: str, span_id: str) -> str:
    """The line holding a span (only looked up for the few spans with problems)."""
    try:
        data = _read(Path(path))
    except OSError:
        return "line ?"
    for needle in (f'"spanId":"{span_id}"', f'"spanId":"{span_id.upper()}"', f'"spanId": "{span_id}"'):
        at = data.find(needle.encode())
        if at >= 0:
            return f"line {data.count(NEWLINE, 0, at) + 1}"
    return "line ?"


def _span_problems(con: duckdb.DuckDBPyConnection, files: list[str]) -> list[Problem]:
    """Spans of an unknown schema version, or missing what their stage needs."""
    rows = run(con, "span_problems", {"files": files, "known": SCHEMA_VERSIONS}).fetchall()
    out: list[Problem] = []
    for source, trace_id, span_id, stage, version, fld, unknown, adapter_error in rows:
        place = f"{_line_of(source, span_id)} (trace {trace_id} span {span_id})"
        if fld == "citeline.adapter_error" and not unknown:
            message = (
                f"the {stage} span could not be read when the app ran ({adapter_error}): claims that need it are "
                "not_evaluable; fix the adapter (to_chunks=) or what the stage returns"
            )
        elif unknown:
            message = (
                f"unknown schema version {version!r}; this analyzer reads "
                f"{', '.join(SCHEMA_VERSIONS)}: span skipped, upgrade citeline to read it"
            )
        else:
            message = f"{stage} span without {fld}: the stage is left out of this trace's chain"
        out.append(Problem(source, place, fld, message))
    return out
