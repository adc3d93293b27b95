"""Where a partitioned run lives and what reads it (issue #38 items 1-3): its tables as Parquet files every reader
reads as the single run's, a second night that skips the files it holds and joins the spans stored before, the
task graph a map task plus partitions make (not their product), and each attempt of a map task writing its own
pieces.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import duckdb
import pytest

from citeline.analyzer.cli.main import main
from citeline.analyzer.judges import RulesJudge
from citeline.analyzer.run.analyze import analyze
from citeline.analyzer.scaleout.partitioned import analyze_partitioned
from citeline.analyzer.store import connect
from citeline.examples.demo import gold_path
from tests.extras import needs
from tests.partitioned_helpers import (
    assert_same_run,
    both,
    except_all,
    scatter,
    spans_of,
    write_lines,
)

distributed = needs("distributed", "a LocalCluster for --engine dask; also 'citeline[dask]'")

pytestmark = pytest.mark.cluster  # worker processes on loopback: make test-fast leaves them out


def _same_payload(a: Any, b: Any, ids: tuple[str, str]) -> None:
    """``a`` and ``b`` equal once the two runs' ids are one and their start and end times left out (a reader
    that names its run)."""

    def bare(x: Any, run_id: str) -> Any:
        if isinstance(x, dict):
            return {
                k: bare(v, run_id) for k, v in x.items() if k not in ("started_at", "finished_at", "run_started_at")
            }
        if isinstance(x, list):
            return [bare(v, run_id) for v in x]
        return x.replace(run_id, "RUN") if isinstance(x, str) else x

    assert bare(json.loads(json.dumps(a, default=str)), ids[0]) == bare(json.loads(json.dumps(b, default=str)), ids[1])


def test_a_partitioned_run_lives_in_parquet_and_every_reader_reads_it_as_the_single_run(
    dask_client: Any, demo_lines: list[bytes], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from citeline.analyzer.phoenix.annotate import document_annotation_rows
    from citeline.analyzer.phoenix.verdicts import annotation_rows, trace_annotation_rows
    from citeline.analyzer.run.rejudge import rejudge

    traces = write_lines(demo_lines, tmp_path)
    single, one, part, two = both(traces, tmp_path, dask_client, partitions=3)
    assert_same_run(single, one, part, two)
    run_dir = Path(part.engine["location"])
    assert run_dir == (Path(str(two) + ".runs") / part.run_id).resolve()  # the documented default
    manifest = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))
    raw = duckdb.connect(str(two), read_only=True)  # the store file itself, without citeline's views
    try:
        registered = raw.execute("SELECT tbl, path, row_count FROM run_files WHERE run_id = $r", {"r": part.run_id})
        assert sorted(registered.fetchall()) == sorted(
            (t, f["path"], f["rows"]) for t, fs in manifest["tables"].items() for f in fs
        )
        for table in ("spans", "claim_results", "case_results", "file_traces"):  # none of them in the file
            assert raw.execute(f"SELECT count(*) FROM {table}").fetchall() == [(0,)], table
            assert {Path(f["path"]).parent.name for f in manifest["tables"][table]} == {table}
        assert len(manifest["tables"]["claim_results"]) == 3  # one file per partition
    finally:
        raw.close()
    # annotate (what it sends to Phoenix), sample, report, the drill-down HTML, rejudge: the same from both
    cons = [connect(db, read_only=True) for db in (one, two)]
    try:
        for rows in (annotation_rows, trace_annotation_rows, document_annotation_rows):
            _same_payload(rows(cons[0], single.run_id), rows(cons[1], part.run_id), (single.run_id, part.run_id))
    finally:
        for c in cons:
            c.close()
    outs = []
    for db, run in ((one, single.run_id), (two, part.run_id)):
        sheet, html = tmp_path / f"{db.stem}.csv", tmp_path / f"{db.stem}.html"
        assert main(["sample", "--db", str(db), "--run", run, "--n", "30", "--seed", "3", "--out", str(sheet)]) == 0
        main(["report", "--db", str(db), "--run", run, "--format", "html", "--out", str(html)])
        capsys.readouterr()
        main(["report", "--db", str(db), "--run", run, "--format", "json"])
        report = json.loads(capsys.readouterr().out)
        changed = rejudge(db, run, RulesJudge())
        outs.append((sheet.read_text(encoding="utf-8"), html.read_text(encoding="utf-8"), report, changed))
    (s1, h1, r1, j1), (s2, h2, r2, j2) = outs
    assert s1.replace(single.run_id, "RUN") == s2.replace(part.run_id, "RUN") and s1.count("\n") > 20
    _same_payload(r1, r2, (single.run_id, part.run_id))
    assert j1.claims == j2.claims > 0 and j1.changes == j2.changes
    assert _html_rows(h1, single.run_id) == _html_rows(h2, part.run_id)


def _html_rows(html: str, run_id: str) -> list[str]:
    """The drill-down's lines without the run's id and the times it names."""
    import re

    return [
        re.sub(r"\d{4}-\d\d-\d\d[ T]\d\d:\d\d(:\d\d)?(\.\d+)?", "TIME", x.replace(run_id, "RUN"))
        for x in html.splitlines()
    ]


def _traces_of(folder: Path) -> dict[str, set[str]]:
    """Each trace file's trace ids, read here from the lines (hex as the store keeps them)."""
    out: dict[str, set[str]] = {}
    for f in sorted(folder.iterdir()):
        data = gzip.decompress(f.read_bytes()) if f.suffix == ".gz" else f.read_bytes()
        out[f.name] = {sp["traceId"] for line in data.splitlines() if line for _r, _s, sp in spans_of([line])}
    return out


