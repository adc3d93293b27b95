"""Partitioned runs on Dask (``analyze --engine dask``) against a real LocalCluster: 2 worker processes on loopback.

Every test compares a partitioned run with the single-process run over the same files, row for row:
claim_results and case_results (EXCEPT ALL both ways, without run_id), every other table of the run,
the coverage and the problems. The inputs are the demo's bucket scenarios (each bucket twice, with
its twin), a subset that leaves gold cases without a trace (each counted once, not once per
partition), traces cut the way a Collector writes them (one trace's spans across lines and files,
some gzipped), and a Hypothesis property over random partition counts and file splits. A worker
killed by its pid mid-run: the run completes with the same rows and counts the retry.
"""

from __future__ import annotations

import gzip
import json
import os
import random
import signal
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench import synth
from citeline.analyzer.cli.main import main
from citeline.analyzer.judges import RulesJudge
from citeline.analyzer.run.analyze import analyze
from citeline.analyzer.run.result import AnalysisResult
from citeline.analyzer.scaleout.partitioned import WORKER_CONFIG, analyze_partitioned, local_cluster
from citeline.analyzer.store import connect, target
from citeline.examples.demo import SCENARIOS, gold_path
from citeline.examples.policy_bot import Faults
from tests.analysis_helpers import run_and_analyze
from tests.extras import needs

distributed = needs("distributed", "a LocalCluster for --engine dask; also 'citeline[dask]'")
from tests.test_lake import _collector_objects, _upload, s3  # noqa: E402, F401 - s3: the loopback S3 fixture

pytestmark = pytest.mark.cluster  # worker processes on loopback: make test-fast leaves them out

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


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    """One LocalCluster for the module, as ``--engine dask`` starts one: two worker processes, one thread
    each, on loopback, with the worker settings citeline runs partitions with."""
    cluster = local_cluster(2)
    c = distributed.Client(cluster)
    try:
        yield c
    finally:
        c.close()
        cluster.close()


@pytest.fixture(scope="module")
def demo_lines(tmp_path_factory: pytest.TempPathFactory) -> list[bytes]:
    """The demo's trace lines as the instrumentation wrote them (every bucket twice, with twins)."""
    tmp = tmp_path_factory.mktemp("demo")
    run_and_analyze(tmp, SCENARIOS)
    return [line for f in sorted((tmp / "traces").glob("*.jsonl")) for line in f.read_bytes().splitlines() if line]


