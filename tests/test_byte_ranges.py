"""A large trace file read in line-aligned byte ranges (issue #38 item 5; analyzer/sources/byte_ranges.py).

No cluster here: the ranges' reader on its own (Hypothesis over cut points, line lengths, CRLF, empty lines,
a last line without its newline), and the ranges ingested one by one into real DuckDBs against the whole
file ingested once: the same spans, the same lines counted, the same problems at the same true line numbers.
The cluster and object-storage runs are in tests/test_partitioned.py.
"""

from __future__ import annotations

import io
import itertools
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench import synth
from citeline.analyzer.sources.byte_ranges import copy_range, cut, ingest_ranges, lines_before, splittable
from citeline.analyzer.sources.ingest import ingest
from citeline.analyzer.store import connect

#: a line: any bytes but the newline, sometimes ending in \r (a CRLF file), sometimes empty
LINE = st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"x")) | st.just(b"") | st.just(b"\r")


def _lines_of(data: bytes) -> list[bytes]:
    """The file's lines as ``streaming.lines`` numbers them: split on the newline, a last line without one."""
    parts = data.split(b"\n")
    return parts[:-1] if parts[-1] == b"" else parts


@settings(max_examples=300, deadline=None)
@given(lines=st.lists(LINE, max_size=30), newline_at_end=st.booleans(), split=st.integers(min_value=1, max_value=80))
def test_the_ranges_of_a_file_give_each_of_its_lines_once(lines: list[bytes], newline_at_end: bool, split: int) -> None:
    data = b"\n".join(lines) + (b"\n" if newline_at_end and lines else b"")
    ranges = cut(len(data), split)
    assert ranges[0][0] == 0 and ranges[-1][1] == len(data)
    assert all(a[1] == b[0] for a, b in itertools.pairwise(ranges))  # contiguous, no gap, no overlap
    assert all(end - start <= split for start, end in ranges)
    got: list[bytes] = []
    numbered: list[tuple[int, bytes]] = []
    for start, end in ranges:
        out = io.BytesIO()
        first, n = copy_range(io.BytesIO(data), start, end, out)
        piece = out.getvalue()
        assert len(piece) == n
        if n:
            assert first == 0 or data[first - 1 : first] == b"\n"  # begins at a line's start
            assert start <= first < end  # and owns it: the line starts in the range
            assert piece.endswith(b"\n") or first + n == len(data)  # ends at a newline or the file's end
            assert data[first : first + n] == piece
            base = data[:first].count(b"\n")
            numbered.extend((base + k + 1, line) for k, line in enumerate(_lines_of(piece)))
        got.append(piece)
    # the union of the ranges is the file, each line once, in order, with its true number
    assert b"".join(got) == data
    assert numbered == list(enumerate(_lines_of(data), start=1))


def test_a_gzip_file_or_one_at_the_threshold_stays_whole() -> None:
    assert splittable("a.jsonl", 101, 100) and splittable("s3://b/k/a.json", 101, 100)
    assert not splittable("a.jsonl.gz", 10**9, 100) and not splittable("s3://b/a.JSON.GZ", 10**9, 100)
    assert not splittable("a.jsonl", 100, 100)
    assert not splittable("a.jsonl", 10**9, 0)  # no threshold: never split


def test_lines_before_counts_the_newlines_before_an_offset(tmp_path: Path) -> None:
    f = tmp_path / "t.jsonl"
    f.write_bytes(b"a\r\n\nbb\nc")
    assert [lines_before(str(f), k) for k in range(9)] == [0, 0, 0, 1, 2, 2, 2, 3, 3]


class Lines(list[bytes]):
    """Lines that Hypothesis names briefly in a failing example (not their 100 kB)."""

    def __repr__(self) -> str:
        return f"<{len(self)} OTLP lines>"


@pytest.fixture(scope="module")
def otlp_lines(tmp_path_factory: pytest.TempPathFactory) -> list[bytes]:
    """Synthetic OTLP/JSON lines (the bench's), a trace a line."""
    folder = tmp_path_factory.mktemp("synth")
    synth.write_traces(folder, 10, per_file=10, distinct=True)
    return Lines(line for f in sorted(folder.iterdir()) for line in f.read_bytes().splitlines() if line.strip())


