"""Partitioned runs beside one process: where a Dask run's time goes, and what more workers would buy.

    python bench/scaleout.py [--n 100000] [--per-file 5000] [--partitions 8] [--workdir DIR]

Synthetic distinct-answer traces (bench/synth.py --distinct) are analyzed four ways, each in a fresh
interpreter:

- **one process**: ``analyze`` with its own pool on every core (today's default);
- **one core**: ``analyze`` as a worker runs it, inside ``_workers.in_process()`` (no pool) with one
  DuckDB thread: the baseline a one-core worker's per-bucket throughput is held against;
- **LocalCluster of 1 and of 2 one-thread workers**: ``analyze --engine dask`` (no nested pools: a
  worker's text work runs in the worker). The cluster's start is timed apart from the run.

The partitioned runs report each task's own seconds (a map task's ingest and cut, a reduce task's
load, ``analyze`` and hand-back) and the driver's seconds storing spans and rows. From those the
bench prints the ratios the issue sets (#26: per-bucket throughput of a one-core worker >= 0.8x a
one-core process; 2 workers >= 0.9x one process on these 2 cores) and a projection to 8/32/128
workers: ``map / min(W, map tasks) + reduce / W + driver``, the driver's storing being the serial
part. Every run is checked against the one-process run row for row (claim_results and
case_results, EXCEPT ALL both ways). The CPU other processes used meanwhile is printed: the machine
is shared, so compare ratios within one run.

With ``--workdir`` the traces are written once into ``DIR/n<N>-per<P>/`` and reused by later runs
(1M traces are 13 GB and take minutes to write); the stores go in a temporary folder under it.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent

#: bytes of trace files per map task, as analyzer/scaleout/plan.py cuts a run (MAP_BYTES)
MAP_BYTES = 256 * 1024 * 1024

_MARKS = """
import json, time
marks, cpu_marks = [], []
t = time.perf_counter()
def mark(name):
    marks.append((name.split(" (")[0], time.perf_counter() - t))
    cpu_marks.append(time.process_time())
def phases(seconds):
    ends = [m[1] for m in marks[1:]] + [seconds]
    out = {}
    for (name, at), end in zip(marks, ends):
        out[name] = round(out.get(name, 0) + end - at, 2)
    return out
"""

_ONE = """
from citeline.analyzer import analyze
if __name__ == "__main__":  # the run's pool spawns interpreters that import this file
    t = time.perf_counter()
    r = analyze({db!r}, gold={gold!r}, traces=[{traces!r}], on_phase=mark)
    seconds = time.perf_counter() - t
    print(json.dumps({{"seconds": seconds, "summary": r.summary, "run_id": r.run_id, "phases": phases(seconds),
                      "ingest": marks[0][1] if marks else seconds, "judge": r.judge}}))
"""

_ONE_CORE = """
from citeline.analyzer import analyze
from citeline.analyzer.store import connect
from citeline.analyzer import workers as _workers
if __name__ == "__main__":
    t = time.perf_counter()
    con = connect({db!r})
    con.execute("SET threads = 1")  # as a one-thread worker's DuckDB
    with _workers.in_process():  # no pool: the text work in this process, as on a worker
        r = analyze({db!r}, con=con, gold={gold!r}, traces=[{traces!r}], on_phase=mark)
        summary = r.summary
    con.close()
    seconds = time.perf_counter() - t
    cpu = time.process_time()
    print(json.dumps({{"seconds": seconds, "summary": summary, "run_id": r.run_id, "phases": phases(seconds),
                      "ingest": marks[0][1] if marks else seconds, "cpu": cpu,
                      "cpu_after_ingest": cpu - (cpu_marks[0] if cpu_marks else cpu)}}))
