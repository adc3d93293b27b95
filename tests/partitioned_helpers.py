"""What the partitioned-run tests compare a partitioned run with the single run by (tests/test_partitioned*.py):
the run's tables row for row, its coverage and problems, the files it recorded; and the trace layouts they feed
both (the demo's lines scattered the way a Collector writes them, a large file with bad lines)."""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path
from typing import Any

import duckdb

from citeline.analyzer.run.analyze import analyze
from citeline.analyzer.run.result import AnalysisResult
from citeline.analyzer.scaleout.partitioned import analyze_partitioned
from citeline.analyzer.store import connect
from citeline.examples.demo import gold_path

#: every table a run writes, beside claim_results and case_results
RUN_TABLES = (
    "unmatched_traces",
    "missing_cases",
    "run_skipped_text",
    "run_support",
    "run_span_chunks",
    "run_feedback",
    "run_chunks",
    "human_labelled",
)


def spans_of(lines: list[bytes]) -> list[tuple[Any, Any, dict[str, Any]]]:
    """Every span of the lines with the resource and scope it was written under."""
    out: list[tuple[Any, Any, dict[str, Any]]] = []
    for line in lines:
        doc = json.loads(line)
        for rs in doc["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                out.extend((rs.get("resource", {}), ss.get("scope", {}), span) for span in ss["spans"])
    return out


def scatter(lines: list[bytes], root: Path, files: int, seed: int) -> Path:
    """The spans rewritten as a Collector might: batches of 1-4 spans per line in shuffled order, the
    lines dealt over ``files`` files (every other one gzipped), so a trace's spans sit on several lines
    and often in several files."""
    rng = random.Random(seed)
    spans = spans_of(lines)
    rng.shuffle(spans)
    out: list[list[bytes]] = [[] for _ in range(files)]
    i = 0
    while i < len(spans):
        batch = spans[i : i + rng.randint(1, 4)]
        i += len(batch)
        doc = {"resourceSpans": [{"resource": r, "scopeSpans": [{"scope": s, "spans": [sp]}]} for r, s, sp in batch]}
        out[rng.randrange(files)].append(json.dumps(doc).encode())
    folder = root / "traces"
    folder.mkdir(parents=True)
    for n, body in enumerate(out):
        data = b"\n".join(body) + b"\n" if body else b""
        if n % 2:
            (folder / f"part-{n:03d}.jsonl.gz").write_bytes(gzip.compress(data))
        else:
            (folder / f"part-{n:03d}.jsonl").write_bytes(data)
    return folder


def write_lines(lines: list[bytes], root: Path) -> Path:
    folder = root / "traces"
    folder.mkdir(parents=True)
    (folder / "traces.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    return folder


def rows_of(db: Path, table: str, run_id: str) -> Any:
    con = connect(db, read_only=True)  # as every reader opens a store: a partitioned run's files seen through it
    try:
        return con.execute(f"SELECT * EXCLUDE (run_id) FROM {table} WHERE run_id = $r", {"r": run_id}).fetchall()
    finally:
        con.close()


def read_rows(db: Path, select: str, params: dict[str, Any] | None = None) -> Any:
    """The rows of ``select`` as an Arrow table, read as every reader opens a store (``store.connect``: a
    partitioned run's Parquet files seen through its views)."""
    con = connect(db, read_only=True)
    try:
        return con.sql(select, params=params or {}).to_arrow_table()
    finally:
        con.close()


def except_all(one: Path, run_one: str, two: Path, run_two: str, table: str) -> tuple[int, int]:
    """Rows of ``table`` in one run and not the other, both ways (EXCEPT ALL: duplicates count)."""
    q = f"SELECT * EXCLUDE (run_id) FROM {table} WHERE run_id = $r"
    return except_all_of(read_rows(one, q, {"r": run_one}), read_rows(two, q, {"r": run_two}))


def except_all_of(a_rows: Any, b_rows: Any) -> tuple[int, int]:
    con = duckdb.connect()
    try:
        con.register("a_rows", a_rows)
        con.register("b_rows", b_rows)
        a, b = "SELECT * FROM a_rows", "SELECT * FROM b_rows"
        left = con.execute(f"SELECT count(*) FROM ({a} EXCEPT ALL {b})").fetchall()[0][0]
        right = con.execute(f"SELECT count(*) FROM ({b} EXCEPT ALL {a})").fetchall()[0][0]
        return int(left), int(right)
    finally:
        con.close()


def problems_of(db: Path, run_id: str) -> list[tuple[Any, ...]]:
    con = connect(db, read_only=True)
    try:
        return sorted(
            con.execute(
                "SELECT source, place, field, message FROM input_problems WHERE run_id = $r", {"r": run_id}
            ).fetchall()
        )
    finally:
        con.close()


def assert_same_run(single: AnalysisResult, one: Path, part: AnalysisResult, two: Path) -> None:
    """The partitioned run is the single run, row for row, with the same coverage and problems."""
    for table in ("claim_results", "case_results"):
        assert except_all(one, single.run_id, two, part.run_id, table) == (0, 0), table
    for table in RUN_TABLES:
        assert sorted(rows_of(one, table, single.run_id), key=repr) == sorted(
            rows_of(two, table, part.run_id), key=repr
        ), table
    assert part.summary == single.summary
    cov_a, cov_b = single.coverage, part.coverage
    assert {**cov_b, "unmatched": sorted(map(repr, cov_b["unmatched"]))} == {
        **cov_a,
        "unmatched": sorted(map(repr, cov_a["unmatched"])),
    }
    assert sorted(part.problems()) == sorted(single.problems())
    assert problems_of(two, part.run_id) == problems_of(one, single.run_id)
    assert (part.skipped, part.skipped_text, part.warnings) == (single.skipped, single.skipped_text, single.warnings)
    assert part.traces_read == single.traces_read
    assert part.engine["failed_partitions"] == []
    # the store holds what ingest would have stored: every span, and each file's traces
    for table in ("spans", "file_traces"):
        q = f"SELECT * FROM {table}"
        assert except_all_of(read_rows(one, q), read_rows(two, q)) == (0, 0), table


def assert_same_files(one: Path, two: Path) -> None:
    """Each file recorded once, whole, as one process records it (a file read in byte ranges too): its size,
    lines, spans and bad lines; a file held at its size is skipped by the next run."""
    q = "SELECT path, size, lines, spans_added, skipped FROM ingested_files ORDER BY path"
    assert read_rows(two, q).to_pylist() == read_rows(one, q).to_pylist()


def big_file(lines: list[bytes], folder: Path, crlf: bool = False) -> Path:
    """The demo's lines, the first four in a .gz file (read whole: never split), the others in one plain file
    with a blank line after its 3rd, a bad line after its 7th (its line 9) and its last line without a newline."""
    rest = lines[4:]
    body = [*rest[:3], b"", *rest[3:7], b'{"resourceSpans": [{"scopeSpans": [', *rest[7:]]
    end = b"\r\n" if crlf else b"\n"
    folder.mkdir(parents=True)
    (folder / "big.jsonl").write_bytes(end.join(body))
    (folder / "again.jsonl.gz").write_bytes(gzip.compress(end.join(lines[:4]) + end))
    return folder


def both(
    traces: Path, tmp: Path, dask_client: Any, gold: Path | None = None, **kw: Any
) -> tuple[AnalysisResult, Path, AnalysisResult, Path]:
    one, two = tmp / "single.duckdb", tmp / "partitioned.duckdb"
    single = analyze(one, gold=gold or gold_path(), traces=[traces])
    part = analyze_partitioned(two, gold=gold or gold_path(), traces=[traces], client=dask_client, **kw)
    return single, one, part, two
