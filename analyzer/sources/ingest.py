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
import re
import tempfile
import threading
from collections.abc import Callable, Collection, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

from citeline.analyzer import streaming as _streaming
from citeline.analyzer.problems import Problem
from citeline.analyzer.sources import genai
from citeline.analyzer.sources import lake as _lake
from citeline.analyzer.sources import logs as _logs
from citeline.analyzer.sources.sniffing import BOM, SNIFF_BYTES, broken_gzip, diagnose, not_trace_file
from citeline.analyzer.store import SCHEMA_VERSIONS, run, sql, target
from citeline.analyzer.streaming import MAX_LINE_BYTES, TooLarge, measure
from citeline.instrumentation.schema import CL_ADAPTER_ERROR

PATTERNS = ("*.jsonl", "*.json", "*.jsonl.gz", "*.json.gz", "*.ndjson")
# One query reads a batch of files: fewer queries are faster (one query per file was 2-4x
# slower), but DuckDB's multi-file reader holds more memory the more files and bytes are in
# flight (8 files of 340 MB ran out of 1.5 GB where the same bytes in one file used 0.5 GB).
BATCH_BYTES = 1024 * 1024 * 1024
BATCH_FILES = 32
# The batch query reads lines up to LINE_BYTES: DuckDB's CSV reader holds buffers of twice
# that per thread, and 256 MiB lines made it run out of memory on content-heavy traces.
# A file with longer lines (a Collector writes one batch of spans per line) is read again
# on its own with a limit fitted to its longest line, up to MAX_LINE_BYTES.
LINE_BYTES = 8 * 1024 * 1024


@dataclass
class IngestReport:
    files: int = 0
    files_skipped_unchanged: int = 0
    bytes: int = 0
    spans_added: int = 0
    skipped: int = 0
    log_records: int = 0  # OTLP log records read (resourceLogs lines); of them, GenAI content for a span:
    log_content: int = 0
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


def duckdb_path(path: str) -> str:
    """``path`` as DuckDB's file readers take it literally: they expand ``*``, ``?`` and ``[...]`` as a
    glob, so a file named ``a*.jsonl`` would also read ``ab.jsonl``. Each is put in a one-character
    class (``[*]``), which matches only itself."""
    return "".join(f"[{c}]" if c in "*?[" else c for c in path)


def _diagnose(
    path: Path, long_why: str | None = None, was_read: Callable[[bytes], bool] = lambda _line: False
) -> tuple[int, list[Problem]]:
    """Lines in ``path``, and every line of it DuckDB could not read, named (:func:`sniffing.diagnose`, with
    the limits this module reads lines by)."""
    return diagnose(path, LINE_BYTES, MAX_LINE_BYTES, long_why, was_read)


@dataclass(frozen=True)
class _Ends:
    """How a file's lines are written: a byte-order mark first, CRLF line ends, and whether its last byte is
    a newline (None: not known, a .gz file is not read to its end for it)."""

    bom: bool = False
    crlf: bool = False
    last_newline: bool | None = None


def _ends(path: Path) -> _Ends:
    """Read off the file's first 64 KiB (the sniff's bytes: no second pass over the file) and its last byte."""
    try:
        if path.suffix == ".gz":
            with gzip.open(path, "rb") as f:
                head = f.read(SNIFF_BYTES)
            last = None
        else:
            with open(path, "rb") as f:
                head = f.read(SNIFF_BYTES)
                f.seek(max(0, f.seek(0, 2) - 1))
                last = f.read(1) == b"\n"
    except (OSError, EOFError, gzip.BadGzipFile):
        return _Ends()
    return _Ends(head.startswith(BOM), b"\r\n" in head, last)