"""

_DASK = """
import distributed
from citeline.analyzer.scaleout.cluster import local_cluster
from citeline.analyzer.scaleout.partitioned import analyze_partitioned
if __name__ == "__main__":
    t0 = time.perf_counter()
    cluster = local_cluster({workers})  # as analyze --engine dask starts one (its worker settings)
    client = distributed.Client(cluster)
    start = time.perf_counter() - t0
    t, c, own = time.perf_counter(), time.process_time(), time.thread_time()
    sched = client.run_on_scheduler(time.thread_time)  # the scheduler's event-loop thread, in this process
    r = analyze_partitioned({db!r}, gold={gold!r}, traces=[{traces!r}], client=client, partitions={partitions},
                            map_tasks={map_tasks}, on_phase=mark)
    seconds = time.perf_counter() - t
    # the driver's own thread; the scheduler's thread; the rest of this process: the driver's DuckDB threads
    # (its queries run in parallel there) and the client's comms
    sched = client.run_on_scheduler(time.thread_time) - sched
    thread_cpu, process_cpu = time.thread_time() - own, time.process_time() - c
    client.close(); cluster.close()
    print(json.dumps({{"seconds": seconds, "cluster_start": start, "summary": r.summary, "run_id": r.run_id,
                      "engine": r.engine, "phases": phases(seconds), "judge": r.judge,
                      "driver_thread_cpu": thread_cpu, "scheduler_cpu": sched,
                      "driver_other_cpu": max(0.0, process_cpu - thread_cpu - sched)}}))
"""


def _busy_jiffies() -> int:
    with open("/proc/stat") as f:
        user, nice, system = (int(x) for x in f.readline().split()[1:4])
    return user + nice + system


def _own_cpu() -> float:
    """CPU seconds of this process's finished children (each run's interpreter and the processes it waited for)."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _timed(code: str, cwd: Path) -> dict[str, Any]:
    """Run ``code`` in a fresh interpreter; its JSON line, with its CPU and what the rest of the machine used."""
    script = cwd / "phase.py"
    script.write_text(_MARKS + code)  # every run marks its phases
    busy, own = _busy_jiffies(), _own_cpu()
    t = time.perf_counter()
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, check=False, cwd=str(HERE))
    if out.returncode:
        sys.exit(f"{script} failed:\n{out.stderr[-3000:]}")
    wall = time.perf_counter() - t
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    result["cpu_s"] = _own_cpu() - own
    result["others_cpu_s"] = max(0.0, (_busy_jiffies() - busy) / 100 - result["cpu_s"])
    result["wall_s"] = wall
    return result


def _same_rows(one: Path, run_one: str, two: Path, run_two: str) -> bool:
    import duckdb

    from citeline.analyzer.store import rows_of

    con = duckdb.connect()
    try:
        con.execute("ATTACH $p AS a (READ_ONLY)", {"p": str(one)})
        con.execute("ATTACH $p AS b (READ_ONLY)", {"p": str(two)})
        rows = {c: rows_of(con, c) for c in ("a", "b")}  # a partitioned run's rows are its Parquet files

        def of(c: str, table: str) -> str:
            return f"({rows[c][table]})" if rows[c][table] else f"{c}.{table}"

        for table in ("claim_results", "case_results"):  # names from this list, never user input
            a = f"SELECT * EXCLUDE (run_id) FROM {of('a', table)} WHERE run_id = $a"
            b = f"SELECT * EXCLUDE (run_id) FROM {of('b', table)} WHERE run_id = $b"
            for q in (f"{a} EXCEPT ALL {b}", f"{b} EXCEPT ALL {a}"):
                if con.execute(f"SELECT count(*) FROM ({q})", {"a": run_one, "b": run_two}).fetchall()[0][0]:
                    return False
        return True
    finally:
        con.close()


