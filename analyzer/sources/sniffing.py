"""Is a file a trace file at all? A look at the start of its lines, before DuckDB reads it: someone
else's file is one problem, not one per line, and a bad first line never costs the good ones. And after
it read one: each line it could not read, named (:func:`diagnose`)."""

from __future__ import annotations

import gzip
from collections.abc import Callable
from pathlib import Path
from typing import IO

import orjson

from citeline.analyzer import streaming as _streaming
from citeline.analyzer.problems import Problem

SNIFF_BYTES = 64 * 1024
BOM = b"\xef\xbb\xbf"


def not_trace_file(path: Path) -> str | None:
    """Why ``path`` cannot be a trace file, or None. Looks at the start of its lines, one after another
    (a gzip file truncated further on is found when its batch fails: :func:`_broken_gzip`).

    A file is judged line by line: one in which no line starts an OTLP request is someone else's
    file (one problem, not one per line); any other file is read, and each line that is not a trace
    is named on its own, so a bad first line (junk, or nested deeper than any parser goes and longer
    than the first 64 KiB) never costs the good lines after it."""
    try:
        if path.suffix == ".gz":
            if path.stat().st_size == 0:
                return "an empty .gz file (zero bytes), not gzip data"
            with gzip.open(path, "rb") as f:
                return _no_trace_line(f)
        with open(path, "rb") as f:
            return _no_trace_line(f)
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        return f"not a readable gzip file ({type(exc).__name__}: {exc})"


def not_trace_head(f: IO[bytes]) -> str | None:
    """Why the (uncompressed) file open at its start as ``f`` cannot be a trace file, or None: what
    :func:`not_trace_file` says of a file, for one read in byte ranges (local or in object storage)."""
    return _no_trace_line(f)


_SNIFF_LINES = 64  # lines looked at before a file is called someone else's
_SNIFF_BUDGET = 64 * 1024 * 1024  # bytes read at most to find them (a few huge lines)
_MARKS = (b'"resourceSpans"', b'"resourceLogs"')  # what starts an OTLP trace or logs request


def _no_trace_line(f: IO[bytes] | gzip.GzipFile) -> str | None:
    """None when one of the first lines starts (within its first 64 KiB) an OTLP trace request."""
    head = f.read(SNIFF_BYTES).removeprefix(BOM)
    if not head.strip():
        return None  # empty or blank: nothing to read, nothing wrong
    if any(mark in head for mark in _MARKS):
        return None  # the common case: a trace line at the start
    lines, read, start, window = 0, len(head), b"", head
    # past the first 64 KiB: each line's own first 64 KiB, line after line
    while lines < _SNIFF_LINES and read <= _SNIFF_BUDGET:
        end = window.find(b"\n")
        if end < 0:
            if len(start) < SNIFF_BYTES:
                start += window[: SNIFF_BYTES - len(start)]
                if any(mark in start for mark in _MARKS):
                    return None
            window = f.read(1024 * 1024)
            read += len(window)
            if not window:
                break
            continue
        start += window[: max(0, min(end, SNIFF_BYTES - len(start)))]
        if any(mark in start for mark in _MARKS):
            return None
        lines += 1
        start, window = b"", window[end + 1 :]
    return (
        "not a trace file: none of its first lines is an OTLP ExportTraceServiceRequest (resourceSpans) "
        "or ExportLogsServiceRequest (resourceLogs)"
    )


def broken_gzip(path: Path) -> str | None:
    """Why a .gz file cannot be read to its end (truncated, corrupt), or None. Read only after a
    batch failed: a healthy run decompresses each file once, in DuckDB."""
    try:
        with gzip.open(path, "rb") as f:
            while f.read(16 * 1024 * 1024):
                pass
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        return f"not a readable gzip file ({type(exc).__name__}: {exc})"
    return None


def not_utf8(line: bytes) -> bool:
    try:
        line.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


def diagnose(
    path: Path,
    hold: int,
    longest: int,
    long_why: str | None = None,
    was_read: Callable[[bytes], bool] = lambda _line: False,
) -> tuple[int, list[Problem]]:
    """Lines in ``path``, and every line of it DuckDB could not read, named: truncated JSON, binary
    junk, wrong shape, too long (over ``longest`` bytes). Streamed: one line in memory at a time, a line
    held whole up to ``hold`` bytes. ``long_why`` says why the lines over ``hold`` could not be read, when
    reading them alone failed (the memory limit)."""
    problems: list[Problem] = []
    count = 0
    for n, raw, length in _streaming.lines(path, hold=hold):
        count = n
        if raw is None:
            if length > longest:
                why = f"longer than the {longest:,} citeline reads"
            elif long_why:
                why = f"could not be read within the memory limit ({long_why})"
            else:
                why = "gave no span: not valid OTLP JSON"
            problems.append(
                Problem(
                    str(path),
                    f"line {n}",
                    "-",
                    f"line of {length:,} bytes {why}; line skipped "
                    "(write smaller batches: one trace or a few thousand spans per line)",
                )
            )
            continue
        if not raw.strip():
            continue
        line = (raw.removeprefix(BOM) if n == 1 else raw).removesuffix(b"\r")
        try:
            doc = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            if was_read(line):  # DuckDB read it (orjson refuses what it nests deeper than 1024, say)
                continue
            kind = "not UTF-8 text (binary junk?)" if b"\x00" in line or not_utf8(line) else "invalid JSON"
            problems.append(Problem(str(path), f"line {n}", "-", f"{kind}: {exc}; line skipped"))
            continue
        if (not isinstance(doc, dict) or ("resourceSpans" not in doc and "resourceLogs" not in doc)) and not was_read(
            line
        ):
            problems.append(
                Problem(
                    str(path),
                    f"line {n}",
                    "resourceSpans",
                    "not an OTLP ExportTraceServiceRequest; line skipped",
                )
            )
    return count, problems
