"""Partitioned runs beside one process: the same traces, one process vs a LocalCluster of 1 and 2 workers.

    python bench/scaleout.py [--n 100000] [--per-file 5000] [--partitions N] [--workdir DIR]

Synthetic distinct-answer traces (bench/synth.py --distinct) are analyzed three ways, each in a fresh
interpreter: ``analyze`` in one process (its own pool on every core), and ``analyze --engine dask`` on
a LocalCluster of one and of two one-thread worker processes (no nested pools: a worker's text work
runs in the worker). The cluster's start is timed apart from the run. Every partitioned run is checked
against the one-process run row for row (claim_results, EXCEPT ALL both ways). The CPU that other
processes used meanwhile is printed: the machine is shared.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent

_ONE = """
import json, time
from citeline.analyzer._analyze import analyze
if __name__ == "__main__":  # the run's pool spawns interpreters that import this file
    t = time.perf_counter()
    r = analyze({db!r}, gold={gold!r}, traces=[{traces!r}])
    print(json.dumps({{"seconds": time.perf_counter() - t, "summary": r.summary, "run_id": r.run_id}}))
"""

_DASK = """
import json, time
import distributed
from citeline.analyzer._partitioned import analyze_partitioned
if __name__ == "__main__":
    t = time.perf_counter()
    cluster = distributed.LocalCluster(n_workers={workers}, threads_per_worker=1, processes=True, host="127.0.0.1",
                                       dashboard_address="127.0.0.1:0")
    client = distributed.Client(cluster)
    start = time.perf_counter() - t
    t = time.perf_counter()
    marks = []
    r = analyze_partitioned({db!r}, gold={gold!r}, traces=[{traces!r}], client=client, partitions={partitions},
                            on_phase=lambda name: marks.append((name.split(" ")[0], time.perf_counter() - t)))
    seconds = time.perf_counter() - t
    ends = [m[1] for m in marks[1:]] + [seconds]
    phases = {{name: round(end - at, 1) for (name, at), end in zip(marks, ends)}}
    client.close(); cluster.close()
    print(json.dumps({{"seconds": seconds, "cluster_start": start, "summary": r.summary, "run_id": r.run_id,
                      "engine": r.engine, "phases": phases}}))
"""


def _busy_jiffies() -> int:
    with open("/proc/stat") as f:
        user, nice, system = (int(x) for x in f.readline().split()[1:4])
    return user + nice + system


def _timed(code: str, cwd: Path) -> dict[str, Any]:
    """Run ``code`` in a fresh interpreter; its JSON line, with the CPU the whole machine used meanwhile."""
    script = cwd / "phase.py"
    script.write_text(code)
    busy = _busy_jiffies()
    t = time.perf_counter()
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, check=False, cwd=str(HERE))
    if out.returncode:
        sys.exit(f"{script} failed:\n{out.stderr[-3000:]}")
    wall = time.perf_counter() - t
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    result["machine_cpu_s"] = (_busy_jiffies() - busy) / 100
    result["wall_s"] = wall
    return result


def _same_rows(one: Path, run_one: str, two: Path, run_two: str) -> bool:
    import duckdb

    con = duckdb.connect()
    try:
        con.execute(f"ATTACH '{one}' AS a (READ_ONLY)")
        con.execute(f"ATTACH '{two}' AS b (READ_ONLY)")
        for table in ("claim_results", "case_results"):
            a = f"SELECT * EXCLUDE (run_id) FROM a.{table} WHERE run_id = '{run_one}'"
            b = f"SELECT * EXCLUDE (run_id) FROM b.{table} WHERE run_id = '{run_two}'"
            for q in (f"{a} EXCEPT ALL {b}", f"{b} EXCEPT ALL {a}"):
                if con.execute(f"SELECT count(*) FROM ({q})").fetchall()[0][0]:
                    return False
        return True
    finally:
        con.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--per-file", type=int, default=5_000)
    ap.add_argument("--partitions", type=int, default=8)
    ap.add_argument("--workdir", type=Path)
    args = ap.parse_args()
    sys.path.insert(0, str(HERE))
    import synth

    with tempfile.TemporaryDirectory(prefix="citeline-scaleout-", dir=args.workdir) as tmp:
        root = Path(tmp)
        gold, traces = root / "gold.yaml", root / "traces"
        synth.gold(gold)
        size = synth.write_traces(traces, args.n, per_file=args.per_file, distinct=True)
        print(f"{args.n:,} distinct-answer traces, {size / 1e6:,.0f} MB in {-(-args.n // args.per_file)} files")
        one = _timed(_ONE.format(db=str(root / "one.duckdb"), gold=str(gold), traces=str(traces)), root)
        rows = [("one process (its pool on every core)", one, None)]
        for workers in (1, 2):
            db = root / f"dask{workers}.duckdb"
            code = _DASK.format(workers=workers, db=str(db), gold=str(gold), traces=str(traces),
                                partitions=args.partitions)  # fmt: skip
            got = _timed(code, root)
            same = got["summary"] == one["summary"] and _same_rows(
                root / "one.duckdb", one["run_id"], db, got["run_id"]
            )
            rows.append((f"LocalCluster, {workers} one-thread worker(s)", got, same))
        print("| run | seconds | traces/s | cluster start s | machine CPU s | same rows |")
        print("|---|---:|---:|---:|---:|---|")
        for name, r, same in rows:
            start = f"{r['cluster_start']:.1f}" if "cluster_start" in r else "-"
            print(f"| {name} | {r['seconds']:.1f} | {args.n / r['seconds']:,.0f} | {start} | "
                  f"{r['machine_cpu_s']:.0f} | {'-' if same is None else ('yes' if same else 'NO')} |")  # fmt: skip
        for name, r, _same in rows[1:]:
            print(f"{name}: seconds per driver phase {r['phases']} (reading: map tasks and storing their spans; "
                  "classifying: the partitions still running after that; storing: the run's tables)")  # fmt: skip
            print(json.dumps(r["engine"]))


if __name__ == "__main__":
    main()