def _traces(workdir: Path | None, n: int, per_file: int) -> tuple[Path, Path, int, Path | None]:
    """The gold file, the traces folder and its bytes: written once into ``workdir`` and reused."""
    sys.path.insert(0, str(HERE))
    import synth

    own = None
    if workdir is None:
        own = Path(tempfile.mkdtemp(prefix="citeline-scaleout-"))
        workdir = own
    root = workdir / f"n{n}-per{per_file}"
    made = root / "made.json"
    if made.exists():
        return root / "gold.yaml", root / "traces", int(json.loads(made.read_text())["bytes"]), own
    shutil.rmtree(root, ignore_errors=True)  # a write cut short: start again
    root.mkdir(parents=True)
    t = time.perf_counter()
    synth.gold(root / "gold.yaml")
    size = synth.write_traces(root / "traces", n, per_file=per_file, distinct=True)
    made.write_text(json.dumps({"n": n, "per_file": per_file, "bytes": size}))
    print(f"wrote the traces in {time.perf_counter() - t:.0f} s into {root}")
    return root / "gold.yaml", root / "traces", size, own


def _task_sums(engine: dict[str, Any]) -> dict[str, float]:
    s = engine["seconds"]
    return {
        "map": sum(m["ingest"] + m["cut"] for m in s["map"]),
        "ingest": sum(m["ingest"] for m in s["map"]),
        "cut": sum(m["cut"] for m in s["map"]),
        "load": sum(r["load"] for r in s["reduce"]),
        "analyze": sum(r["analyze"] for r in s["reduce"]),
        "hand_back": sum(r["rows"] for r in s["reduce"]),
        "reduce": sum(r["load"] + r["analyze"] + r["rows"] for r in s["reduce"]),
        "store_ingest": float(s.get("store_ingest", 0.0)),  # each map task's file_traces and files
        "store_spans": float(s["store_spans"]),
        "store_rows": float(s["store_rows"]),
        "map_tasks": float(len(s["map"])),
        "map_cpu": sum(m.get("cpu", 0.0) for m in s["map"]),
        "reduce_cpu": sum(r.get("cpu", 0.0) for r in s["reduce"]),
    }


def _scheduler_fit(dask: dict[int, dict[str, Any]], partitions: int) -> tuple[float, float]:
    """The scheduler's CPU as ``rate`` per second of the run's wall time (heartbeats and periodic callbacks)
    plus ``per_task`` per task scheduled, solved from the 1- and 2-worker runs (the same tasks, different
    walls); a negative solution (noise) is clamped to 0."""
    tasks = {w: len(d["engine"]["seconds"]["map"]) + partitions + 1 for w, d in dask.items()}
    (w1, one), (w2, two) = sorted(dask.items())
    if tasks[w1] != tasks[w2] or one["seconds"] == two["seconds"]:
        return 0.0, 0.0
    rate = max(0.0, (one["scheduler_cpu"] - two["scheduler_cpu"]) / (one["seconds"] - two["seconds"]))
    per_task = max(0.0, (one["scheduler_cpu"] - rate * one["seconds"]) / tasks[w1])
    return rate, per_task


def _projection(
    sums: dict[str, float], finish: float, n: int, size: int, scale_to: int, sched: tuple[float, float]
) -> list[str]:
    """time(W) = (map / min(W, map tasks) + reduce / W + driver + per_task * tasks(W)) / (1 - rate), at the
    measured size and at ``scale_to`` traces: the scheduler's CPU (``sched``: its rate per second of the
    run and its cost per task, fitted by _scheduler_fit) counted as serial, a W-worker run cut into W map
    tasks or more and 4W partitions."""
    rate, per_task = sched
    lines = [  # the scheduler's share
        f"the scheduler, fitted from the 1- and 2-worker runs: {1000 * rate:.1f} ms of CPU per second of the run, "
        f"{1000 * per_task:.2f} ms per task"
    ]
    for traces in (n, scale_to):
        k = traces / n
        maps = max(sums["map_tasks"], math.ceil(size * k / MAP_BYTES))
        driver = (sums["store_ingest"] + sums["store_spans"] + sums["store_rows"] + finish) * k
        mapped, reduced = sums["map"] * k, sums["reduce"] * k

        terms = (mapped, reduced, driver, maps)
        one = _model(1, terms, sched)
        lines.append(f"projection for {traces:,} traces ({maps:.0f} map tasks; driver serial {driver:.1f} s):")
        lines.append(
            "| workers | map s | reduce s | driver s | scheduler s | total s | traces/s | efficiency | held back by |"
        )
        lines.append("|---:|---:|---:|---:|---:|---:|---:|---:|---|")
        for w in (1, 2, 8, 32, 128):
            m, r = mapped / min(w, maps), reduced / w
            t = _model(w, terms, sched)
            sch = t - (m + r + driver)
            # what keeps W workers from W times one: the map beyond its even share, and the serial parts
            losses = {
                "the map (too few map tasks)": m - mapped / w,
                "the driver's storing": driver,
                "the scheduler": sch,
            }
            worst = max(losses, key=lambda p: losses[p])
            eff = one / (w * t)
            lines.append(
                f"| {w} | {m:.1f} | {r:.1f} | {driver:.1f} | {sch:.1f} | {t:.1f} | {traces / t:,.0f} | "
                f"{eff:.2f} | {worst if eff < 0.8 else '-'} |"
            )
    return lines


