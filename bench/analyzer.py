"""Analyzer throughput: ingest and classification timed apart, peak memory, and a per-trace Python baseline.

    python bench/analyzer.py [--n 100000] [--baseline-n 20000] [--workdir DIR]
                             [--distinct] [--content] [--collector] [--second-run]
    python bench/analyzer.py --corpus-only [--n 100000] [--distinct] [--runs 3] [--workdir DIR]

Synthetic traces shaped like the example app (6 spans, 20 retrieved chunks, 8 in
context, 3 cited claims; see bench/synth.py) are written as OTLP/JSON lines.
Each phase runs in its own process so its peak RSS is its own; the CPU other
processes used meanwhile is printed (the machine is shared). Two baselines
(bench/baseline.py) run over the first --baseline-n traces of the same files and
are compared by traces per second: the straightforward one-process loop, and the
strong one (2 processes, text work cached per distinct text). --distinct words
every answer differently, as production answers are.

--corpus-only times production traffic with no gold case: the same traces classified
against the corpus alone (``analyze(corpus=...)``, every trace on the corpus basis) and
against the gold set, each from a copy of the one ingested store with an empty judgment
cache, --runs times alternating, and prints the medians and their ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


def _phase(code: str) -> dict[str, Any]:
    """Run ``code`` in a fresh interpreter; it prints a JSON dict; add its peak RSS."""
    # VmHWM, not ru_maxrss: the latter carries the parent's peak over fork + exec
    wrapped = (
        code + "\nimport json, re\n"
        "hwm = int(re.search(r'VmHWM:\\s+(\\d+)', open('/proc/self/status').read()).group(1))\n"
        "print(json.dumps({**OUT, 'peak_mib': hwm / 1024}))"
    )
    out = subprocess.run([sys.executable, "-c", wrapped], capture_output=True, text=True, check=True, cwd=str(HERE))
    return json.loads(out.stdout.strip().splitlines()[-1])


INGEST = """
import time, sys
try:  # a tree from before the layout of issue #32 (bench/versions.py --ref): the old names first, since
    # a name that tree lacks would be found in the installed tree instead
    from citeline.analyzer._store import connect
    from citeline.analyzer._ingest import ingest
except ImportError:
    from citeline.analyzer.store import connect
    from citeline.analyzer.sources.ingest import ingest
con = connect({db!r})
c, t = time.process_time(), time.perf_counter()
rep = ingest(con, [{traces!r}])
OUT = {{'seconds': time.perf_counter() - t, 'bytes': rep.bytes, 'spans': rep.spans_added,
        'cpu': time.process_time() - c}}  # DuckDB's threads are this process's: all of ingest's CPU
"""

CLASSIFY = """
import os, resource, time
from citeline.analyzer import analyze  # public in every tree bench/versions.py compares
TICK = os.sysconf('SC_CLK_TCK')
def children():  # each live child of this process: (pid, the fields of /proc/pid/stat after its name)
    me, out = os.getpid(), []
    for d in os.listdir('/proc'):
        if d.isdigit():
            try:
                with open('/proc/' + d + '/stat') as f:
                    rest = f.read().rsplit(')', 1)[1].split()
            except OSError:
                continue
            if int(rest[1]) == me:  # ppid
                out.append((int(d), rest))
    return out
def cpu():  # (this process's CPU, each live child's CPU by pid, the CPU of children that have ended)
    kids = {{pid: (int(rest[11]) + int(rest[12])) / TICK for pid, rest in children()}}  # utime, stime: fields 14, 15
    ended = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time(), kids, ended.ru_utime + ended.ru_stime
import threading
def mib(pid, field):  # a /proc status field of a process in MiB: VmRSS now, VmHWM its own peak so far (never falls)
    try:
        with open('/proc/' + str(pid) + '/status') as f:
            for line in f:
                if line.startswith(field + ':'):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0
together, sampling = [0.0], [True]
# a bound from peaks rather than moments: this process's peak (VmHWM) read each time its children (the run's pool)
# have all stopped, which covers every moment they ran, plus each child's own peak (VmHWM, read every 50 ms while
# it lived: only its last 50 ms can escape)
kid_peak, driver_at_stop, was_live = {{}}, [None], [False]
def sample():  # this process and its live children every 50 ms (the children looked up every 0.5 s)
    me, n, kids = os.getpid(), 0, []
    while sampling[0]:
        if n % 10 == 0:
            kids = [pid for pid, _ in children()]
        n += 1
        live = [k for k in kids if os.path.exists('/proc/' + str(k))]
        for k in live:
            kid_peak[k] = max(kid_peak.get(k, 0.0), mib(k, 'VmHWM'))
        if was_live[0] and not live:
            driver_at_stop[0] = mib(me, 'VmHWM')
        was_live[0] = bool(live)
        together[0] = max(together[0], mib(me, 'VmRSS') + sum(mib(k, 'VmRSS') for k in live))
        time.sleep(0.05)