def _whole(size: int, lines: int, covered: int, ends: _Ends = _Ends()) -> bool:
    """Did the lines that gave spans cover the file (each line plus its newline)? DuckDB reads a
    line without a leading byte-order mark and without the \\r of a CRLF line end. A last line without
    its newline covers one byte (CRLF: two) less; when the file's last byte is known, only the shortfall it
    explains is allowed (else a blank line's byte and a missing last newline would cancel out)."""
    extra = size - covered - (len(BOM) if ends.bom else 0) - (lines if ends.crlf else 0)
    if size == 0 and lines == 0:
        return True
    if ends.last_newline is not None:
        return extra == (0 if ends.last_newline else -2 if ends.crlf else -1)
    return extra in (0, -1) or (ends.crlf and extra == -2)


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
    # what the batch read also counts the lines of log records read from the file in this ingest
    logs = (
        " UNION ALL SELECT DISTINCT source_file, line_hash, line_bytes, 0 FROM t_log_lines AS g"
        " WHERE list_contains($files, source_file) AND NOT EXISTS (SELECT 1 FROM t_batch AS b"
        " WHERE b.source_file = g.source_file AND b.line_hash = g.line_hash AND b.line_bytes = g.line_bytes)"
        if table == "t_batch"
        else ""
    )
    rows = con.execute(
        "SELECT source_file, sum(spans), count(*), sum(line_bytes + 1) FROM "
        f"(SELECT source_file, line_hash, line_bytes, count(*) AS spans FROM {table} "
        f" WHERE list_contains($files, source_file) GROUP BY ALL{logs}) "
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
    unsniffed: Collection[str] = (),
) -> IngestReport:
    """Read trace files into ``spans``; returns what was read and what was skipped.

    A path may be a file, a folder (every trace file under it), or an object-storage URL
    (``s3://bucket/prefix/``: every trace file under it, copied to a temporary folder first and
    recorded by its URL; analyzer/sources/lake.py). ``unsniffed``: local files not sniffed for a trace line
    first (a byte range of a larger file, whose own head was sniffed: sources/byte_ranges.py)."""
    paths = list(paths)
    remote = [str(p) for p in paths if _lake.is_url(p)]
    if not remote:
        return _ingest_files(con, paths, progress, None, unsniffed)
    local = [p for p in paths if not _lake.is_url(p)]
    held = con.execute("SELECT path, size FROM ingested_files").fetchall()
    known = {(str(path), int(size)) for path, size in held}
    with tempfile.TemporaryDirectory(prefix="citeline-lake-") as tmp:
        spool = _lake.fetch(remote, Path(tmp), PATTERNS, known)
        report = _ingest_files(con, [*local, *spool.files], progress, spool, unsniffed)
    return report


def _ingest_files(
    con: duckdb.DuckDBPyConnection,
    paths: Iterable[str | Path],
    progress: Callable[[int, int], None] | None,
    spool: _lake.Spool | None,
    unsniffed: Collection[str] = (),
) -> IngestReport:
    """Local files into the store: which to read, their log records first, then a batch at a time parsed,
    stored and checked whole, file by file (:class:`_Files`)."""
    run = _Files(con, progress)
    todo = run.plan(paths, unsniffed)
    run.read_logs(todo)
    for planned in _batches(todo, run.sizes):
        run.read(list(planned))
    return run.finish(spool)