def _model(w: int, terms: tuple[float, float, float, float], sched: tuple[float, float]) -> float:
    """The model's time at ``w`` workers (see _projection)."""
    mapped, reduced, driver, maps = terms
    rate, per_task = sched
    return (mapped / min(w, maps) + reduced / w + driver + per_task * (max(maps, w) + 4 * w + 1)) / (1 - rate)


def _gold_parse_seconds(gold: Path) -> float:
    """What reading the gold set costs once: the driver pays it, and ships the set as read to the workers."""
    from citeline.analyzer.gold.goldset import load_gold

    t = time.perf_counter()
    load_gold(gold)
    return time.perf_counter() - t


def _verdict(got: float, target: float) -> str:
    return f"{got:.2f}x (target >= {target}x: {'met' if got >= target else 'NOT met'})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--per-file", type=int, default=5_000)
    ap.add_argument("--partitions", type=int, default=8)
    ap.add_argument("--workdir", type=Path, help="where the traces are written once and reused")
    ap.add_argument(
        "--skip-core",
        action="store_true",
        help="leave out the one-core run (at 1M it is the longest and no bar of #38 needs it)",
    )
    ap.add_argument("--scale-to", type=int, default=20_000_000, help="traces of the second projection (a night)")
    ap.add_argument(
        "--simulate",
        type=lambda v: [int(x) for x in v.split(",") if x],
        default=[8, 32],
        help="logical cluster sizes run time-sliced on a LocalCluster of 2 (their cut: W map tasks, 4W partitions)",
    )
    args = ap.parse_args()
    gold, traces, size, own = _traces(args.workdir, args.n, args.per_file)
    root = Path(tempfile.mkdtemp(prefix="citeline-scaleout-stores-", dir=args.workdir))
    try:
        print(
            f"{args.n:,} distinct-answer traces, {size / 1e6:,.0f} MB in {-(-args.n // args.per_file)} files; "
            f"{os.cpu_count()} cores"
        )
        runs: list[tuple[str, dict[str, Any], bool | None]] = []
        one = _timed(_ONE.format(db=str(root / "one.duckdb"), gold=str(gold), traces=str(traces)), root)
        runs.append(("one process (its pool on every core)", one, None))
        core = None
        if not args.skip_core:
            core = _timed(_ONE_CORE.format(db=str(root / "core.duckdb"), gold=str(gold), traces=str(traces)), root)
            runs.append(
                (
                    "one core (no pool, 1 DuckDB thread)",
                    core,
                    _same_rows(root / "one.duckdb", one["run_id"], root / "core.duckdb", core["run_id"]),
                )
            )
        dask: dict[int, dict[str, Any]] = {}
        for workers in (1, 2):
            db = root / f"dask{workers}.duckdb"
            code = _DASK.format(
                workers=workers,
                db=str(db),
                gold=str(gold),
                traces=str(traces),
                partitions=args.partitions,
                map_tasks=None,
            )
            got = dask[workers] = _timed(code, root)
            same = got["summary"] == one["summary"] and _same_rows(
                root / "one.duckdb", one["run_id"], db, got["run_id"]
            )
            runs.append((f"LocalCluster, {workers} one-thread worker(s)", got, same))
        args.gold = gold
        _report(args, size, runs, one, core, dask)
        simulated: dict[int, dict[str, Any]] = {}
        for w in args.simulate:  # the run cut as a cluster of w one-thread workers cuts it, time-sliced on 2
            db = root / f"sim{w}.duckdb"
            code = _DASK.format(
                workers=2, db=str(db), gold=str(gold), traces=str(traces), partitions=4 * w, map_tasks=w
            )
            got = simulated[w] = _timed(code, root)
            got["same"] = got["summary"] == one["summary"] and _same_rows(
                root / "one.duckdb", one["run_id"], db, got["run_id"]
            )
            shutil.rmtree(str(db) + ".runs", ignore_errors=True)
        _bars(args.n, one, dask, simulated)
    finally:
        shutil.rmtree(root, ignore_errors=True)
        if own is not None:
            shutil.rmtree(own, ignore_errors=True)


