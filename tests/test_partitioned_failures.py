"""A partitioned run's failures, contained: a worker killed mid-run (retried, the same rows), a partition that
fails twice and a map task killed twice (named, the rest the single run's), a lost map task's byte ranges named,
and a scheduler nobody runs (exit 2, naming it). On the session's LocalCluster (tests/dask_cluster.py) or one of
their own.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from bench import synth
from citeline.analyzer.cli.main import main
from citeline.analyzer.judges import RulesJudge
from citeline.analyzer.run.analyze import analyze
from citeline.analyzer.scaleout.partitioned import analyze_partitioned
from citeline.analyzer.store import connect
from citeline.examples.demo import gold_path
from tests.extras import needs
from tests.partitioned_helpers import (
    assert_same_run,
    except_all,
    write_lines,
)

distributed = needs("distributed", "a LocalCluster for --engine dask; also 'citeline[dask]'")

pytestmark = pytest.mark.cluster  # worker processes on loopback: make test-fast leaves them out


def test_an_unreachable_scheduler_exits_2_naming_it(
    demo_lines: list[bytes], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    traces = write_lines(demo_lines, tmp_path)
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


def test_a_worker_killed_mid_run_is_retried_with_the_same_rows(dask_client: Any, tmp_path: Path) -> None:
    synth.gold(tmp_path / "gold.yaml")
    synth.write_traces(tmp_path / "traces", 6000, per_file=1500, distinct=True)
    killed: list[int] = []
    done = threading.Event()

    seen = len(dask_client.get_events("citeline-partition"))  # earlier tests' runs

    def kill_the_first_worker_to_classify() -> None:
        while not done.is_set():
            for _t, msg in list(dask_client.get_events("citeline-partition"))[seen:]:
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
            client=dask_client,
            partitions=2,
        )
    finally:
        done.set()
        killer.join()
    assert killed, "no worker was killed"
    assert part.engine["retries"] >= 1 and part.engine["failed_partitions"] == []
    single = analyze(tmp_path / "s.duckdb", gold=tmp_path / "gold.yaml", traces=[tmp_path / "traces"])
    assert_same_run(single, tmp_path / "s.duckdb", part, tmp_path / "p.duckdb")
    dask_client.wait_for_workers(2, timeout=60)  # the nanny started it again


class _DiesOnAnyClaim(RulesJudge):
    """A judge plug-in that takes its process down (a native crash in a model runtime, say)."""

    def judge_many(self, items: Any) -> Any:
        os._exit(70)


def test_a_partition_that_fails_twice_is_named_and_the_run_says_so(demo_lines: list[bytes], tmp_path: Path) -> None:
    traces = write_lines(demo_lines, tmp_path)
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


def test_a_map_task_killed_twice_names_its_files_and_the_others_give_the_single_run_on_theirs(
    dask_client: Any, tmp_path: Path
) -> None:
    synth.gold(tmp_path / "gold.yaml")
    synth.write_traces(tmp_path / "traces", 2400, per_file=600, distinct=True)
    files = sorted((tmp_path / "traces").iterdir())
    seen = len(dask_client.get_events("citeline-map"))
    killed: list[int] = []
    done = threading.Event()

    def kill_map_task_2_each_time_it_starts() -> None:
        handled = seen
        while not done.is_set() and len(killed) < 2:
            events = list(dask_client.get_events("citeline-map"))
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
            client=dask_client,
            partitions=4,
            map_tasks=2,
        )
    finally:
        done.set()
        killer.join()
    dask_client.wait_for_workers(2, timeout=60)
    assert len(killed) == 2
    assert part.engine["failed_map_tasks"] == [2] and part.engine["failed_partitions"] == []
    [named] = [p for p in part.problems() if p.startswith("partitioned run:map task 2 of 2")]
    assert f"2 file(s) not read: {files[2]}, {files[3]}" in named and "KilledWorker" in named
    kept = files[:2]
    single = analyze(tmp_path / "s.duckdb", gold=tmp_path / "gold.yaml", traces=kept)
    for table in ("claim_results", "case_results"):
        assert except_all(tmp_path / "s.duckdb", single.run_id, tmp_path / "p.duckdb", part.run_id, table) == (0, 0)
    assert part.summary == single.summary and part.traces_read == single.traces_read == 1200
    assert part.engine["incomplete_traces"] == 0  # synthetic traces sit whole in one file: none lost a part
    assert any("may be in the files not read" in p for p in part.problems())


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