class _Files:
    """One ingest of local files, step by step; what it found goes to ``report``, and ``done`` of ``total``
    bytes to ``progress``. A file that cannot be read is named once and skipped whole; the others are read."""

    def __init__(self, con: duckdb.DuckDBPyConnection, progress: Callable[[int, int], None] | None) -> None:
        self.con, self.progress = con, progress
        self.report = IngestReport()
        self.sizes: dict[Path, int] = {}
        self.unpacked: dict[Path, int] = {}  # .gz files: the bytes they decompress to, counted before DuckDB reads them
        self.seen: set[str] = set()  # paths an earlier ingest read (at another size now: a file that grew)
        self.logs_read: set[Path] = set()  # files whose log records were read
        self.done = self.total = 0

    def plan(self, paths: Iterable[str | Path], unsniffed: Collection[str]) -> list[Path]:
        """The files to read: every trace file under ``paths`` but those read before at the same size, and those
        that are no trace file or no readable gzip (named). ``unsniffed``: files not sniffed for a trace line."""
        paths = list(paths)
        report = self.report
        files = trace_files(paths)
        report.paths = [str(f) for f in files]
        for p in map(Path, paths):
            if not p.exists():
                report.problems.append(Problem(str(p), "-", "-", "no such file or folder"))
        known = {
            (str(path), int(size))
            for path, size in self.con.execute("SELECT path, size FROM ingested_files").fetchall()
        }
        self.sizes = {f: f.stat().st_size for f in files}
        self.seen = {path for path, _size in known}
        todo = []
        for f in files:
            if (str(f), self.sizes[f]) in known:
                report.files_skipped_unchanged += 1
                continue
            why = not_trace_file(f) if str(f) not in unsniffed else None
            if why is None and f.suffix == ".gz":
                why = self._gzip(f)
            if why is not None:  # named once, skipped whole
                self._skip(f, why)
            else:
                todo.append(f)
        self.total = sum(self.sizes[f] for f in todo)
        return todo

    def _gzip(self, f: Path) -> str | None:
        """Why a .gz file cannot be read, or None (its decompressed size noted)."""
        try:
            self.unpacked[f] = _streaming.decompressed_size(f)
        except TooLarge as exc:
            return f"{exc} (a gzip bomb?)"
        except (OSError, EOFError, gzip.BadGzipFile) as exc:
            return f"not a readable gzip file ({type(exc).__name__}: {exc})"
        return None

    def _skip(self, f: Path, why: str) -> None:
        self.report.problems.append(Problem(str(f), "-", "-", f"{why}; file skipped"))
        self.report.skipped += 1
        self.report.paths.remove(str(f))

    def read_logs(self, todo: list[Path]) -> None:
        """Log records first, so each span decodes with the content they carry for it (sources/logs.py)."""
        _logs.start(self.con)
        genai.start(self.con)
        self.logs_read = {f for f in todo if _logs.has_logs(_head(f))}
        for planned in _batches(sorted(self.logs_read), self.sizes):
            _count_logs(self.report, _logs.read(self.con, [duckdb_path(str(f)) for f in planned], MAX_LINE_BYTES))

    def read(self, batch: list[Path]) -> None:
        """One batch: its spans stored, then each file checked whole (its long or bad lines read or named) and
        recorded in ingested_files, and the batch's spans the analyzer cannot use named."""
        con, report, sizes = self.con, self.report, self.sizes
        grown = [str(f) for f in batch if str(f) in self.seen]  # read before at another size: count what was there
        before = _read_lines(con, grown) if grown else {}
        with _reporting(con, self.progress, self.done, sum(sizes[f] for f in batch), self.total):
            batch = self._stored(batch)
        names = [str(f) for f in batch]
        read = _read_lines(con, names, "t_batch")
        stored = _read_lines(con, names)
        for f in batch:
            lines, spans, bad = _settle(
                con, f, sizes[f], read, stored, before, report, self.unpacked.get(f), self.logs_read
            )
            con.execute(
                "INSERT INTO ingested_files VALUES (?, ?, ?, ?, ?, ?)",
                [str(f), sizes[f], lines, spans, bad, dt.datetime.now(dt.UTC).replace(tzinfo=None)],
            )
            self.done += sizes[f]
            report.bytes += sizes[f]
            report.files += 1
        span_problems = _span_problems(con, names)
        report.problems.extend(span_problems)
        # an unreadable stage is named, not skipped: its span stays and its claims are not_evaluable
        report.skipped += sum(1 for p in span_problems if p.field != CL_ADAPTER_ERROR)
        if self.progress:
            self.progress(self.done, self.total)

    def _stored(self, batch: list[Path]) -> list[Path]:
        """``batch`` parsed and its new spans stored; the files that were. A batch too large for DuckDB's memory
        limit is read a file at a time (a file that still does not fit is named and skipped); a gzip file that
        breaks off fails its whole batch: it is named and the rest read."""
        report = self.report
        try:
            report.spans_added += _read_batch(self.con, [str(f) for f in batch], LINE_BYTES)
        except duckdb.OutOfMemoryException as exc:
            kept = _one_by_one(self.con, batch, exc, report)
            self.done += sum(self.sizes[f] for f in batch if f not in kept)
            return kept
        except duckdb.Error:
            broken = {f: why for f in batch if f.suffix == ".gz" and (why := broken_gzip(f)) is not None}
            if not broken:
                raise
            for f, why in broken.items():
                self._skip(f, why)
                self.done += self.sizes[f]
            batch = [f for f in batch if f not in broken]
            if batch:
                report.spans_added += _read_batch(self.con, [str(f) for f in batch], LINE_BYTES)
        return batch

    def finish(self, spool: _lake.Spool | None) -> IngestReport:
        """Log records read after their spans joined to them, what no span took named, objects named by their URL;
        the report's skipped count is the one its problems give."""
        con, report = self.con, self.report
        if report.log_content:
            _rejoin_late_logs(con, report)
            report.problems.extend(_logs.orphans(con, report.paths))
        report.problems.extend(genai.problems(con))
        con.execute("DROP TABLE IF EXISTS t_batch")
        if spool is not None:
            spool.record(con, report)
        report.skipped = sum(p.skipped for p in report.problems)  # one count, the same as the lines that say so
        return report


def _head(path: Path) -> bytes:
    """The first 64 KiB of a file (decompressed), b'' when it cannot be read."""
    try:
        if path.suffix == ".gz":
            with gzip.open(path, "rb") as f:
                return f.read(SNIFF_BYTES)
        with open(path, "rb") as f:
            return f.read(SNIFF_BYTES)
    except (OSError, EOFError, gzip.BadGzipFile):
        return b""