threading.Thread(target=sample, daemon=True).start()
marks = []
t = time.perf_counter()
first = cpu()
r = analyze({db!r}, {evidence}={gold!r}, on_phase=lambda name: marks.append((name, time.perf_counter(), cpu())))
end = time.perf_counter()
sampling[0] = False
if was_live[0] or driver_at_stop[0] is None:  # a pool still up when the run returned (or none): the peak now
    driver_at_stop[0] = mib(os.getpid(), 'VmHWM')
steps = [('gold + traces to cases', t, first)] + marks[1:] + [('end', end, cpu())]
phases, phase_cpu = {{}}, {{}}
for a, b in zip(steps, steps[1:]):  # slices of a large run add up under one name
    name = a[0].split(' (')[0]
    phases[name] = phases.get(name, 0.0) + b[1] - a[1]
    (d0, k0, e0), (d1, k1, e1) = a[2], b[2]
    per = sorted((k1[p] - k0.get(p, 0.0) for p in k1), reverse=True)  # each worker's CPU in the phase
    gone = (e1 - e0) - sum(v for p, v in k0.items() if p not in k1)  # children that ended in it
    was = phase_cpu.get(name, {{'driver': 0.0, 'workers': [], 'ended': 0.0}})
    width = max(len(was['workers']), len(per))
    was['workers'] = [(was['workers'] + [0.0] * width)[i] + (per + [0.0] * width)[i] for i in range(width)]
    was['driver'] += d1 - d0
    was['ended'] += max(0.0, gone)
    phase_cpu[name] = was
counts = r.summary  # not r.claims: that would load every claim row into memory
# the run's worker processes are children of this one: the largest one's peak RSS
OUT = {{'seconds': end - t, 'claims': sum(counts.values()), 'not_ok': sum(counts.values()) - counts['ok'],
        'phases': phases, 'phase_cpu': phase_cpu,
        'worker_peak_mib': resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024,
        'together_mib': together[0],
        'driver_at_stop_mib': driver_at_stop[0],
        'kid_peaks_mib': sorted(kid_peak.values(), reverse=True),
        'asked': r.judge['asked'], 'summary': counts}}
"""

SECOND = """
import time
from citeline.analyzer import analyze
t = time.perf_counter()
r = analyze({db!r}, gold={gold!r}, traces=[{traces!r}])
counts = r.summary
OUT = {{'seconds': time.perf_counter() - t, 'claims': sum(counts.values()), 'traces': r.traces_read}}
"""

BASELINE = """
import sys
from pathlib import Path
import baseline
import resource
OUT = baseline.run(sorted(Path({traces!r}).glob('*.jsonl')), {gold!r}, {limit}, strong={strong})
OUT['workers_peak_mib'] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
"""


def phase_cpu(cpu: dict[str, Any], wall: float) -> str:
    """One phase's CPU seconds: the driver's, each worker's, and how busy the cores were (CPU / wall / cores)."""
    workers = [w for w in cpu["workers"] if w >= 0.05]
    total = cpu["driver"] + sum(cpu["workers"]) + cpu["ended"]
    busy = total / wall / (os.cpu_count() or 1) if wall > 0 else 0.0
    parts = f"driver {cpu['driver']:.1f}" + "".join(f" + worker {w:.1f}" for w in workers)
    parts += f" + ended {cpu['ended']:.1f}" if cpu["ended"] >= 0.05 else ""
    return f"CPU {total:6.1f} s ({parts}; cores {busy:.0%} busy)"


def _busy_jiffies() -> int:
    """CPU time used on the whole machine so far (all cores), in clock ticks."""
    fields = [int(x) for x in open("/proc/stat").readline().split()[1:]]  # noqa: SIM115
    idle = fields[3] + fields[4]  # idle + iowait
    return sum(fields[:8]) - idle


def _timed(code: str) -> dict[str, Any]:
    """``_phase`` plus the CPU other processes used meanwhile (the machine is shared): seconds of CPU."""
    import resource

    tick = os.sysconf("SC_CLK_TCK")
    before_busy, before_child = _busy_jiffies(), resource.getrusage(resource.RUSAGE_CHILDREN)
    out = _phase(code)
    after_busy, after_child = _busy_jiffies(), resource.getrusage(resource.RUSAGE_CHILDREN)
    ours = (after_child.ru_utime + after_child.ru_stime) - (before_child.ru_utime + before_child.ru_stime)
    out["other_cpu_s"] = max(0.0, (after_busy - before_busy) / tick - ours)
    return out


