"""A large trace file read in line-aligned byte ranges, each by its own map task (docs/scale-out.md, "Large files").

A range ``[start, end)`` of a file owns every line that *starts* in it: its reader seeks to ``start - 1``,
skips to the next newline (unless ``start`` is 0) and copies lines while their first byte is before ``end``,
the last one to its newline (or the end of the file). The ranges of a file therefore give each of its lines
exactly once, whatever the cut points, the line lengths, CRLF line ends or a last line without its newline.

Each range is copied to a local file of the worker's and ingested as a file (every check ``ingest`` makes),
then recorded under the file's own name (path or URL): spans, ``file_traces``, log records and problems. A
problem on a line names the file's true line number: the newlines before the range are counted only then (a
streamed count of the bytes before it; bad lines are rare, so a range without one reads only its own bytes).
A ``.gz`` file is never split (a gzip stream cannot be entered mid-way); nor is one at or under the threshold.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import duckdb

from citeline.analyzer.problems import Problem
from citeline.analyzer.sources import lake as _lake
from citeline.analyzer.sources.ingest import IngestReport, ingest
from citeline.analyzer.sources.sniffing import not_trace_head

#: a file larger than this is read in ranges of about this size, each by a map task (``--split-bytes``)
SPLIT_BYTES = 64 * 1024 * 1024
_BLOCK = 1024 * 1024
NEWLINE = b"\n"


def splittable(path: str, size: int, split: int) -> bool:
    """Whether ``path`` is read in ranges: larger than ``split`` bytes and not gzip."""
    return size > split > 0 and not path.lower().endswith(".gz")


def cut(size: int, split: int) -> list[tuple[int, int]]:
    """``[0, size)`` cut into ranges of at most ``split`` bytes, of about equal length."""
    n = max(1, -(-size // max(1, split)))
    return [(i * size // n, (i + 1) * size // n) for i in range(n)]


@contextlib.contextmanager
def open_source(path: str) -> Iterator[IO[bytes]]:
    """The file (a local path or an object-storage URL) for reading bytes at any offset."""
    if _lake.is_url(path):
        with _lake.open_object(path) as f:
            yield f
    else:
        with open(path, "rb") as f:
            yield f


def _first_line_start(f: IO[bytes], start: int) -> int:
    """The first byte of the first line that starts at or after ``start`` (the file's size when none does)."""
    if start == 0:
        return 0
    f.seek(start - 1)
    pos = start - 1
    while block := f.read(_BLOCK):
        at = block.find(NEWLINE)
        if at >= 0:
            return pos + at + 1
        pos += len(block)
    return pos


def copy_range(f: IO[bytes], start: int, end: int, out: IO[bytes]) -> tuple[int, int]:
    """Copy the lines that start in ``[start, end)`` of ``f`` to ``out``, streamed; (first byte, bytes copied)."""
    first = _first_line_start(f, start)
    if first >= end:
        return first, 0
    f.seek(first)
    pos, copied = first, 0
    while block := f.read(_BLOCK):
        if pos + len(block) < end:  # wholly before the range's last byte: every line in it starts before end
            out.write(block)
            copied += len(block)
            pos += len(block)
            continue
        # the line holding byte end - 1 is the last one owned: up to and with its newline
        at = block.find(NEWLINE, max(0, end - 1 - pos))
        if at >= 0:
            out.write(block[: at + 1])
            return first, copied + at + 1
        out.write(block)
        copied += len(block)
        pos += len(block)
    return first, copied


def lines_before(path: str, offset: int) -> int:
    """How many newlines the file has before byte ``offset`` (a streamed count)."""
    count, left = 0, offset
    with open_source(path) as f:
        while left > 0 and (block := f.read(min(_BLOCK, left))):
            count += block.count(NEWLINE)
            left -= len(block)
    return count


@dataclass
class Piece:
    """One range of a file as a map task read it."""

    path: str  # the file's own name: a local path or a URL
    start: int
    end: int
    first: int = 0  # the byte its first owned line starts at
    local: Path | None = None  # the copy ingested (None: no line starts in the range, or it was not read)
    bytes: int = 0
    why: str | None = None  # why the file is not read at all (not a trace file), or why the range could not be
    not_trace: bool = False  # the file's own head says it is not a trace file (named once, by its first range)


def _read(path: str, start: int, end: int, into: Path) -> Piece:
    piece = Piece(path, start, end)
    name = path.rsplit("/", 1)[-1]
    try:
        with open_source(path) as f:
            piece.why = not_trace_head(f)  # the file's own head, as ingest sniffs a whole file
            if piece.why is not None:
                piece.not_trace = True
                return piece
            into.mkdir(parents=True, exist_ok=True)
            local = into / name
            with open(local, "wb") as out:
                piece.first, piece.bytes = copy_range(f, start, end, out)
    except (OSError, ValueError) as exc:
        piece.why = _lake.why(exc) if _lake.is_url(path) else f"could not be read ({type(exc).__name__}: {exc})"
        return piece
    piece.local = local if piece.bytes else None
    return piece


_LINE = re.compile(r"^line (\d+)")


def ingest_ranges(
    con: duckdb.DuckDBPyConnection, files: Sequence[str], ranges: Sequence[tuple[int, int] | None], scratch: Path
) -> tuple[IngestReport, list[dict[str, Any]]]:
    """``ingest`` of ``files``, each whole (range None) or the lines that start in its byte range, into ``con``.

    Everything a range gave is recorded under its file's own name; the report counts whole files only (the
    driver counts a split file once, when all its ranges are in), and each range comes back as a row: its
    file, range, lines, spans and bad lines, and whether the file was read at all."""
    pieces = [
        _read(f, r[0], r[1], scratch / f"range-{n:05d}")
        for n, (f, r) in enumerate(zip(files, ranges, strict=True))
        if r
    ]
    whole = [f for f, r in zip(files, ranges, strict=True) if r is None]
    copies = [p for p in pieces if p.local is not None]
    report = ingest(con, [*whole, *(str(p.local) for p in copies)], unsniffed={str(p.local) for p in copies})
    local = {str(p.local): p for p in copies}
    _rename(con, report, local)
    rows = []
    counted = {
        str(path): (int(lines), int(spans), int(bad), at)
        for path, _size, lines, spans, bad, at in con.execute(
            "SELECT * FROM ingested_files WHERE list_contains($l, path)", {"l": list(local)}
        ).fetchall()
    }
    recorded = set(counted)
    con.execute("DELETE FROM ingested_files WHERE list_contains($l, path)", {"l": list(local)})
    for p in pieces:
        lines, spans, bad, at = counted.pop(str(p.local), (0, 0, 0, None))
        rows.append(
            {"path": p.path, "start": p.start, "end": p.end, "lines": lines, "spans": spans, "bad": bad, "at": at}
            | {"read": p.why is None, "why": p.why}
        )
        if p.not_trace and p.start == 0:  # the file is named once, by its first range's task
            report.problems.append(Problem(p.path, "-", "-", f"{p.why}; file skipped"))
        elif p.why is not None and not p.not_trace:  # this range could not be read: named with its bytes
            report.problems.append(Problem(p.path, f"bytes {p.start}-{p.end}", "-", f"{p.why}; range skipped"))
        elif p.why is None and p.local is None:  # a range where no line starts: read, nothing in it
            report.paths.append(p.path)
    read = [p for p in copies if str(p.local) in recorded]  # the copies ingest read (and counted as files)
    report.files -= len(read)
    report.bytes -= sum(p.bytes for p in read)
    report.paths = sorted(set(report.paths))
    report.skipped = sum(x.skipped for x in report.problems)
    return report, rows


def _rename(con: duckdb.DuckDBPyConnection, report: IngestReport, local: dict[str, Piece]) -> None:
    """Each range's copy recorded under its file's own name; a problem on a line names its true line number."""
    if not local:
        return
    con.execute("CREATE OR REPLACE TEMP TABLE t_ranges (local VARCHAR, path VARCHAR)")
    con.executemany("INSERT INTO t_ranges VALUES (?, ?)", [(k, p.path) for k, p in local.items()])
    for table, column in (
        ("spans", "source_file"),
        ("file_traces", "source_file"),
        ("logs", "source_file"),
    ):  # names from this module, never user input
        con.execute(f"UPDATE {table} AS o SET {column} = r.path FROM t_ranges AS r WHERE o.{column} = r.local")
    con.execute("DROP TABLE t_ranges")
    before: dict[str, int] = {}
    for i, x in enumerate(report.problems):
        piece = local.get(x.source)
        if piece is None:
            continue
        place, message = x.place, x.message.replace(x.source, piece.path)
        if m := _LINE.match(place):
            if x.source not in before:
                before[x.source] = lines_before(piece.path, piece.first)
            place = f"line {int(m.group(1)) + before[x.source]}{place[m.end() :]}"
        report.problems[i] = Problem(piece.path, place, x.field, message, x.skipped)
    report.paths = [local[p].path if p in local else p for p in report.paths]