def _report(
    args: argparse.Namespace,
    size: int,
    runs: list[tuple[str, dict[str, Any], bool | None]],
    one: dict[str, Any],
    core: dict[str, Any] | None,
    dask: dict[int, dict[str, Any]],
) -> None:
    n = args.n
    print("| run | seconds | traces/s | cluster start s | its CPU s | others' CPU s | same rows |")
    print("|---|---:|---:|---:|---:|---:|---|")
    for name, r, same in runs:
        start = f"{r['cluster_start']:.1f}" if "cluster_start" in r else "-"
        print(
            f"| {name} | {r['seconds']:.1f} | {n / r['seconds']:,.0f} | {start} | {r['cpu_s']:.0f} | "
            f"{r['others_cpu_s']:.0f} | {'-' if same is None else ('yes' if same else 'NO')} |"
        )
    for name, r, _same in runs:
        print(f"{name}: driver's phases, s: {r['phases']}")
    sums = {w: _task_sums(d["engine"]) for w, d in dask.items()}
    print(
        "| cluster | map tasks | ingest s | cut s | reduce load s | analyze s | hand back s | "
        "driver: files s | driver: spans s | driver: rows s | storing the run s |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for w, s in sums.items():
        finish = dask[w]["phases"].get("storing the run", 0.0)
        print(
            f"| {w} worker(s) | {s['map_tasks']:.0f} | {s['ingest']:.1f} | {s['cut']:.1f} | {s['load']:.1f} | "
            f"{s['analyze']:.1f} | {s['hand_back']:.1f} | {s['store_ingest']:.1f} | {s['store_spans']:.1f} | "
            f"{s['store_rows']:.1f} | "
            f"{finish:.1f} |"
        )
    s1 = sums[1]
    if core is not None:
        _against_one_core(n, s1, core)
    best = one["seconds"] / (dask[2]["cpu_s"] / 2)  # two idle cores run the 2-worker run's CPU in half its sum
    print(
        f"CPU seconds of the whole run: one process {one['cpu_s']:.0f}, 2 workers {dask[2]['cpu_s']:.0f}: on two "
        f"idle cores the 2-worker run could be at best {best:.2f}x the one-process run measured here"
    )
    print(f"2 workers vs one process on these cores: {_verdict(one['seconds'] / dask[2]['seconds'], 0.9)}")
    print(
        f"map/shuffle cost (1 worker): map tasks {s1['map']:.1f} s (ingest {s1['ingest']:.1f}, cutting and "
        f"writing pieces {s1['cut']:.1f}), reduce tasks loading pieces {s1['load']:.1f} s; the driver storing "
        f"files {s1['store_ingest']:.1f} s, spans {s1['store_spans']:.1f} s and rows {s1['store_rows']:.1f} s"
    )
    parse = _gold_parse_seconds(args.gold)
    print(
        f"the driver reads the gold set once ({parse:.2f} s here) and ships it as read: no partition parses it "
        f"(it cost each of the {args.partitions} partitions as much before)"
    )
    finish = dask[1]["phases"].get("storing the run", 0.0)
    for line in _projection(s1, finish, n, size, args.scale_to, _scheduler_fit(dask, args.partitions)):
        print(line)
    for w, d in dask.items():
        print(f"{w} worker(s): {json.dumps({k: v for k, v in d['engine'].items() if k != 'seconds'})}")


def _against_one_core(n: int, s1: dict[str, float], core: dict[str, Any]) -> None:
    """A one-core worker's throughput against a one-core process (issue #26's bar)."""
    core_classify = core["seconds"] - core["ingest"]
    print(f"one core: ingest {core['ingest']:.1f} s, the rest (classification and storing) {core_classify:.1f} s")
    per_bucket = n / s1["reduce"]
    print(
        f"per-bucket throughput of a one-core worker: {per_bucket:,.0f} traces/s (reduce tasks' own seconds) vs "
        f"{n / core_classify:,.0f} for the one-core process after ingest: "
        f"{_verdict(per_bucket / (n / core_classify), 0.8)}"
    )
    if s1["reduce_cpu"]:  # CPU seconds: what a busy machine's other processes move least
        cpu_bucket, cpu_core = n / s1["reduce_cpu"], n / core["cpu_after_ingest"]
        print(
            f"the same in CPU seconds: reduce tasks {s1['reduce_cpu']:.1f} s ({cpu_bucket:,.0f} traces/s) vs the "
            f"one-core process after ingest {core['cpu_after_ingest']:.1f} s ({cpu_core:,.0f} traces/s): "
            f"{_verdict(cpu_bucket / cpu_core, 0.8)}; map tasks {s1['map_cpu']:.1f} s"
        )
    whole = n / (s1["map"] + s1["reduce"])
    print(
        f"a one-core worker's whole share (map + reduce tasks): {whole:,.0f} traces/s vs {n / core['seconds']:,.0f} "
        f"for the whole one-core run: {whole / (n / core['seconds']):.2f}x"
    )


#: the driver's serial storing per trace at 1M before issue #38 (docs/scale-out.md): the bar is 10x below it
BEFORE_DRIVER_MS = 0.085
_STORING = ("store_ingest", "store_spans", "store_rows", "commit")


def _cost(n: int, w: int, run: dict[str, Any]) -> dict[str, float]:
    """A cut run's measured CPU seconds per phase, and the model's time at ``w`` one-thread workers:
    map / min(w, map tasks) + (reduce + judgment waits) / w + the driver's thread + the scheduler (serial)."""
    s = run["engine"]["seconds"]
    mine = s["driver_thread_cpu"]
    cost = {
        "map": sum(m.get("cpu", 0.0) for m in s["map"]),
        "reduce": sum(r.get("cpu", 0.0) for r in s["reduce"]),
        "wait": sum(r.get("judgments", {}).get("wait_s", 0.0) for r in s["reduce"]),
        "board": sum(r.get("judgments", {}).get("claim_s", 0.0) for r in s["reduce"]),
        "storing": sum(mine.get(k, 0.0) for k in _STORING),
        "finish": mine.get("finish", 0.0),
        "driver": float(run["driver_thread_cpu"]) + float(run.get("driver_other_cpu", 0.0)),
        "duckdb_comms": float(run.get("driver_other_cpu", 0.0)),
        "scheduler": float(run["scheduler_cpu"]),
        "maps": float(len(s["map"])),
    }
    serial = cost["driver"] + cost["scheduler"]
    work = cost["map"] + cost["reduce"] + cost["wait"]  # on one worker: every task in turn
    at_w = cost["map"] / min(w, cost["maps"]) + (cost["reduce"] + cost["wait"]) / w
    cost["additive"] = (work + serial) / (w * (at_w + serial))
    cost["overlapped"] = max(work, serial) / (w * max(at_w, serial))  # each model's time(1) over W times its time(W)
    cost["per_trace_ms"] = 1000 * serial / n
    return cost


def _bottleneck(cost: dict[str, float], w: int) -> str:
    """What bounds the run at ``w`` workers next: the largest serial part, or the map when there are too few
    map tasks."""
    parts = {
        "the scheduler (one process: its work per task, a task per map task and per partition)": cost["scheduler"],
        "the driver's storing (a row per file, each partition's small rows, the commit)": cost["storing"],
        "the driver's finish (coverage and problems over the run's rows, the runs row)": cost["finish"],
        "the rest of the driver's thread (listing, planning, shipping the context, collecting)": cost["driver"]
        - cost["duckdb_comms"]
        - cost["storing"]
        - cost["finish"],
        "the driver's DuckDB threads and the client's comms": cost["duckdb_comms"],
    }
    if cost["maps"] < w:
        parts["the map phase (fewer map tasks than workers)"] = cost["map"] / cost["maps"]
    return max(parts, key=lambda p: parts[p])


def _bars(n: int, one: dict[str, Any], dask: dict[int, dict[str, Any]], simulated: dict[int, dict[str, Any]]) -> None:
    """Each acceptance line of issue #38 this bench measures, against its bar."""
    print(
        "| cut as | map CPU s | reduce CPU s | judgment waits s | driver CPU s (storing, finish; DuckDB threads and "
        "comms) | scheduler CPU s | serial ms/trace | efficiency at W: additive | overlapped | same rows | asked |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|")
    costs = {}
    for w, run in sorted(simulated.items()):
        c = costs[w] = _cost(n, w, run)
        print(
            f"| {w} workers ({c['maps']:.0f} map tasks, {4 * w} partitions) | {c['map']:.1f} | {c['reduce']:.1f} | "
            f"{c['wait']:.1f} | {c['driver']:.2f} ({c['storing']:.2f}, {c['finish']:.2f}; {c['duckdb_comms']:.2f}) | "
            f"{c['scheduler']:.2f} | "
            f"{c['per_trace_ms']:.4f} | {c['additive']:.2f} | {c['overlapped']:.2f} | "
            f"{'yes' if run['same'] else 'NO'} | {run['judge']['asked']} |"
        )
    two = dask[2]
    storing = sum(two["engine"]["seconds"]["driver_thread_cpu"].get(k, 0.0) for k in _STORING)
    ms = 1000 * storing / n
    print("\nacceptance (issue #38), this machine:")
    print(
        f"- driver's serial storing CPU per trace (2 workers, its own thread): {ms:.4f} ms vs {BEFORE_DRIVER_MS} ms "
        f"before: {BEFORE_DRIVER_MS / max(ms, 1e-9):.1f}x lower (bar: 10x, "
        f"{'met' if ms * 10 <= BEFORE_DRIVER_MS else 'NOT met'}); the driver's whole thread "
        f"{1000 * two['driver_thread_cpu'] / n:.4f} ms, the scheduler {1000 * two['scheduler_cpu'] / n:.4f} ms"
    )
    for w, c in sorted(costs.items()):
        print(
            f"- measured at {w} logical workers: efficiency {c['additive']:.2f} additive, {c['overlapped']:.2f} "
            f"overlapped (bar >= 0.8: {'met' if c['additive'] >= 0.8 else 'NOT met'} additive, "
            f"{'met' if c['overlapped'] >= 0.8 else 'NOT met'} overlapped); next bottleneck: {_bottleneck(c, w)}"
        )
    ratio = one["seconds"] / two["seconds"]
    print(f"- 2 workers vs one process: {ratio:.2f}x wall (bar >= 0.95: {'met' if ratio >= 0.95 else 'NOT met'})")
    asked = {"one process": one["judge"]["asked"], **{f"{w} worker(s)": d["judge"]["asked"] for w, d in dask.items()}}
    asked.update({f"cut for {w}": d["judge"]["asked"] for w, d in simulated.items()})
    equal = len(set(asked.values())) == 1
    print(f"- asked: {asked} ({'equal' if equal else 'NOT equal'})")


if __name__ == "__main__":
    main()
