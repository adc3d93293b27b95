"""Files read as streams: however large a file or a line, memory holds a chunk and one line.

Trace files and gold JSONL files come from other people's systems. Everything that reads them
line by line goes through :func:`lines`; a .gz file is decompressed as it is read, up to
``MAX_DECOMPRESSED_BYTES`` (a gzip bomb is named, never expanded into memory).
"""

from __future__ import annotations

import gzip
from collections.abc import Callable, Hashable, Iterable, Iterator, Set
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

NEWLINE = b"\n"
#: the longest line a re-read gives to DuckDB (longer ones are named, never parsed)
MAX_LINE_BYTES = 256 * 1024 * 1024
#: a .gz file is read while it decompresses to at most this many bytes; past it, it is named and
#: skipped (a gzip bomb: 2 MB can decompress to gigabytes). Reading never holds the whole file.
MAX_DECOMPRESSED_BYTES = 4 * 1024**3
_CHUNK = 1024 * 1024


class TooLarge(Exception):
    """A file decompresses past MAX_DECOMPRESSED_BYTES."""


def open_file(path: Path) -> Any:
    return gzip.open(path, "rb") if path.suffix == ".gz" else open(path, "rb")


def chunks(path: Path, cap: int | None = None) -> Iterator[bytes]:
    """The file's (decompressed) bytes, a chunk at a time; TooLarge past ``cap`` (MAX_DECOMPRESSED_BYTES)."""
    cap = MAX_DECOMPRESSED_BYTES if cap is None else cap
    read = 0
    with open_file(path) as f:
        while chunk := f.read(_CHUNK):
            read += len(chunk)
            if read > cap:
                raise TooLarge(f"decompresses past {cap:,} bytes, the most citeline reads from one file")
            yield chunk


def lines(path: Path, hold: int) -> Iterator[tuple[int, bytes | None, int]]:
    """(line number, the line or None when longer than ``hold`` bytes, its length), streamed: at most
    one line of up to ``hold`` bytes is in memory, however long the lines or the file."""
    n, parts, length = 1, list[bytes](), 0
    for chunk in chunks(path):
        start = 0
        while (end := chunk.find(NEWLINE, start)) >= 0:
            piece = chunk[start:end]
            length += len(piece)
            line = b"".join([*parts, piece]) if length <= hold else None
            yield n, line, length
            n, parts, length, start = n + 1, [], 0, end + 1
        rest = chunk[start:]
        length += len(rest)
        if length <= hold:
            parts.append(rest)
        else:
            parts = []
    if length:  # a last line without its newline
        yield n, (b"".join(parts) if length <= hold else None), length


_K = TypeVar("_K", bound=Hashable)


def line_numbers(path: Path, wanted: Set[_K], keys: Callable[[bytes], Iterable[_K]]) -> dict[_K, str]:
    """``line N`` for each of ``wanted`` that ``keys(line)`` yields on a line of ``path`` (its first such
    line), in one streamed pass that stops once all are found. A line longer than MAX_LINE_BYTES is
    passed over; a file that cannot be read to its end gives what was found before."""
    found: dict[_K, str] = {}
    try:
        for n, line, _length in lines(path, hold=MAX_LINE_BYTES):
            if line is None:
                continue
            for key in keys(line):
                if key in wanted and key not in found:
                    found[key] = f"line {n}"
            if len(found) == len(wanted):
                break
    except (OSError, EOFError, TooLarge, gzip.BadGzipFile):
        pass
    return found


@dataclass(frozen=True)
class Shape:
    """A file as its lines see it: bytes (decompressed), lines, the longest line."""

    size: int
    lines: int
    longest: int
    longest_readable: int = 0  # the longest line of at most max_line bytes: what a re-read can take


def decompressed_size(path: Path) -> int:
    """The bytes ``path`` decompresses to, counted as it decompresses (no line is looked at);
    TooLarge past MAX_DECOMPRESSED_BYTES."""
    return sum(len(c) for c in chunks(path))


def measure(path: Path, max_line: int | None = None) -> Shape:
    """Measured in one streamed pass (a .gz file's decompressed size is known only by reading it)."""
    max_line = MAX_LINE_BYTES if max_line is None else max_line
    size = lines = longest = readable = current = 0
    for chunk in chunks(path):
        size += len(chunk)
        start = 0
        while (end := chunk.find(NEWLINE, start)) >= 0:
            length = current + end - start
            longest = max(longest, length)
            if length <= max_line:
                readable = max(readable, length)
            lines, current, start = lines + 1, 0, end + 1
        current += len(chunk) - start
    if current:
        lines += 1
        longest = max(longest, current)
        if current <= max_line:
            readable = max(readable, current)
    return Shape(size, lines, longest, readable)


__all__ = [
    "MAX_DECOMPRESSED_BYTES",
    "Shape",
    "TooLarge",
    "chunks",
    "decompressed_size",
    "lines",
    "measure",
    "open_file",
]