def _count_logs(report: IngestReport, found: _logs.LogsRead) -> None:
    report.log_records += found.records
    report.log_content += found.content


def _rejoin_late_logs(con: duckdb.DuckDBPyConnection, report: IngestReport) -> None:
    """Spans stored before the log records with their content were read (a later batch, a log line past a
    file's first 64 KiB, a file that grew, an earlier ingest) are decoded again from their files, now with
    it. A span whose file cannot be read again is named."""
    stale = _logs.stale_spans(con)
    if not stale:
        return
    files = sorted({source for source, _t, _s in stale})
    readable = [f for f in files if Path(f).is_file()]
    for source, trace_id, span_id in stale:
        if source not in readable:
            report.problems.append(
                Problem(
                    source,
                    f"trace {trace_id} span {span_id}",
                    "logRecords",
                    "log records with this span's content were read after the span was stored, and its file cannot "
                    "be read again: the span is kept without that content (ingest the logs with their spans)",
                    skipped=False,
                )
            )
    redo = [(s, t, i) for s, t, i in stale if s in readable]
    if not redo:
        return
    con.execute("CREATE OR REPLACE TEMP TABLE t_stale (source_file VARCHAR, trace_id VARCHAR, span_id VARCHAR)")
    con.executemany("INSERT INTO t_stale VALUES (?, ?, ?)", redo)
    con.execute(
        f"DELETE FROM {target(con, 'spans')} AS s USING t_stale AS t "
        "WHERE s.trace_id = t.trace_id AND s.span_id = t.span_id"
    )
    con.execute("DROP TABLE t_stale")
    for f in readable:
        shape = measure(Path(f), MAX_LINE_BYTES)
        _read_batch(con, [duckdb_path(f)], max(LINE_BYTES, shape.longest_readable + 1))


def _one_by_one(con: duckdb.DuckDBPyConnection, batch: list[Path], exc: Exception, report: IngestReport) -> list[Path]:
    """Read each file of a batch that ran out of memory alone; the files that were read."""
    kept = []
    for f in batch:
        try:
            report.spans_added += _read_batch(con, [str(f)], LINE_BYTES)
        except duckdb.OutOfMemoryException as alone:
            why = str(alone).splitlines()[0][:160]
            report.problems.append(
                Problem(str(f), "-", "-", f"could not be read within the memory limit ({why}); file skipped")
            )
            report.skipped += 1
            report.paths.remove(str(f))
            continue
        kept.append(f)
    if len(batch) > 1 and not kept:
        raise exc
    return kept


# a span read more than once in one batch (checking costs ~1% of the parse; dropping the
# repeats with a window over every row cost 30%, so it runs only when there are any)
_REPEATS = "SELECT count(*) - count(DISTINCT (trace_id, span_id)) FROM t_batch"


def _write(con: duckdb.DuckDBPyConnection, name: str) -> duckdb.DuckDBPyConnection:
    """Run the query file ``name``, whose one statement begins ``INSERT INTO <table>``, into the store's own
    table (a view stands in front of it when the store holds partitioned runs: store.views)."""
    text = sql(name)
    table = re.search(r"^INSERT INTO (\w+)", text, re.M)
    assert table is not None, name
    return con.execute(text.replace(table.group(0), f"INSERT INTO {target(con, table.group(1))}", 1))


_DROP_REPEATS = "DELETE FROM t_batch WHERE rowid NOT IN (SELECT min(rowid) FROM t_batch GROUP BY trace_id, span_id)"


def _read_batch(con: duckdb.DuckDBPyConnection, files: list[str], max_line: int) -> int:
    """Parse ``files`` into t_batch, record the files' traces, store each new span once; spans added.

    A span read twice in the batch keeps its first reading; t_batch then no longer holds
    every line, so the files involved take the slow path that counts their lines.
    """
    run(con, "ingest_spans", {"files": [duckdb_path(f) for f in files], "max_line": max_line})
    genai.decode(con)  # GenAI inference spans' messages into prompt and answer (none: one cheap scan)
    genai.note(con)  # those whose content was not captured: named once the ingest ends (genai.problems)
    _write(con, "file_traces")
    repeats = con.execute(_REPEATS).fetchall()[0][0]
    if repeats:
        con.execute(_DROP_REPEATS)
    added = _write(con, "store_spans").fetchall()
    return int(added[0][0]) if added else 0