def test_a_second_night_skips_held_files_and_joins_the_spans_stored_earlier(
    dask_client: Any, demo_lines: list[bytes], tmp_path: Path
) -> None:
    """Two nights on one folder: the first has three of six Collector-split files, the second all six. The
    second partitioned run reads only the three new files, joins the traces they share with the first
    night's files to the spans stored then, and gives the single process's second night row for row."""
    every = scatter(demo_lines, tmp_path / "all", files=6, seed=5)
    night = tmp_path / "night" / "traces"
    night.mkdir(parents=True)
    names = sorted(p.name for p in every.iterdir())
    first, second = names[:3], names[3:]
    for n in first:
        (night / n).write_bytes((every / n).read_bytes())
    one, two = tmp_path / "single.duckdb", tmp_path / "partitioned.duckdb"
    kw: dict[str, Any] = {"gold": gold_path(), "traces": [night]}
    s1, p1 = analyze(one, **kw), analyze_partitioned(two, client=dask_client, partitions=4, **kw)
    assert_same_run(s1, one, p1, two)
    assert (p1.engine["skipped_files"], p1.engine["joined_traces"]) == (0, 0)
    for n in second:
        (night / n).write_bytes((every / n).read_bytes())
    s2, p2 = analyze(one, **kw), analyze_partitioned(two, client=dask_client, partitions=4, map_tasks=2, **kw)
    assert_same_run(s2, one, p2, two)
    held = set().union(*(t for n, t in _traces_of(night).items() if n in first))
    new = set().union(*(t for n, t in _traces_of(night).items() if n in second))
    assert s2.ingest.files_skipped_unchanged == p2.engine["skipped_files"] == 3
    assert p2.engine["joined_traces"] == len(new & held) > 0
    assert p2.traces_read == len(new | held)
    assert "3 file(s) held skipped" in (p2.engine_line() or "")
    # a single-process night after a partitioned one reads the partitioned run's files as the store's own
    mixed = tmp_path / "mixed.duckdb"
    for n in second:
        (night / n).unlink()
    analyze_partitioned(mixed, client=dask_client, partitions=4, **kw)
    for n in second:
        (night / n).write_bytes((every / n).read_bytes())
    m2 = analyze(mixed, **kw)
    for table in ("claim_results", "case_results"):
        assert except_all(one, s2.run_id, mixed, m2.run_id, table) == (0, 0), table
    assert m2.ingest.files_skipped_unchanged == 3


def test_the_task_graph_grows_with_map_tasks_plus_partitions_not_their_product(
    dask_client: Any, demo_lines: list[bytes], tmp_path: Path
) -> None:
    """Issue #38, past the driver: map tasks write their span pieces under the run's location and hand back their
    paths, and each partition's reduce reads its own by path, so the scheduler runs a task per map task, per
    partition and the context (3 + 9 + 1 here), not a task per map task per partition beside them (3 x 9). The
    pieces are intermediate: gone once the run is committed, its rows the single run's."""
    traces = scatter(demo_lines, tmp_path, files=4, seed=38)
    with distributed.get_task_stream(client=dask_client) as stream:
        single, one, part, two = both(traces, tmp_path, dask_client, partitions=9, map_tasks=3)
    keys = sorted({str(t["key"]) for t in stream.data})
    assert part.engine["map_tasks"] == 3 and part.engine["partitions"] == 9
    assert len(keys) == 3 + 9 + 1, keys
    assert_same_run(single, one, part, two)
    location = Path(part.engine["location"])
    assert (location / "manifest.json").exists() and not (location / "pieces").exists()


def test_each_attempt_of_a_map_task_writes_its_pieces_apart(
    dask_client: Any, demo_lines: list[bytes], tmp_path: Path
) -> None:
    """A map task run twice (a retry, or its result made again after its worker was lost) writes each attempt's
    pieces in a folder of its own: the driver reads only the paths of the result it took, never a mix."""
    from citeline.analyzer.scaleout import tasks as work

    traces = scatter(demo_lines, tmp_path, files=2, seed=5)
    files = [str(f) for f in sorted(traces.iterdir())]
    out = work.Output(str(tmp_path / "run"), "r1")
    first, second = (
        dask_client.submit(work.map_files, "attempts", 0, files, [0, 1], 4, out, pure=False).result() for _ in range(2)
    )
    assert sorted(first["pieces"]) == sorted(second["pieces"]) and first["pieces"]
    a, b = set(first["pieces"].values()), set(second["pieces"].values())
    assert not a & b and all(Path(p).exists() for p in a | b)
    assert {Path(p).parent.parent for p in a | b} == {tmp_path / "run" / work.PIECES}