def _file(lines: list[bytes], crlf: bool, blank_at: list[int], bad_at: int | None, newline_at_end: bool) -> bytes:
    body = list(lines)
    for k in sorted(blank_at, reverse=True):
        body.insert(k % (len(body) + 1), b"")
    if bad_at is not None:
        body.insert(bad_at % (len(body) + 1), b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "trunc')
    end = b"\r\n" if crlf else b"\n"
    return end.join(body) + (end if newline_at_end else b"")


Read = tuple[list[tuple[object, ...]], tuple[int, int, int], list[tuple[str, ...]]]


def _read(path: Path, split: int | None) -> Read:
    """The file ingested whole (``split`` None) or range by range, each range into its own DuckDB as its map
    task would: the spans (each once, the first reading kept), the lines, spans and bad lines counted, and the
    problems."""
    size = path.stat().st_size
    if split is None:
        con = connect(":memory:")
        try:
            report = ingest(con, [path])
            cols = [d[0] for d in con.execute("SELECT * FROM spans LIMIT 0").description]
            by_key = {
                (r[cols.index("trace_id")], r[cols.index("span_id")]): r
                for r in con.execute("SELECT * FROM spans").fetchall()
            }
            spans = [by_key[k] for k in sorted(by_key, key=repr)]
            ((lines, n, bad),) = con.execute("SELECT lines, spans_added, skipped FROM ingested_files").fetchall()
            return spans, (lines, n, bad), sorted((p.source, p.place, p.field, p.message) for p in report.problems)
        finally:
            con.close()
    seen: dict[tuple[object, object], tuple[object, ...]] = {}
    counts = [0, 0, 0]
    problems: list[tuple[str, ...]] = []
    for start, end in cut(size, split):
        con = connect(":memory:")
        try:
            with tempfile.TemporaryDirectory() as scratch:
                report, ranged = ingest_ranges(con, [str(path)], [(start, end)], Path(scratch))
            cols = [d[0] for d in con.execute("SELECT * FROM spans LIMIT 0").description]
            for row in con.execute("SELECT * FROM spans").fetchall():
                key = (row[cols.index("trace_id")], row[cols.index("span_id")])
                seen.setdefault(key, row)
            assert con.execute("SELECT count(*) FROM ingested_files").fetchall() == [(0,)]  # the driver records it
            assert report.paths == [str(path)] and report.files == 0
            [got] = ranged
            assert (got["path"], got["start"], got["end"], got["read"]) == (str(path), start, end, True)
            counts = [counts[0] + got["lines"], counts[1] + got["spans"], counts[2] + got["bad"]]
            problems.extend((p.source, p.place, p.field, p.message) for p in report.problems)
        finally:
            con.close()
    return [seen[k] for k in sorted(seen, key=repr)], (counts[0], counts[1], counts[2]), sorted(problems)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    crlf=st.booleans(),
    blank_at=st.lists(st.integers(min_value=0, max_value=100), max_size=3),
    bad_at=st.none() | st.integers(min_value=0, max_value=100),
    newline_at_end=st.booleans(),
    pieces=st.integers(min_value=2, max_value=6),
)
def test_a_file_read_in_ranges_gives_the_whole_files_spans_lines_and_problems(
    otlp_lines: list[bytes], crlf: bool, blank_at: list[int], bad_at: int | None, newline_at_end: bool, pieces: int
) -> None:
    with tempfile.TemporaryDirectory(prefix="citeline-ranges-") as tmp:
        path = Path(tmp) / "big.jsonl"
        path.write_bytes(_file(otlp_lines, crlf, blank_at, bad_at, newline_at_end))
        whole = _read(path, None)
        split = _read(path, -(-path.stat().st_size // pieces))
    assert whole[0] and split[0] == whole[0]
    assert split[1] == whole[1]
    assert split[2] == whole[2]
    assert len(whole[2]) == (bad_at is not None)


def test_a_bad_line_in_a_later_range_is_named_by_the_file_and_its_true_line_number(
    otlp_lines: list[bytes], tmp_path: Path
) -> None:
    lines = [*otlp_lines[:7], b"{not json", *otlp_lines[7:]]
    path = tmp_path / "big.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    ranges = cut(path.stat().st_size, path.stat().st_size // 3 + 1)
    assert len(ranges) == 3
    named = []
    for r in ranges:
        con = connect(":memory:")
        try:
            report, _rows = ingest_ranges(con, [str(path)], [r], tmp_path / f"scratch-{r[0]}")
            named.extend(report.problems)
        finally:
            con.close()
    [problem] = named
    assert (problem.source, problem.place, problem.field) == (str(path), "line 8", "-")
    assert problem.message.startswith("invalid JSON")


@pytest.mark.parametrize("end", [b"\n", b"\r\n"])
def test_a_blank_line_and_no_newline_at_the_end_count_every_line(
    otlp_lines: list[bytes], tmp_path: Path, end: bytes
) -> None:
    """Found by the property above: a blank line's byte and the missing last newline cancelled out, so the
    file looked read whole and its lines were counted one short (before: 2 of 3, while its ranges said 3)."""
    path = tmp_path / "t.jsonl"
    path.write_bytes(end + end.join(otlp_lines[:2]))
    con = connect(":memory:")
    try:
        report = ingest(con, [path])
        assert con.execute("SELECT lines, spans_added, skipped FROM ingested_files").fetchall() == [
            (3, report.spans_added, 0)
        ]
    finally:
        con.close()
    assert report.problems == [] and report.spans_added > 0


def test_a_file_that_is_no_trace_file_is_named_once_and_an_unreadable_range_by_its_bytes(tmp_path: Path) -> None:
    """Every range sniffs the file's own head: a file that is someone else's is skipped whole, named by its
    first range only; a range that cannot be read (the file gone since it was listed) is named with its bytes."""
    other = tmp_path / "app.log.jsonl"
    other.write_bytes(b"".join(b'{"level": "info", "n": %d}\n' % n for n in range(200)))
    gone = str(tmp_path / "gone.jsonl")
    said: list[tuple[str, str, str]] = []
    for n, r in enumerate(cut(other.stat().st_size, 1000)):
        con = connect(":memory:")
        try:
            report, rows = ingest_ranges(con, [str(other), gone], [r, (0, 10)], tmp_path / f"s{n}")
        finally:
            con.close()
        assert [(x["path"], x["read"]) for x in rows] == [(str(other), False), (gone, False)]
        assert report.paths == [] and report.skipped == len(report.problems)
        said.extend((p.source, p.place, p.message.split(";")[-1]) for p in report.problems)
    ranges = len(cut(other.stat().st_size, 1000))
    assert said.count((str(other), "-", " file skipped")) == 1
    assert said.count((gone, "bytes 0-10", " range skipped")) == ranges
    assert len(said) == ranges + 1