def _memory(cls: dict[str, Any]) -> None:
    """The run's memory: each process's own peak, all of them together as sampled, and bounded by their peaks."""
    print(
        f"  workers: largest peak {cls['worker_peak_mib']:,.0f} MiB each, {os.cpu_count()} of them; "
        f"each process at its own peak {cls['peak_mib'] + (os.cpu_count() or 1) * cls['worker_peak_mib']:,.0f} MiB; "
        f"all processes together at most {cls['together_mib']:,.0f} MiB (sampled every 50 ms; issue #37: <= 2048 MiB)"
    )
    if cls.get("kid_peaks_mib"):  # (a tree bench/versions.py compares may print without it)
        kids = cls["kid_peaks_mib"]
        bound = max(cls["driver_at_stop_mib"] + sum(kids), cls["peak_mib"])
        print(
            f"  bounded: the driver's peak while any child of it ran {cls['driver_at_stop_mib']:,.0f} MiB + each "
            f"child's own peak ({', '.join(f'{k:,.0f}' for k in kids)} MiB), or the driver's peak after: at most "
            f"{bound:,.0f} MiB ({'within' if bound <= 2048 else 'over'} issue #37's 2048 MiB)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000, help="synthetic traces (default 100,000)")
    parser.add_argument("--baseline-n", type=int, default=20_000, help="traces the Python baseline reads")
    parser.add_argument("--workdir", help="keep generated files here (default: a temp dir)")
    parser.add_argument(
        "--distinct",
        action="store_true",
        help="every answer worded differently (extra words, sentence templates), as in production",
    )
    parser.add_argument(
        "--content",
        action="store_true",
        help="traces also carry chunk text and OpenInference documents, as record_content=True writes them",
    )
    parser.add_argument(
        "--collector",
        action="store_true",
        help="spans written as a Collector batches them: many traces a line, a trace split across lines and files",
    )
    parser.add_argument(
        "--corpus-only",
        action="store_true",
        help="classify the traces against the corpus alone (no gold case) and against the gold set; medians, ratio",
    )
    parser.add_argument("--runs", type=int, default=3, help="with --corpus-only: runs of each (default 3)")
    parser.add_argument(
        "--second-run",
        action="store_true",
        help="then analyze --n more traces (ingest + classify in one call) into the store that holds the first run",
    )
    args = parser.parse_args()

    sys.path.insert(0, str(HERE))
    from workdirs import workdir

    work = workdir(args.workdir, "citeline-bench-")
    traces, gold, db = work / "traces", work / "gold.json", work / "bench.duckdb"
    sys.path.insert(0, str(HERE))
    import synth

    if not traces.exists():
        t = time.perf_counter()
        size = synth.write_traces(
            traces, args.n, content=args.content, distinct=args.distinct, collector=args.collector
        )
        synth.gold(gold)
        print(f"generated {args.n:,} traces, {size / 1e6:,.0f} MB of OTLP/JSON in {time.perf_counter() - t:.0f} s")
    db.unlink(missing_ok=True)
    size = sum(p.stat().st_size for p in traces.glob("*.jsonl"))

    import duckdb

    ing = _timed(INGEST.format(db=str(db), traces=str(traces)))
    if args.corpus_only:
        _corpus_only(args, work, db, gold, ing)
        return
    cls = _timed(CLASSIFY.format(db=str(db), gold=str(gold), evidence="gold"))
    base = _timed(BASELINE.format(limit=args.baseline_n, gold=str(gold), traces=str(traces), strong=False))
    strong = _timed(BASELINE.format(limit=args.baseline_n, gold=str(gold), traces=str(traces), strong=True))
    second = None
    if args.second_run:
        more = work / "traces-second"
        if not more.exists():
            synth.write_traces(
                more, args.n, content=args.content, distinct=args.distinct, collector=args.collector, first=args.n
            )
        second = _timed(SECOND.format(db=str(db), gold=str(gold), traces=str(more)))
    shape = (
        ("distinct answers" if args.distinct else "repetitive answers (500 distinct)")
        + (", content-heavy" if args.content else ", ids only")
        + (", Collector batches" if args.collector else "")
    )

    mbps = size / 1e6 / ing["seconds"]
    cps = cls["claims"] / cls["seconds"]
    total = ing["seconds"] + cls["seconds"]
    ours_tps = args.n / total
    base_tps = base["traces"] / base["seconds"]
    print(f"traces: {args.n:,}  ({size / 1e6:,.0f} MB, {shape}; {os.cpu_count()} cores, DuckDB {duckdb.__version__})")
    print(
        "CPU other processes used meanwhile: "
        + ", ".join(
            f"{name} {x['other_cpu_s']:.1f} s"
            for name, x in (("ingest", ing), ("classify", cls), ("loop", base), ("strong loop", strong))
        )
    )
    print(
        f"ingest:         {ing['seconds']:7.1f} s  {mbps:7.0f} MB/s   peak {ing['peak_mib']:,.0f} MiB "
        f"(target >= 300 MB/s, <= 2048 MiB)"
    )
    print(
        f"classification: {cls['seconds']:7.1f} s  {cps:9,.0f} claims/s  peak {cls['peak_mib']:,.0f} MiB "
        f"({cls['claims']:,} claims, {cls['not_ok']:,} not ok; target >= 1,000,000 claims/s)"
    )
    _memory(cls)
    print("  of which " + ", ".join(f"{name} {sec:.1f} s" for name, sec in cls["phases"].items()))
    print(f"  CPU seconds per core per phase ({os.cpu_count()} cores):")
    print(f"    {'ingest':32} {ing['seconds']:6.1f} s  CPU {ing['cpu']:6.1f} s (one process, DuckDB's threads)")
    for name, sec in cls["phases"].items():
        print(f"    {name:32} {sec:6.1f} s  {phase_cpu(cls['phase_cpu'][name], sec)}")
    print(
        f"end to end:     {total:7.1f} s  {ours_tps:9,.0f} traces/s -> 1M traces in {1e6 / ours_tps:,.0f} s "
        f"(issue #37: 1M distinct answers <= 240 s on two cores)"
    )
    print(
        f"python loop:    {base['seconds']:7.1f} s  {base_tps:9,.0f} traces/s over {base['traces']:,} traces "
        f"({base['not_ok']:,} of {base['claims']:,} claims not ok); peak {base['peak_mib']:,.0f} MiB"
    )
    strong_tps = strong["traces"] / strong["seconds"]
    print(
        f"strong loop:    {strong['seconds']:7.1f} s  {strong_tps:9,.0f} traces/s over {strong['traces']:,} traces "
        f"({strong['not_ok']:,} of {strong['claims']:,} claims not ok; 2 processes, text work cached); "
        f"peak {strong['peak_mib']:,.0f} MiB + {strong['workers_peak_mib']:,.0f} MiB per worker"
    )
    if second is not None:
        print(
            f"second run:     {second['seconds']:7.1f} s  {args.n / second['seconds']:9,.0f} traces/s "
            f"(another {args.n:,} traces, ingest + classify, into the store holding the first run; "
            f"{second['claims']:,} claims); peak {second['peak_mib']:,.0f} MiB"
        )
    print(f"end to end vs the straightforward loop: {ours_tps / base_tps:.1f}x")
    print(f"end to end vs the strong loop:          {ours_tps / strong_tps:.2f}x (issue #37: >= 1.5x, median of 3)")


def _corpus_only(args: argparse.Namespace, work: Path, db: Path, gold: Path, ing: dict[str, Any]) -> None:
    """The same ingested traces classified on the corpus basis and on the gold basis, alternating, each from
    a fresh copy of the store (no judgment cached): medians and the ratio."""
    import shutil
    import statistics

    corpus = work / "corpus.jsonl"  # the gold set's corpus, no case: production traffic
    chunks = json.loads(gold.read_text())["corpus"]
    corpus.write_text("".join(json.dumps(c) + "\n" for c in chunks))
    runs: dict[str, list[dict[str, Any]]] = {"gold": [], "corpus": []}
    for _ in range(args.runs):
        for mode, source in (("gold", gold), ("corpus", corpus)):
            copy = work / f"bench-{mode}.duckdb"
            shutil.copy(db, copy)
            runs[mode].append(_timed(CLASSIFY.format(db=str(copy), gold=str(source), evidence=mode)))
            copy.unlink()
    print(
        f"traces: {args.n:,} ({'distinct' if args.distinct else 'repetitive'} answers), ingest {ing['seconds']:.1f} s"
    )
    med = {}
    for mode, done in runs.items():
        secs = [r["seconds"] for r in done]
        med[mode] = statistics.median(secs)
        last = done[-1]
        phases = {name: statistics.median(r["phases"].get(name, 0.0) for r in done) for name in last["phases"]}
        print(
            f"{mode:>6} basis: median {med[mode]:6.1f} s ({' / '.join(f'{s:.1f}' for s in secs)}), "
            f"{last['claims']:,} claims, {last['not_ok']:,} not ok, judge asked {last['asked']:,}, "
            f"peak {max(r['peak_mib'] for r in done):,.0f} MiB, other CPU {max(r['other_cpu_s'] for r in done):.1f} s"
        )
        print("        of which " + ", ".join(f"{name} {sec:.1f} s" for name, sec in phases.items()))
        print("        buckets " + ", ".join(f"{b} {n:,}" for b, n in last["summary"].items() if n))
    print(f"corpus-only / gold: {med['corpus'] / med['gold']:.2f}x (target <= 1.5x)")


if __name__ == "__main__":
    main()