def _settle(  # noqa: PLR0913 - what one file's reading left, for its ingested_files row
    con: duckdb.DuckDBPyConnection,
    f: Path,
    size: int,
    read: dict[str, tuple[int, int, int]],
    stored: dict[str, tuple[int, int, int]],
    before: dict[str, tuple[int, int, int]],
    report: IngestReport,
    unpacked: int | None,
    logs_read: set[Path],
) -> tuple[int, int, int]:
    """After a batch: was ``f`` read whole? If not, read its long lines or name its bad ones.

    Whole means the lines that gave spans in this batch cover the file's bytes (decompressed, for
    a .gz file: ``unpacked``), also when those spans were already stored from another file. Returns the
    file's lines, the spans this ingest added from it, and the lines skipped. Nothing here holds the
    file in memory: the slow path streams it.
    """
    _spans, lines, covered = read.get(str(f), (0, 0, 0))
    spans = stored.get(str(f), (0, 0, 0))[0]
    earlier = before.get(str(f), (0, 0, 0))[0]  # spans stored from an earlier, shorter version
    ends = _ends(f)
    if _whole(size if unpacked is None else unpacked, lines, covered, ends):
        return lines, spans - earlier, 0
    if f not in logs_read:  # log lines past the first 64 KiB: read them now (their spans are rejoined at the end)
        logs_read.add(f)
        _count_logs(report, _logs.read(con, [duckdb_path(str(f))], MAX_LINE_BYTES))
        _spans, lines, covered = _read_lines(con, [str(f)], "t_batch").get(str(f), (0, 0, 0))
        if _whole(size if unpacked is None else unpacked, lines, covered, ends):
            return lines, spans - earlier, 0
    shape = measure(f, MAX_LINE_BYTES)  # the slow path: the longest line, streamed
    long_why = None
    if shape.longest_readable > LINE_BYTES:  # long lines: this file again, alone
        limit = shape.longest_readable + 1
        try:
            report.spans_added += _read_batch(con, [str(f)], limit)
        except duckdb.Error as exc:  # a line too large for the memory limit: the other lines are stored
            long_why = f"{type(exc).__name__}: {str(exc).splitlines()[0][:160]}"
        else:
            _spans, lines, covered = _read_lines(con, [str(f)], "t_batch").get(str(f), (0, 0, 0))
            spans = _read_lines(con, [str(f)]).get(str(f), (0, 0, 0))[0]
            if _whole(shape.size, lines, covered, ends):
                return lines, spans - earlier, 0
    read_lines = {
        (int(h), int(b))
        for h, b in con.execute(
            "SELECT DISTINCT line_hash, line_bytes FROM spans WHERE source_file = $f "
            "UNION SELECT DISTINCT line_hash, line_bytes FROM t_batch WHERE source_file = $f "
            "UNION SELECT DISTINCT line_hash, line_bytes FROM t_log_lines WHERE source_file = $f",
            {"f": str(f)},
        ).fetchall()
    }

    def was_read(line: bytes) -> bool:
        text = line.decode("utf-8", "replace")
        (h,) = con.execute("SELECT hash($t)", {"t": text}).fetchall()[0]
        return (int(h), len(line)) in read_lines

    count, found = _diagnose(f, long_why, was_read)  # some line gave no span: name each bad one
    report.problems.extend(found)
    report.skipped += len(found)
    return count, spans - earlier, len(found)


_SPAN_ID = re.compile(rb'"spanId"\s*:\s*"([^"]*)"')


def _lines_of(path: str, span_ids: set[str]) -> dict[str, str]:
    """The line holding each of ``span_ids`` in one streamed pass over the file (only files with
    problem spans are read, each once however many problems it has)."""
    return _streaming.line_numbers(
        Path(path),
        span_ids,
        lambda line: (m.group(1).decode("utf-8", "replace").lower() for m in _SPAN_ID.finditer(line)),
    )


def _span_problems(con: duckdb.DuckDBPyConnection, files: list[str]) -> list[Problem]:
    """Spans of an unknown schema version, or missing what their stage needs."""
    rows = run(con, "span_problems", {"files": files, "known": SCHEMA_VERSIONS}).fetchall()
    wanted: dict[str, set[str]] = {}
    for row in rows:
        wanted.setdefault(row[0], set()).add(row[2])
    where = {source: _lines_of(source, ids) for source, ids in wanted.items()}
    out: list[Problem] = []
    for source, trace_id, span_id, stage, version, fld, unknown, adapter_error in rows:
        place = f"{where[source].get(span_id, 'line ?')} (trace {trace_id} span {span_id})"
        if fld == CL_ADAPTER_ERROR and not unknown:
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
        out.append(Problem(source, place, fld, message, skipped=fld != CL_ADAPTER_ERROR or unknown))
    return out
