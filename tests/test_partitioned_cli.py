"""``analyze --engine dask`` from the command line: on a scheduler it is given (saying how it ran), its progress on
a terminal and nothing on a pipe, and the worker settings it runs partitions with (and says so when a user's
cluster keeps Dask's samplers).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from citeline.analyzer.cli.main import main
from citeline.analyzer.run.analyze import analyze
from citeline.analyzer.scaleout.cluster import WORKER_CONFIG, local_cluster, worker_settings
from citeline.analyzer.scaleout.partitioned import analyze_partitioned
from citeline.examples.demo import gold_path
from tests.extras import needs
from tests.partitioned_helpers import (
    write_lines,
)

distributed = needs("distributed", "a LocalCluster for --engine dask; also 'citeline[dask]'")

pytestmark = pytest.mark.cluster  # worker processes on loopback: make test-fast leaves them out


def test_workers_run_without_the_samplers_that_take_the_gil(demo_lines: list[bytes], tmp_path: Path) -> None:
    """Dask's profiler and its 20 ms tick cost a GIL-bound partition about a third of its time: the
    workers of a LocalCluster citeline starts run with them off (compose's: tests/test_compose.py), and a
    run on workers that keep Dask's defaults says so, with the same rows."""
    # a cluster of its own, as citeline starts one (the session's is shared with tests that kill its workers)
    ours = local_cluster(2)
    client = distributed.Client(ours)
    try:
        got = client.run(worker_settings)
        assert len(got) == 2 and all(v == WORKER_CONFIG for v in got.values())
        traces = write_lines(demo_lines, tmp_path)
        quiet = analyze_partitioned(tmp_path / "a.duckdb", gold=gold_path(), traces=[traces], client=client)
    finally:
        client.close()
        ours.close()
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


def test_a_worker_its_nanny_restarts_keeps_the_worker_settings() -> None:
    """A worker killed mid-run (out of memory, a crash) comes back by its nanny and must run partitions as its
    first start did: with Dask's samplers off. They were set around the cluster's start only, and a restarted
    worker ran on Dask's defaults (the profiler on, a 20 ms tick), a third slower for the rest of the run."""
    import signal
    import time

    ours = local_cluster(1)
    client = distributed.Client(ours)
    try:
        first = client.run(os.getpid)
        assert list(client.run(worker_settings).values()) == [WORKER_CONFIG]
        for pid in first.values():
            os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 60
        while True:  # until the nanny's new worker answers (the old one's address may linger a moment)
            try:
                now = client.run(os.getpid)
            except Exception:  # noqa: BLE001 - the killed worker is still listed: ask again
                now = {}
            if now and not set(now.values()) & set(first.values()):
                break
            assert time.monotonic() < deadline, "the nanny did not start the worker again"
            time.sleep(0.2)
        assert list(client.run(worker_settings).values()) == [WORKER_CONFIG]
    finally:
        client.close()
        ours.close()


def test_the_command_line_runs_on_a_scheduler_and_says_how(
    dask_client: Any, demo_lines: list[bytes], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    traces = write_lines(demo_lines, tmp_path)
    single = analyze(tmp_path / "single.duckdb", gold=gold_path(), traces=[traces])
    code = main(
        [
            "analyze",
            "--engine",
            "dask",
            "--scheduler",
            dask_client.scheduler.address,
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
    assert out["engine"]["scheduler"] == dask_client.scheduler.address and out["engine"]["partitions"] == 2
    assert out["engine"]["split_files"] == 1 and out["engine"]["byte_ranges"] == 2  # one per worker thread
    assert sorted(out["problems"]) == sorted(single.problems())
    # reports read the merged run as any other
    assert main(["report", "--db", str(tmp_path / "p.duckdb"), "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["run_id"] == out["run_id"]


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
    dask_client: Any, demo_lines: list[bytes], tmp_path: Path
) -> None:
    traces = write_lines(demo_lines, tmp_path)
    argv = [
        "analyze",
        "--engine",
        "dask",
        "--scheduler",
        dask_client.scheduler.address,
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