def _spans(lines: list[bytes]) -> list[tuple[Any, Any, dict[str, Any]]]:
    """Every span of the lines with the resource and scope it was written under."""
    out: list[tuple[Any, Any, dict[str, Any]]] = []
    for line in lines:
        doc = json.loads(line)
        for rs in doc["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                out.extend((rs.get("resource", {}), ss.get("scope", {}), span) for span in ss["spans"])
    return out


def _scatter(lines: list[bytes], root: Path, files: int, seed: int) -> Path:
    """The spans rewritten as a Collector might: batches of 1-4 spans per line in shuffled order, the
    lines dealt over ``files`` files (every other one gzipped), so a trace's spans sit on several lines
    and often in several files."""
    rng = random.Random(seed)
    spans = _spans(lines)
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


def _write(lines: list[bytes], root: Path) -> Path:
    folder = root / "traces"
    folder.mkdir(parents=True)
    (folder / "traces.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    return folder


def _rows(db: Path, table: str, run_id: str) -> Any:
    con = connect(db, read_only=True)  # as every reader opens a store: a partitioned run's files seen through it
    try:
        return con.execute(f"SELECT * EXCLUDE (run_id) FROM {table} WHERE run_id = $r", {"r": run_id}).fetchall()
    finally:
        con.close()


def _read(db: Path, select: str, params: dict[str, Any] | None = None) -> Any:
    """The rows of ``select`` as an Arrow table, read as every reader opens a store (``store.connect``: a
    partitioned run's Parquet files seen through its views)."""
    con = connect(db, read_only=True)
    try:
        return con.sql(select, params=params or {}).to_arrow_table()
    finally:
        con.close()


def _except_all(one: Path, run_one: str, two: Path, run_two: str, table: str) -> tuple[int, int]:
    """Rows of ``table`` in one run and not the other, both ways (EXCEPT ALL: duplicates count)."""
    q = f"SELECT * EXCLUDE (run_id) FROM {table} WHERE run_id = $r"
    return _except_all_of(_read(one, q, {"r": run_one}), _read(two, q, {"r": run_two}))


def _except_all_of(a_rows: Any, b_rows: Any) -> tuple[int, int]:
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


def _problems(db: Path, run_id: str) -> list[tuple[Any, ...]]:
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
        assert _except_all(one, single.run_id, two, part.run_id, table) == (0, 0), table
    for table in RUN_TABLES:
        assert sorted(_rows(one, table, single.run_id), key=repr) == sorted(_rows(two, table, part.run_id), key=repr), (
            table
        )
    assert part.summary == single.summary
    cov_a, cov_b = single.coverage, part.coverage
    assert {**cov_b, "unmatched": sorted(map(repr, cov_b["unmatched"]))} == {
        **cov_a,
        "unmatched": sorted(map(repr, cov_a["unmatched"])),
    }
    assert sorted(part.problems()) == sorted(single.problems())
    assert _problems(two, part.run_id) == _problems(one, single.run_id)
    assert (part.skipped, part.skipped_text, part.warnings) == (single.skipped, single.skipped_text, single.warnings)
    assert part.traces_read == single.traces_read
    assert part.engine["failed_partitions"] == []
    # the store holds what ingest would have stored: every span, and each file's traces
    for table in ("spans", "file_traces"):
        q = f"SELECT * FROM {table}"
        assert _except_all_of(_read(one, q), _read(two, q)) == (0, 0), table


def assert_same_files(one: Path, two: Path) -> None:
    """Each file recorded once, whole, as one process records it (a file read in byte ranges too): its size,
    lines, spans and bad lines; a file held at its size is skipped by the next run."""
    q = "SELECT path, size, lines, spans_added, skipped FROM ingested_files ORDER BY path"
    assert _read(two, q).to_pylist() == _read(one, q).to_pylist()


def _big_file(lines: list[bytes], folder: Path, crlf: bool = False) -> Path:
    """The demo's lines, the first four in a .gz file (read whole: never split), the others in one plain file
    with a blank line after its 3rd, a bad line after its 7th (its line 9) and its last line without a newline."""
    rest = lines[4:]
    body = [*rest[:3], b"", *rest[3:7], b'{"resourceSpans": [{"scopeSpans": [', *rest[7:]]
    end = b"\r\n" if crlf else b"\n"
    folder.mkdir(parents=True)
    (folder / "big.jsonl").write_bytes(end.join(body))
    (folder / "again.jsonl.gz").write_bytes(gzip.compress(end.join(lines[:4]) + end))
    return folder


def _both(
    traces: Path, tmp: Path, client: Any, gold: Path | None = None, **kw: Any
) -> tuple[AnalysisResult, Path, AnalysisResult, Path]:
    one, two = tmp / "single.duckdb", tmp / "partitioned.duckdb"
    single = analyze(one, gold=gold or gold_path(), traces=[traces])
    part = analyze_partitioned(two, gold=gold or gold_path(), traces=[traces], client=client, **kw)
    return single, one, part, two


def test_the_demo_partitioned_is_the_single_run_row_for_row(
    client: Any, demo_lines: list[bytes], tmp_path: Path
) -> None:
    traces = _write(demo_lines, tmp_path)
    single, one, part, two = _both(traces, tmp_path, client, partitions=3)
    assert sum(single.summary.values()) > 0 and single.problems() != []  # the demo's adapter bug is a note
    assert_same_run(single, one, part, two)
    assert part.engine["partitions"] == 3 and part.engine["workers"] == 2


def test_gold_cases_without_a_trace_are_counted_once_over_all_partitions(client: Any, tmp_path: Path) -> None:
    chosen = [s for s in SCENARIOS if not s.name.endswith("~fixed")][:6]
    _, _ = run_and_analyze(tmp_path / "app", chosen, tweak=Faults(label_offset=1))
    single, one, part, two = _both(tmp_path / "app" / "traces", tmp_path, client, partitions=5)
    assert single.coverage["cases_without_trace"]  # most gold cases were not asked
    assert_same_run(single, one, part, two)


def test_traces_no_case_joins_are_judged_on_the_corpus_as_in_one_run(client: Any, tmp_path: Path) -> None:
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
    single, one, part, two = _both(tmp_path / "app" / "traces", tmp_path, client, gold=gold, partitions=4)
    assert single.coverage["corpus"] > 0 and single.coverage["cases_without_trace"]
    assert_same_run(single, one, part, two)
    con = connect(two, read_only=True)
    try:
        assert con.execute("SELECT traces FROM runs").fetchall() == [(len(chosen) - single.coverage["corpus"],)]
    finally:
        con.close()


def test_a_corpus_run_partitioned_is_the_single_run(client: Any, tmp_path: Path) -> None:
    """--corpus with and without --gold: the driver reads both once and every worker gets them as read, so
    every trace no case joins is judged on the corpus basis in its partition as in one process."""
    import yaml

    chosen = [s for s in SCENARIOS if not s.name.endswith("~fixed")][:8]
    _, _ = run_and_analyze(tmp_path / "app", chosen)
    traces = tmp_path / "app" / "traces"
    one, two = tmp_path / "single.duckdb", tmp_path / "partitioned.duckdb"
    single = analyze(one, corpus=gold_path(), traces=[traces])
    part = analyze_partitioned(two, corpus=gold_path(), traces=[traces], client=client, partitions=3)
    assert single.coverage["corpus"] == len(chosen)  # no case: every trace on the corpus basis
    assert_same_run(single, one, part, two)
    data = yaml.safe_load(gold_path().read_text(encoding="utf-8"))
    data["cases"] = [c for c in data["cases"] if c["case_id"] not in sorted({s.case_id for s in chosen})[:3]]
    gold = tmp_path / "fewer.yaml"
    gold.write_text(yaml.safe_dump(data), encoding="utf-8")
    one, two = tmp_path / "single2.duckdb", tmp_path / "partitioned2.duckdb"
    single = analyze(one, gold=gold, corpus=gold_path(), traces=[traces])
    part = analyze_partitioned(two, gold=gold, corpus=gold_path(), traces=[traces], client=client, partitions=4)
    assert 0 < single.coverage["corpus"] < len(chosen)
    assert_same_run(single, one, part, two)
    runs = [_rows(db, "runs", r.run_id) for db, r in ((one, single), (two, part))]
    assert runs[0][0][2] == runs[1][0][2] == f"{gold}; corpus:{gold_path()}"  # gold_source, as one run names it


def test_a_collector_split_trace_lands_whole_in_one_partition(
    client: Any, demo_lines: list[bytes], tmp_path: Path
) -> None:
    traces = _scatter(demo_lines, tmp_path, files=4, seed=1)
    single, one, part, two = _both(traces, tmp_path, client, partitions=4, map_tasks=4)
    assert_same_run(single, one, part, two)


def test_synthetic_traces_in_the_collectors_batches_across_files(client: Any, tmp_path: Path) -> None:
    synth.gold(tmp_path / "gold.yaml")
    synth.write_traces(tmp_path / "traces", 600, per_file=150, collector=True, distinct=True)
    single, one, part, two = _both(tmp_path / "traces", tmp_path, client, gold=tmp_path / "gold.yaml", partitions=4)
    assert sum(single.summary.values()) > 1000
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


def test_a_pair_any_worker_judged_is_asked_once_over_the_cluster(client: Any, tmp_path: Path) -> None:
    """Two workers classify partitions at once and meet the same (claim, evidence) pairs: the run's shared
    judgment set has each asked once over the cluster, so ``asked`` is the single run's, the store holds each
    judgment once (as files of the run, read through the store's view), and the next run, partitioned or not,
    asks none of them again; rejudge reads them as the store's."""
    synth.gold(tmp_path / "gold.yaml")
    synth.write_traces(tmp_path / "traces", 240, per_file=40)
    kw: dict[str, Any] = {"gold": tmp_path / "gold.yaml", "traces": [tmp_path / "traces"]}
    one, two = tmp_path / "one.duckdb", tmp_path / "two.duckdb"
    single = analyze(one, **kw)
    part = analyze_partitioned(two, client=client, partitions=6, map_tasks=3, **kw)
    for table in ("claim_results", "case_results"):
        assert _except_all(one, single.run_id, two, part.run_id, table) == (0, 0), table
    assert single.judge["asked"] > 100
    assert part.judge["asked"] == single.judge["asked"]
    assert part.judge["failed"] == single.judge["failed"] == 0
    shared = [r["judgments"] for r in part.engine["seconds"]["reduce"]]
    assert sum(c["theirs"] for c in shared) > 0  # partitions met pairs another claim asked: taken, not asked
    judged = _read(two, "SELECT key, judge, version, label, rationale FROM judgments")
    assert (judged.num_rows, len(set(judged.column("key").to_pylist()))) == (single.judge["asked"],) * 2
    assert _except_all_of(judged, _read(one, "SELECT key, judge, version, label, rationale FROM judgments")) == (0, 0)
    con = connect(two, read_only=True)
    try:  # the driver inserted none: the store's own table is empty, the run's files hold them all
        assert con.execute(f"SELECT count(*) FROM {target(con, 'judgments')}").fetchall() == [(0,)]
        assert con.execute(
            "SELECT sum(row_count) FROM run_files WHERE run_id = $r AND tbl = 'judgments'", {"r": part.run_id}
        ).fetchall() == [(single.judge["asked"],)]
    finally:
        con.close()
    again = analyze_partitioned(two, client=client, partitions=2, **kw)  # the files held: classified from the store
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


def test_workers_run_without_the_samplers_that_take_the_gil(
    client: Any, demo_lines: list[bytes], tmp_path: Path
) -> None:
    """Dask's profiler and its 20 ms tick cost a GIL-bound partition about a third of its time: the
    workers of a LocalCluster citeline starts run with them off (compose's: tests/test_compose.py), and a
    run on workers that keep Dask's defaults says so, with the same rows."""
    import dask

    got = client.run(lambda: {k: dask.config.get(k) for k in WORKER_CONFIG})
    assert len(got) == 2 and all(v == WORKER_CONFIG for v in got.values())
    traces = _write(demo_lines, tmp_path)
    quiet = analyze_partitioned(tmp_path / "a.duckdb", gold=gold_path(), traces=[traces], client=client)
    assert quiet.engine["sampling_workers"] == 0 and "Worker settings" not in (quiet.engine_line() or "")
    cluster = distributed.LocalCluster(  # a cluster of the user's own, on Dask's defaults
        n_workers=1, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address="127.0.0.1:0"
    )
    other = distributed.Client(cluster)
    try:
        loud = analyze_partitioned(tmp_path / "b.duckdb", gold=gold_path(), traces=[traces], client=other)
    finally:
        other.close()
        cluster.close()
    assert loud.engine["sampling_workers"] == 1
    assert loud.engine_line() == (
        "engine: dask (LocalCluster, 1 worker(s)): 1 map task(s), 4 partition(s), 0 task(s) run again; 1 worker(s) "
        "run Dask's profiler or its 20 ms tick, which take the GIL from the text work (about a third slower): "
        "docs/scale-out.md, Worker settings"
    )
    assert loud.summary == quiet.summary


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    parts=st.integers(min_value=1, max_value=7),
    files=st.integers(min_value=1, max_value=5),
    maps=st.integers(min_value=1, max_value=5),
    seed=st.integers(min_value=0, max_value=10_000),
    split=st.integers(min_value=2_000, max_value=60_000),
)
def test_any_partition_count_and_file_split_gives_the_single_run(
    client: Any, demo_lines: list[bytes], parts: int, files: int, maps: int, seed: int, split: int
) -> None:
    """Random partition counts, map tasks, files (every other one gzipped) and byte-range splits (``split``:
    a plain file larger than it is read in line-aligned ranges by several map tasks)."""
    with tempfile.TemporaryDirectory(prefix="citeline-prop-") as tmp:
        traces = _scatter(demo_lines, Path(tmp), files=files, seed=seed)
        single, one, part, two = _both(traces, Path(tmp), client, partitions=parts, map_tasks=maps, split_bytes=split)
        assert_same_run(single, one, part, two)
        assert_same_files(one, two)


def test_the_command_line_runs_on_a_scheduler_and_says_how(
    client: Any, demo_lines: list[bytes], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    traces = _write(demo_lines, tmp_path)
    single = analyze(tmp_path / "single.duckdb", gold=gold_path(), traces=[traces])
    code = main(
        [
            "analyze",
            "--engine",
            "dask",
            "--scheduler",
            client.scheduler.address,
            "--partitions",
            "2",
            "--split-bytes",
            "100000",
            "--traces",
            str(traces),
            "--gold",
            str(gold_path()),
            "--db",
            str(tmp_path / "p.duckdb"),
            "--format",
            "json",
        ]
    )
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    assert out["summary"] == single.summary
    assert out["engine"]["scheduler"] == client.scheduler.address and out["engine"]["partitions"] == 2
    assert out["engine"]["split_files"] == 1 and out["engine"]["byte_ranges"] == 2  # one per worker thread
    assert sorted(out["problems"]) == sorted(single.problems())
    # reports read the merged run as any other
    assert main(["report", "--db", str(tmp_path / "p.duckdb"), "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["run_id"] == out["run_id"]


def test_an_unreachable_scheduler_exits_2_naming_it(
    demo_lines: list[bytes], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    traces = _write(demo_lines, tmp_path)
    code = main(
        [
            "analyze",
            "--engine",
            "dask",
            "--scheduler",
            "tcp://127.0.0.1:9",
            "--traces",
            str(traces),
            "--gold",
            str(gold_path()),
            "--db",
            str(tmp_path / "p.duckdb"),
        ]
    )
    assert code == 2
    assert "tcp://127.0.0.1:9: cannot reach a Dask scheduler there" in capsys.readouterr().err


def test_a_worker_killed_mid_run_is_retried_with_the_same_rows(client: Any, tmp_path: Path) -> None:
    synth.gold(tmp_path / "gold.yaml")
    synth.write_traces(tmp_path / "traces", 6000, per_file=1500, distinct=True)
    killed: list[int] = []
    done = threading.Event()

    seen = len(client.get_events("citeline-partition"))  # earlier tests' runs

    def kill_the_first_worker_to_classify() -> None:
        while not done.is_set():
            for _t, msg in list(client.get_events("citeline-partition"))[seen:]:
                if msg["pid"] != os.getpid():  # a worker process, never this one
                    time.sleep(0.3)  # well into its partition
                    os.kill(int(msg["pid"]), signal.SIGKILL)
                    killed.append(int(msg["pid"]))
                    return
            time.sleep(0.02)

    killer = threading.Thread(target=kill_the_first_worker_to_classify, daemon=True)
    killer.start()
    try:
        part = analyze_partitioned(
            tmp_path / "p.duckdb",
            gold=tmp_path / "gold.yaml",
            traces=[tmp_path / "traces"],
            client=client,
            partitions=2,
        )
    finally:
        done.set()
        killer.join()
    assert killed, "no worker was killed"
    assert part.engine["retries"] >= 1 and part.engine["failed_partitions"] == []
    single = analyze(tmp_path / "s.duckdb", gold=tmp_path / "gold.yaml", traces=[tmp_path / "traces"])
    assert_same_run(single, tmp_path / "s.duckdb", part, tmp_path / "p.duckdb")
    client.wait_for_workers(2, timeout=60)  # the nanny started it again


class _DiesOnAnyClaim(RulesJudge):
    """A judge plug-in that takes its process down (a native crash in a model runtime, say)."""

    def judge_many(self, items: Any) -> Any:
        os._exit(70)


def test_a_partition_that_fails_twice_is_named_and_the_run_says_so(demo_lines: list[bytes], tmp_path: Path) -> None:
    traces = _write(demo_lines, tmp_path)
    # its own LocalCluster (one worker): a task that takes its worker down twice fails
    part = analyze_partitioned(
        tmp_path / "p.duckdb", gold=gold_path(), traces=[traces], judge=_DiesOnAnyClaim(), workers=1, partitions=1
    )
    assert part.engine["failed_partitions"] == [1]
    assert part.engine["retries"] >= 1  # the second attempt, on the worker the nanny started again
    [named] = [p for p in part.problems() if p.startswith("partitioned run:partition 1 of 1")]
    assert (
        "failed twice (KilledWorker: Attempted to run task" in named
        and f"its {len(demo_lines)} trace(s) are not classified" in named
    )
    assert sum(part.summary.values()) == 0 and part.traces_read == 0
    con = connect(tmp_path / "p.duckdb", read_only=True)
    try:  # the run is stored, and its problems say why it is incomplete
        stored = con.execute("SELECT message FROM input_problems WHERE run_id = $r", {"r": part.run_id}).fetchall()
        assert any("failed twice" in m for (m,) in stored)
        assert con.execute("SELECT count(*) FROM spans").fetchall()[0][0] > 0
    finally:
        con.close()


def _stderr_of(argv: list[str], tty: bool) -> tuple[int, str]:
    """Run the citeline command with its standard error on a terminal (a pty) or on a pipe."""
    import pty
    import subprocess
    import sys

    if not tty:
        cli = [sys.executable, "-m", "citeline.analyzer.cli.main", *argv]
        done = subprocess.run(cli, check=False, capture_output=True, timeout=300)
        return done.returncode, done.stderr.decode()
    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "citeline.analyzer.cli.main", *argv], stdout=subprocess.DEVNULL, stderr=follower
    )
    os.close(follower)
    chunks = []
    while True:
        try:
            data = os.read(leader, 65536)
        except OSError:  # the terminal closed with the process
            break
        if not data:
            break
        chunks.append(data)
    os.close(leader)
    return proc.wait(timeout=300), b"".join(chunks).decode(errors="replace")


def test_every_phase_shows_progress_on_a_terminal_and_nothing_on_a_pipe(
    client: Any, demo_lines: list[bytes], tmp_path: Path
) -> None:
    traces = _write(demo_lines, tmp_path)
    argv = [
        "analyze",
        "--engine",
        "dask",
        "--scheduler",
        client.scheduler.address,
        "--partitions",
        "3",
        "--traces",
        str(traces),
        "--gold",
        str(gold_path()),
        "--format",
        "json",
    ]
    code, shown = _stderr_of([*argv, "--db", str(tmp_path / "tty.duckdb")], tty=True)
    assert code == 0
    for line in (
        "reading 1 trace file(s) in 1 map task(s) on 2 worker(s)...",
        "reading trace files: 1 / 1",
        "classifying 3 partition(s)...",
        "classifying partitions: 3 / 3",
        "storing the run...",
    ):
        assert line in shown, shown
    code, piped = _stderr_of([*argv, "--db", str(tmp_path / "pipe.duckdb")], tty=False)
    assert code == 0
    assert "partitions:" not in piped and "..." not in piped


@pytest.mark.usefixtures("s3")
def test_a_prefix_in_object_storage_partitioned_is_the_single_run(demo_lines: list[bytes], tmp_path: Path) -> None:
    """The Collector's layout in a loopback S3 bucket (moto), one trace across two objects, some gzipped,
    a bucket that does not exist beside it: each map task fetches its own objects with the credentials
    of its worker's environment (a LocalCluster started here, after the environment points at moto).
    Beside them one large object, read in byte ranges by several map tasks (ranged reads; split small
    here), with a bad line named by its URL and true line number (issue #38 item 5)."""
    assert len(demo_lines) > 24
    objects = _collector_objects(demo_lines[:16])
    big = _big_file(demo_lines[12:], tmp_path / "local")  # its lines 16 on; lines 12-15 in a .gz left on disk
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
    client: Any, demo_lines: list[bytes], tmp_path: Path
) -> None:
    traces = _write(demo_lines, tmp_path)
    first = analyze(tmp_path / "probe.duckdb", gold=gold_path(), traces=[traces])
    picked = first.claims.filter(first.claims["gold_claim_id"].is_not_null()).head(3).to_dicts()
    labels = tmp_path / "labels.jsonl"
    rows = [{"trace_id": c["trace_id"], "claim": c["gold_claim_id"], "label": "contradicted"} for c in picked]
    rows.append({"trace_id": picked[0]["trace_id"], "claim": "x", "label": "maybe"})  # a bad row: one gold error
    labels.write_text("".join(json.dumps(r) + "\n" for r in rows))
    one, two = tmp_path / "single.duckdb", tmp_path / "partitioned.duckdb"
    single = analyze(one, gold=gold_path(), traces=[traces], labels=labels)
    part = analyze_partitioned(two, gold=gold_path(), traces=[traces], labels=labels, client=client, partitions=3)
    assert _rows(one, "human_labelled", single.run_id) != []  # (a claim the answer left out has no text to record)
    assert single.summary != first.summary  # the labels moved claims
    assert [e for e in part.problems() if "maybe" in e] != []  # the bad row, named once
    assert_same_run(single, one, part, two)


# ---- where a partitioned run lives, incremental nights, failures contained (issue #38 items 1-3) -----------


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
    client: Any, demo_lines: list[bytes], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from citeline.analyzer.phoenix.annotate import document_annotation_rows
    from citeline.analyzer.phoenix.verdicts import annotation_rows, trace_annotation_rows
    from citeline.analyzer.run.rejudge import rejudge

    traces = _write(demo_lines, tmp_path)
    single, one, part, two = _both(traces, tmp_path, client, partitions=3)
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
        out[f.name] = {sp["traceId"] for line in data.splitlines() if line for _r, _s, sp in _spans([line])}
    return out


def test_a_second_night_skips_held_files_and_joins_the_spans_stored_earlier(
    client: Any, demo_lines: list[bytes], tmp_path: Path
) -> None:
    """Two nights on one folder: the first has three of six Collector-split files, the second all six. The
    second partitioned run reads only the three new files, joins the traces they share with the first
    night's files to the spans stored then, and gives the single process's second night row for row."""
    every = _scatter(demo_lines, tmp_path / "all", files=6, seed=5)
    night = tmp_path / "night" / "traces"
    night.mkdir(parents=True)
    names = sorted(p.name for p in every.iterdir())
    first, second = names[:3], names[3:]
    for n in first:
        (night / n).write_bytes((every / n).read_bytes())
    one, two = tmp_path / "single.duckdb", tmp_path / "partitioned.duckdb"
    kw: dict[str, Any] = {"gold": gold_path(), "traces": [night]}
    s1, p1 = analyze(one, **kw), analyze_partitioned(two, client=client, partitions=4, **kw)
    assert_same_run(s1, one, p1, two)
    assert (p1.engine["skipped_files"], p1.engine["joined_traces"]) == (0, 0)
    for n in second:
        (night / n).write_bytes((every / n).read_bytes())
    s2, p2 = analyze(one, **kw), analyze_partitioned(two, client=client, partitions=4, map_tasks=2, **kw)
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
    analyze_partitioned(mixed, client=client, partitions=4, **kw)
    for n in second:
        (night / n).write_bytes((every / n).read_bytes())
    m2 = analyze(mixed, **kw)
    for table in ("claim_results", "case_results"):
        assert _except_all(one, s2.run_id, mixed, m2.run_id, table) == (0, 0), table
    assert m2.ingest.files_skipped_unchanged == 3


def test_a_map_task_killed_twice_names_its_files_and_the_others_give_the_single_run_on_theirs(
    client: Any, tmp_path: Path
) -> None:
    synth.gold(tmp_path / "gold.yaml")
    synth.write_traces(tmp_path / "traces", 2400, per_file=600, distinct=True)
    files = sorted((tmp_path / "traces").iterdir())
    seen = len(client.get_events("citeline-map"))
    killed: list[int] = []
    done = threading.Event()

    def kill_map_task_2_each_time_it_starts() -> None:
        handled = seen
        while not done.is_set() and len(killed) < 2:
            events = list(client.get_events("citeline-map"))
            for _t, msg in events[handled:]:
                if msg["task"] == 1 and msg["pid"] != os.getpid():
                    os.kill(int(msg["pid"]), signal.SIGKILL)
                    killed.append(int(msg["pid"]))
            handled = len(events)
            time.sleep(0.01)

    killer = threading.Thread(target=kill_map_task_2_each_time_it_starts, daemon=True)
    killer.start()
    try:
        part = analyze_partitioned(
            tmp_path / "p.duckdb",
            gold=tmp_path / "gold.yaml",
            traces=[tmp_path / "traces"],
            client=client,
            partitions=4,
            map_tasks=2,
        )
    finally:
        done.set()
        killer.join()
    client.wait_for_workers(2, timeout=60)
    assert len(killed) == 2
    assert part.engine["failed_map_tasks"] == [2] and part.engine["failed_partitions"] == []
    [named] = [p for p in part.problems() if p.startswith("partitioned run:map task 2 of 2")]
    assert f"2 file(s) not read: {files[2]}, {files[3]}" in named and "KilledWorker" in named
    kept = files[:2]
    single = analyze(tmp_path / "s.duckdb", gold=tmp_path / "gold.yaml", traces=kept)
    for table in ("claim_results", "case_results"):
        assert _except_all(tmp_path / "s.duckdb", single.run_id, tmp_path / "p.duckdb", part.run_id, table) == (0, 0)
    assert part.summary == single.summary and part.traces_read == single.traces_read == 1200
    assert part.engine["incomplete_traces"] == 0  # synthetic traces sit whole in one file: none lost a part
    assert any("may be in the files not read" in p for p in part.problems())


def test_a_large_file_read_in_byte_ranges_by_several_map_tasks_is_the_single_run(
    client: Any, demo_lines: list[bytes], tmp_path: Path
) -> None:
    """Issue #38 item 5: a plain file over the threshold (forced small here) is read in line-aligned byte ranges
    by several map tasks, a .gz file whole: the single run's rows, spans, file_traces, ingested_files and
    problems, the bad line named by the file and its true line number."""
    traces = _big_file(demo_lines, tmp_path / "traces", crlf=True)
    assert (traces / "again.jsonl.gz").stat().st_size > 2_000  # over the threshold, and read whole
    single, one, part, two = _both(traces, tmp_path, client, partitions=3, map_tasks=5, split_bytes=2_000)
    assert part.engine["split_files"] == 1 and part.engine["map_tasks"] == 5 and part.engine["byte_ranges"] >= 4
    assert "1 file(s) read in byte ranges" in (part.engine_line() or "")
    assert_same_run(single, one, part, two)
    assert_same_files(one, two)
    bad = [p for p in part.problems() if "invalid JSON" in p]
    assert len(bad) == 1 and bad[0].startswith(f"{traces / 'big.jsonl'}:line 9: -: invalid JSON"), bad
    # the file's (file, trace) rows once each, though every range's task wrote its own
    q = "SELECT source_file, trace_id, count(*) AS n FROM file_traces GROUP BY ALL HAVING n > 1"
    assert _read(two, q).num_rows == 0
    # held at its size: the next night skips the split file as one process does
    again = analyze_partitioned(two, gold=gold_path(), traces=[traces], client=client, split_bytes=2_000)
    assert again.engine["skipped_files"] == 2 and again.engine["map_tasks"] == 0


def test_a_lost_map_task_names_the_byte_ranges_it_read() -> None:
    from citeline.analyzer.scaleout.plan import Plan, coalesced, units

    files = [("a.jsonl", 100), ("b.jsonl.gz", 500), ("c.jsonl", 30)]
    dealt = units(files, [0, 1, 2], 40)
    assert dealt == [((0, (0, 33)), 33), ((0, (33, 66)), 33), ((0, (66, 100)), 34), ((1, None), 500), ((2, None), 30)]
    groups, ranges = coalesced([[dealt[0][0], dealt[1][0]], [dealt[2][0], dealt[3][0], dealt[4][0]]])
    assert groups == [[0], [0, 1, 2]] and ranges == [[(0, 66)], [(66, 100), None, None]]  # adjacent ranges as one
    plan = Plan(files, [], groups, 2, 2, None, [], ranges)
    assert plan.named(1) == ["a.jsonl (bytes 66-100)", "b.jsonl.gz", "c.jsonl"]
    assert plan.split_files() == 1
    assert plan.rank(0, 0) < plan.rank(1, 0) < plan.rank(1, 1) < plan.rank(1, 2)  # a span read twice keeps the first


def test_the_task_graph_grows_with_map_tasks_plus_partitions_not_their_product(
    client: Any, demo_lines: list[bytes], tmp_path: Path
) -> None:
    """Issue #38, past the driver: map tasks write their span pieces under the run's location and hand back their
    paths, and each partition's reduce reads its own by path, so the scheduler runs a task per map task, per
    partition and the context (3 + 9 + 1 here), not a task per map task per partition beside them (3 x 9). The
    pieces are intermediate: gone once the run is committed, its rows the single run's."""
    traces = _scatter(demo_lines, tmp_path, files=4, seed=38)
    with distributed.get_task_stream(client=client) as stream:
        single, one, part, two = _both(traces, tmp_path, client, partitions=9, map_tasks=3)
    keys = sorted({str(t["key"]) for t in stream.data})
    assert part.engine["map_tasks"] == 3 and part.engine["partitions"] == 9
    assert len(keys) == 3 + 9 + 1, keys
    assert_same_run(single, one, part, two)
    location = Path(part.engine["location"])
    assert (location / "manifest.json").exists() and not (location / "pieces").exists()


def test_each_attempt_of_a_map_task_writes_its_pieces_apart(
    client: Any, demo_lines: list[bytes], tmp_path: Path
) -> None:
    """A map task run twice (a retry, or its result made again after its worker was lost) writes each attempt's
    pieces in a folder of its own: the driver reads only the paths of the result it took, never a mix."""
    from citeline.analyzer.scaleout import tasks as work

    traces = _scatter(demo_lines, tmp_path, files=2, seed=5)
    files = [str(f) for f in sorted(traces.iterdir())]
    out = work.Output(str(tmp_path / "run"), "r1")
    first, second = (
        client.submit(work.map_files, "attempts", 0, files, [0, 1], 4, out, pure=False).result() for _ in range(2)
    )
    assert sorted(first["pieces"]) == sorted(second["pieces"]) and first["pieces"]
    a, b = set(first["pieces"].values()), set(second["pieces"].values())
    assert not a & b and all(Path(p).exists() for p in a | b)
    assert {Path(p).parent.parent for p in a | b} == {tmp_path / "run" / work.PIECES}
