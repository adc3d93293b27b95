"""Partitioned runs on Dask (``analyze --engine dask``) against a real LocalCluster (2 worker processes on
loopback, one for the session: tests/dask_cluster.py), each the single-process run over the same files, row for row:
claim_results and case_results (EXCEPT ALL both ways, without run_id), every other table of the run, the coverage
and the problems (tests/partitioned_helpers.py). The inputs are the demo's bucket scenarios (each bucket twice, with
its twin), a subset that leaves gold cases without a trace (each counted once, not once per partition), traces cut
the way a Collector writes them (one trace's spans across lines and files, some gzipped), a large file read in byte
ranges, a prefix in object storage, and a Hypothesis property over random partition counts and file splits; and
the judgments a run asks, once over the cluster. Failures: test_partitioned_failures.py; the command line:
test_partitioned_cli.py; where a run lives and the next night: test_partitioned_store.py.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench import synth
from citeline.analyzer.judges import RulesJudge
from citeline.analyzer.run.analyze import analyze
from citeline.analyzer.scaleout.partitioned import analyze_partitioned
from citeline.analyzer.store import connect, target
from citeline.examples.demo import SCENARIOS, gold_path
from citeline.examples.policy_bot import Faults
from tests.analysis_helpers import run_and_analyze
from tests.extras import needs
from tests.partitioned_helpers import (
    assert_same_files,
    assert_same_run,
    big_file,
    both,
    except_all,
    except_all_of,
    read_rows,
    rows_of,
    scatter,
    write_lines,
)

distributed = needs("distributed", "a LocalCluster for --engine dask; also 'citeline[dask]'")
from tests.test_lake import _collector_objects, _upload, s3  # noqa: E402, F401 - s3: the loopback S3 fixture

pytestmark = pytest.mark.cluster  # worker processes on loopback: make test-fast leaves them out


def test_the_demo_partitioned_is_the_single_run_row_for_row(
    dask_client: Any, demo_lines: list[bytes], tmp_path: Path
) -> None:
    traces = write_lines(demo_lines, tmp_path)
    single, one, part, two = both(traces, tmp_path, dask_client, partitions=3)
    assert sum(single.summary.values()) > 0 and single.problems() != []  # the demo's adapter bug is a note
    assert_same_run(single, one, part, two)
    assert part.engine["partitions"] == 3 and part.engine["workers"] == 2


def test_gold_cases_without_a_trace_are_counted_once_over_all_partitions(dask_client: Any, tmp_path: Path) -> None:
    chosen = [s for s in SCENARIOS if not s.name.endswith("~fixed")][:6]
    _, _ = run_and_analyze(tmp_path / "app", chosen, tweak=Faults(label_offset=1))
    single, one, part, two = both(tmp_path / "app" / "traces", tmp_path, dask_client, partitions=5)
    assert single.coverage["cases_without_trace"]  # most gold cases were not asked
    assert_same_run(single, one, part, two)


def test_traces_no_case_joins_are_judged_on_the_corpus_as_in_one_run(dask_client: Any, tmp_path: Path) -> None:
    """Gold cases dropped from the gold set: their traces join none (corpus basis, rows with no case id),
    and the cases left unasked are still missing once, the runs row counting only gold-joined traces."""
    import yaml

    chosen = [s for s in SCENARIOS if not s.name.endswith("~fixed")][:6]
    _, _ = run_and_analyze(tmp_path / "app", chosen)
    data = yaml.safe_load(gold_path().read_text(encoding="utf-8"))
    asked = {s.case_id for s in chosen}
    data["cases"] = [c for c in data["cases"] if c["case_id"] not in sorted(asked)[:3]]
    gold = tmp_path / "fewer.yaml"
    gold.write_text(yaml.safe_dump(data), encoding="utf-8")
    single, one, part, two = both(tmp_path / "app" / "traces", tmp_path, dask_client, gold=gold, partitions=4)
    assert single.coverage["corpus"] > 0 and single.coverage["cases_without_trace"]
    assert_same_run(single, one, part, two)
    con = connect(two, read_only=True)
    try:
        assert con.execute("SELECT traces FROM runs").fetchall() == [(len(chosen) - single.coverage["corpus"],)]
    finally:
        con.close()


def test_a_corpus_run_partitioned_is_the_single_run(dask_client: Any, tmp_path: Path) -> None:
    """--corpus with and without --gold: the driver reads both once and every worker gets them as read, so
    every trace no case joins is judged on the corpus basis in its partition as in one process."""
    import yaml

    chosen = [s for s in SCENARIOS if not s.name.endswith("~fixed")][:8]
    _, _ = run_and_analyze(tmp_path / "app", chosen)
    traces = tmp_path / "app" / "traces"
    one, two = tmp_path / "single.duckdb", tmp_path / "partitioned.duckdb"
    single = analyze(one, corpus=gold_path(), traces=[traces])
    part = analyze_partitioned(two, corpus=gold_path(), traces=[traces], client=dask_client, partitions=3)
    assert single.coverage["corpus"] == len(chosen)  # no case: every trace on the corpus basis
    assert_same_run(single, one, part, two)
    data = yaml.safe_load(gold_path().read_text(encoding="utf-8"))
    data["cases"] = [c for c in data["cases"] if c["case_id"] not in sorted({s.case_id for s in chosen})[:3]]
    gold = tmp_path / "fewer.yaml"
    gold.write_text(yaml.safe_dump(data), encoding="utf-8")
    one, two = tmp_path / "single2.duckdb", tmp_path / "partitioned2.duckdb"
    single = analyze(one, gold=gold, corpus=gold_path(), traces=[traces])
    part = analyze_partitioned(two, gold=gold, corpus=gold_path(), traces=[traces], client=dask_client, partitions=4)
    assert 0 < single.coverage["corpus"] < len(chosen)
    assert_same_run(single, one, part, two)
    runs = [rows_of(db, "runs", r.run_id) for db, r in ((one, single), (two, part))]
    assert runs[0][0][2] == runs[1][0][2] == f"{gold}; corpus:{gold_path()}"  # gold_source, as one run names it


def test_a_collector_split_trace_lands_whole_in_one_partition(
    dask_client: Any, demo_lines: list[bytes], tmp_path: Path
) -> None:
    traces = scatter(demo_lines, tmp_path, files=4, seed=1)
    single, one, part, two = both(traces, tmp_path, dask_client, partitions=4, map_tasks=4)
    assert_same_run(single, one, part, two)


def test_synthetic_traces_in_the_collectors_batches_across_files(dask_client: Any, tmp_path: Path) -> None:
    synth.gold(tmp_path / "gold.yaml")
    synth.write_traces(tmp_path / "traces", 600, per_file=150, collector=True, distinct=True)
    single, one, part, two = both(tmp_path / "traces", tmp_path, dask_client, gold=tmp_path / "gold.yaml", partitions=4)
    assert sum(single.summary.values()) > 1000
    assert_same_run(single, one, part, two)


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    parts=st.integers(min_value=1, max_value=7),
    files=st.integers(min_value=1, max_value=5),
    maps=st.integers(min_value=1, max_value=5),
    seed=st.integers(min_value=0, max_value=10_000),
    split=st.integers(min_value=2_000, max_value=60_000),
)
def test_any_partition_count_and_file_split_gives_the_single_run(
    dask_client: Any, demo_lines: list[bytes], parts: int, files: int, maps: int, seed: int, split: int
) -> None:
    """Random partition counts, map tasks, files (every other one gzipped) and byte-range splits (``split``:
    a plain file larger than it is read in line-aligned ranges by several map tasks)."""
    with tempfile.TemporaryDirectory(prefix="citeline-prop-") as tmp:
        traces = scatter(demo_lines, Path(tmp), files=files, seed=seed)
        single, one, part, two = both(
            traces, Path(tmp), dask_client, partitions=parts, map_tasks=maps, split_bytes=split
        )
        assert_same_run(single, one, part, two)
        assert_same_files(one, two)


def test_a_large_file_read_in_byte_ranges_by_several_map_tasks_is_the_single_run(
    dask_client: Any, demo_lines: list[bytes], tmp_path: Path
) -> None:
    """Issue #38 item 5: a plain file over the threshold (forced small here) is read in line-aligned byte ranges
    by several map tasks, a .gz file whole: the single run's rows, spans, file_traces, ingested_files and
    problems, the bad line named by the file and its true line number."""
    traces = big_file(demo_lines, tmp_path / "traces", crlf=True)
    assert (traces / "again.jsonl.gz").stat().st_size > 2_000  # over the threshold, and read whole
    single, one, part, two = both(traces, tmp_path, dask_client, partitions=3, map_tasks=5, split_bytes=2_000)
    assert part.engine["split_files"] == 1 and part.engine["map_tasks"] == 5 and part.engine["byte_ranges"] >= 4
    assert "1 file(s) read in byte ranges" in (part.engine_line() or "")
    assert_same_run(single, one, part, two)
    assert_same_files(one, two)
    bad = [p for p in part.problems() if "invalid JSON" in p]
    assert len(bad) == 1 and bad[0].startswith(f"{traces / 'big.jsonl'}:line 9: -: invalid JSON"), bad
    # the file's (file, trace) rows once each, though every range's task wrote its own
    q = "SELECT source_file, trace_id, count(*) AS n FROM file_traces GROUP BY ALL HAVING n > 1"
    assert read_rows(two, q).num_rows == 0
    # held at its size: the next night skips the split file as one process does
    again = analyze_partitioned(two, gold=gold_path(), traces=[traces], client=dask_client, split_bytes=2_000)
    assert again.engine["skipped_files"] == 2 and again.engine["map_tasks"] == 0


@pytest.mark.usefixtures("s3")
def test_a_prefix_in_object_storage_partitioned_is_the_single_run(demo_lines: list[bytes], tmp_path: Path) -> None:
    """The Collector's layout in a loopback S3 bucket (moto), one trace across two objects, some gzipped,
    a bucket that does not exist beside it: each map task fetches its own objects with the credentials
    of its worker's environment (a LocalCluster started here, after the environment points at moto).
    Beside them one large object, read in byte ranges by several map tasks (ranged reads; split small
    here), with a bad line named by its URL and true line number (issue #38 item 5)."""
    assert len(demo_lines) > 24
    objects = _collector_objects(demo_lines[:16])
    big = big_file(demo_lines[12:], tmp_path / "local")  # its lines 16 on; lines 12-15 in a .gz left on disk
    objects["traces/big/big.jsonl"] = (big / "big.jsonl").read_bytes()
    _upload(objects)
    urls = ["s3://lake/traces/", "s3://no-such-bucket/x/"]
    single = analyze(tmp_path / "one.duckdb", gold=gold_path(), traces=urls)
    split = len(objects["traces/big/big.jsonl"]) // 4
    part = analyze_partitioned(
        tmp_path / "two.duckdb", gold=gold_path(), traces=urls, workers=2, partitions=3, map_tasks=4, split_bytes=split
    )
    assert (
        "s3://no-such-bucket/x/:-: -: does not exist: The specified bucket does not exist; skipped" in part.problems()
    )
    assert_same_run(single, tmp_path / "one.duckdb", part, tmp_path / "two.duckdb")
    assert_same_files(tmp_path / "one.duckdb", tmp_path / "two.duckdb")
    assert part.engine["split_files"] == 1 and part.engine["byte_ranges"] >= 2
    assert any(p.startswith("s3://lake/traces/big/big.jsonl:line 9: -: invalid JSON") for p in part.problems())
    con = connect(tmp_path / "two.duckdb", read_only=True)
    try:  # the store names each object by its URL, never by a worker's temporary copy
        sources = {s for (s,) in con.execute("SELECT DISTINCT source_file FROM spans").fetchall()}
    finally:
        con.close()
    assert sources and all(s.startswith("s3://lake/traces/") for s in sources)


def test_human_labels_override_the_judge_in_every_partition(
    dask_client: Any, demo_lines: list[bytes], tmp_path: Path
) -> None:
    traces = write_lines(demo_lines, tmp_path)
    first = analyze(tmp_path / "probe.duckdb", gold=gold_path(), traces=[traces])
    picked = first.claims.filter(first.claims["gold_claim_id"].is_not_null()).head(3).to_dicts()
    labels = tmp_path / "labels.jsonl"
    rows = [{"trace_id": c["trace_id"], "claim": c["gold_claim_id"], "label": "contradicted"} for c in picked]
    rows.append({"trace_id": picked[0]["trace_id"], "claim": "x", "label": "maybe"})  # a bad row: one gold error
    labels.write_text("".join(json.dumps(r) + "\n" for r in rows))
    one, two = tmp_path / "single.duckdb", tmp_path / "partitioned.duckdb"
    single = analyze(one, gold=gold_path(), traces=[traces], labels=labels)
    part = analyze_partitioned(two, gold=gold_path(), traces=[traces], labels=labels, client=dask_client, partitions=3)
    assert rows_of(one, "human_labelled", single.run_id) != []  # (a claim the answer left out has no text to record)
    assert single.summary != first.summary  # the labels moved claims
    assert [e for e in part.problems() if "maybe" in e] != []  # the bad row, named once
    assert_same_run(single, one, part, two)


def test_a_pair_two_partitions_meet_is_judged_once_per_worker(tmp_path: Path) -> None:
    """Synthetic answers repeat claims across traces, so partitions meet the same (claim, evidence) pairs:
    on one worker each is asked of the judge once over the run, as many as the single run asks."""
    synth.gold(tmp_path / "gold.yaml")
    synth.write_traces(tmp_path / "traces", 300, per_file=100)
    single = analyze(tmp_path / "one.duckdb", gold=tmp_path / "gold.yaml", traces=[tmp_path / "traces"])
    part = analyze_partitioned(
        tmp_path / "two.duckdb", gold=tmp_path / "gold.yaml", traces=[tmp_path / "traces"], workers=1, partitions=4
    )
    assert part.summary == single.summary
    assert single.judge["asked"] > 0
    # before: each partition asked its own, summing to more than the single run
    assert part.judge["asked"] == single.judge["asked"]
    con = connect(tmp_path / "two.duckdb", read_only=True)
    try:  # and every judgment reaches the store's cache once, as the single run's do
        assert con.execute("SELECT count(*), count(DISTINCT key) FROM judgments").fetchall() == [
            (single.judge["asked"], single.judge["asked"])
        ]
    finally:
        con.close()


def test_a_pair_any_worker_judged_is_asked_once_over_the_cluster(dask_client: Any, tmp_path: Path) -> None:
    """Two workers classify partitions at once and meet the same (claim, evidence) pairs: the run's shared
    judgment set has each asked once over the cluster, so ``asked`` is the single run's, the store holds each
    judgment once (as files of the run, read through the store's view), and the next run, partitioned or not,
    asks none of them again; rejudge reads them as the store's."""
    synth.gold(tmp_path / "gold.yaml")
    synth.write_traces(tmp_path / "traces", 240, per_file=40)
    kw: dict[str, Any] = {"gold": tmp_path / "gold.yaml", "traces": [tmp_path / "traces"]}
    one, two = tmp_path / "one.duckdb", tmp_path / "two.duckdb"
    single = analyze(one, **kw)
    part = analyze_partitioned(two, client=dask_client, partitions=6, map_tasks=3, **kw)
    for table in ("claim_results", "case_results"):
        assert except_all(one, single.run_id, two, part.run_id, table) == (0, 0), table
    assert single.judge["asked"] > 100
    assert part.judge["asked"] == single.judge["asked"]
    assert part.judge["failed"] == single.judge["failed"] == 0
    shared = [r["judgments"] for r in part.engine["seconds"]["reduce"]]
    assert sum(c["theirs"] for c in shared) > 0  # partitions met pairs another claim asked: taken, not asked
    judged = read_rows(two, "SELECT key, judge, version, label, rationale FROM judgments")
    assert (judged.num_rows, len(set(judged.column("key").to_pylist()))) == (single.judge["asked"],) * 2
    assert except_all_of(judged, read_rows(one, "SELECT key, judge, version, label, rationale FROM judgments")) == (
        0,
        0,
    )
    con = connect(two, read_only=True)
    try:  # the driver inserted none: the store's own table is empty, the run's files hold them all
        assert con.execute(f"SELECT count(*) FROM {target(con, 'judgments')}").fetchall() == [(0,)]
        assert con.execute(
            "SELECT sum(row_count) FROM run_files WHERE run_id = $r AND tbl = 'judgments'", {"r": part.run_id}
        ).fetchall() == [(single.judge["asked"],)]
    finally:
        con.close()
    again = analyze_partitioned(
        two, client=dask_client, partitions=2, **kw
    )  # the files held: classified from the store
    assert (again.judge["asked"], again.engine["skipped_files"]) == (0, 6)
    more = tmp_path / "more"
    # new pairs: a single-process run on the store stores them in its own table, behind the view
    synth.write_traces(more, 20, per_file=20, distinct=True, first=10_000)
    after = analyze(two, gold=tmp_path / "gold.yaml", traces=[more])
    con = connect(two, read_only=True)
    try:
        assert con.execute("SELECT count(*), count(DISTINCT key) FROM judgments").fetchall() == [
            (single.judge["asked"] + after.judge["asked"],) * 2
        ]
    finally:
        con.close()
    assert after.judge["asked"] > 0
    from citeline.analyzer.run.rejudge import rejudge

    class _Counting(RulesJudge):
        asked = 0

        def judge_many(self, items: Any) -> Any:
            type(self).asked += len(items)
            return super().judge_many(items)

    assert rejudge(two, part.run_id, _Counting()).changes == []
    assert _Counting.asked == 0  # every judgment the partitioned run made read back from its files
