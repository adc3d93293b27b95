"""End-to-end analyzer time of this tree against another commit, on the same traces, in one run.

    python bench/versions.py --ref REV [--this REV] [--n 100000] [--distinct] [--rounds 3] [--workdir DIR] [--bar 1.0]

The other commit is checked out in a temporary worktree and imported ahead of this
tree (``PYTHONPATH`` onto a ``citeline/`` tree of symlinks, the layout the package
installs as). Each round ingests and classifies the same trace files once with
each tree, alternating which goes first, each phase in a fresh process
(bench/analyzer.py's phases), so machine noise falls on both sides alike; the
figures are medians and the ratio of medians, of wall time and of the CPU time
the run's own processes used (which other processes on a shared machine move
less). The two runs' claim rows are then compared (EXCEPT ALL both ways, as
bench/same_buckets.py does) and the number of rows that differ is printed: a
speed figure for an analyzer that changed buckets says so beside it.

Each phase (ingest, then analyze's own phases) is printed with its wall and CPU medians on both
sides, and the last round's CPU per process (the driver, each worker of the pool, workers that
ended within the phase): how busy the cores were through each phase. ``--bar`` checks the two
medians against the largest ratio allowed (issue #37: 1.0 against the round's reference,
docs/benchmarks.md "Round reference").
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
PACKAGES = ("instrumentation", "analyzer", "queries", "examples")


def _tree_of(rev: str, into: Path) -> Path:
    """A worktree of ``rev`` under ``into`` and a ``citeline/`` symlink tree over it; returns the tree's root."""
    checkout = into / "checkout"
    subprocess.run(
        ["git", "-C", str(ROOT), "worktree", "add", "--detach", "--quiet", str(checkout), rev],
        check=True,
    )
    pkg = into / "path" / "citeline"
    pkg.mkdir(parents=True)
    for name in PACKAGES:
        (pkg / name).symlink_to(checkout / name)
    return into / "path"


def _run(side: str, path: str | None, db: Path, traces: Path, gold: Path) -> dict[str, Any]:
    sys.path.insert(0, str(HERE))
    import analyzer as bench

    env_path = os.environ.get("PYTHONPATH")
    try:
        if path is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = path
        db.unlink(missing_ok=True)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        ing = bench._timed(bench.INGEST.format(db=str(db), traces=str(traces)))
        cls = bench._timed(bench.CLASSIFY.format(db=str(db), gold=str(gold), evidence="gold"))
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    finally:
        if env_path is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = env_path
    total = ing["seconds"] + cls["seconds"]
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)  # its own processes, workers too
    other = ing["other_cpu_s"] + cls["other_cpu_s"]
    print(
        f"  {side:5} ingest {ing['seconds']:6.1f} s  classify {cls['seconds']:6.1f} s  end to end {total:6.1f} s  "
        f"CPU {cpu:6.1f} s ({cls['claims']:,} claims; other processes {other:.0f} s CPU)",
        flush=True,
    )
    phases = {"ingest": ing["seconds"], **cls["phases"]}
    phase_cpu = {"ingest": ing["cpu"]}
    phase_cpu.update({name: c["driver"] + sum(c["workers"]) + c["ended"] for name, c in cls["phase_cpu"].items()})
    return {"total": total, "cpu": cpu, "phases": phases, "phase_cpu": phase_cpu, "detail": cls["phase_cpu"]}


def _which(path: str | None) -> str:
    env = {**os.environ, "PYTHONPATH": path} if path else {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    code = "import citeline.analyzer as a; print(a.__file__)"
    return subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    ).stdout.strip()


def _differing_rows(a: Path, b: Path) -> int:
    import duckdb

    sys.path.insert(0, str(HERE))
    from same_buckets import COLUMNS

    con = duckdb.connect()
    con.execute("ATTACH ? AS a (READ_ONLY)", [str(a)])
    con.execute("ATTACH ? AS b (READ_ONLY)", [str(b)])
    latest = "WHERE run_id = (SELECT max(run_id) FROM {s}.runs)"
    sel = {s: f"SELECT {COLUMNS} FROM {s}.claim_results " + latest.format(s=s) for s in ("a", "b")}
    rows = con.execute(
        f"SELECT (SELECT count(*) FROM ({sel['a']} EXCEPT ALL {sel['b']})) "
        f"+ (SELECT count(*) FROM ({sel['b']} EXCEPT ALL {sel['a']}))"
    ).fetchone()
    return int(rows[0]) if rows else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ref", required=True, help="the commit to compare with (e.g. main before a change)")
    parser.add_argument(
        "--this",
        help="another commit in place of this tree (a row of docs/benchmarks.md's round table: the merge of one issue)",
    )
    parser.add_argument("--n", type=int, default=100_000, help="synthetic traces (default 100,000)")
    parser.add_argument("--distinct", action="store_true", help="every answer worded differently (bench/synth.py)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workdir", help="keep generated traces here (default: a temp dir)")
    parser.add_argument(
        "--bar",
        type=float,
        default=None,
        help="the largest ratio allowed (issue #37: 1.0 against the round's reference); each median is checked",
    )
    args = parser.parse_args()

    sys.path.insert(0, str(HERE))
    import synth
    from workdirs import workdir

    work = workdir(args.workdir, "citeline-versions-")
    traces, gold = work / "traces", work / "gold.json"

    if not traces.exists():
        synth.write_traces(traces, args.n, distinct=args.distinct)
        synth.gold(gold)
    ref_dir = Path(tempfile.mkdtemp(prefix="citeline-ref-"))
    ref_path = str(_tree_of(args.ref, ref_dir))
    this_dir = Path(tempfile.mkdtemp(prefix="citeline-this-")) if args.this else None
    this_path = str(_tree_of(args.this, this_dir)) if this_dir is not None else None
    import analyzer as bench

    try:
        print(f"this {args.this or 'tree'}: {_which(this_path)}")
        print(f"ref {args.ref}: {_which(ref_path)}")
        sides: dict[str, list[dict[str, Any]]] = {"ref": [], "this": []}
        for n in range(args.rounds):
            print(f"round {n + 1}", flush=True)
            order = [("ref", ref_path), ("this", this_path)]
            for side, path in order if n % 2 == 0 else order[::-1]:
                sides[side].append(_run(side, path, work / f"{side}.duckdb", traces, gold))
        med = {s: statistics.median(r["total"] for r in runs) for s, runs in sides.items()}
        cpu = {s: statistics.median(r["cpu"] for r in runs) for s, runs in sides.items()}
        phases = list(dict.fromkeys(p for r in sides["ref"] + sides["this"] for p in r["phases"]))
        print(f"traces: {args.n:,}{' distinct answers' if args.distinct else ''}; medians of {args.rounds}")
        print(f"  {'phase':32} {'wall: ref':>10} {'this':>7}   {'CPU: ref':>9} {'this':>7} {'ratio':>7}")
        for p in phases:
            wall = [statistics.median(r["phases"].get(p, 0.0) for r in sides[s]) for s in ("ref", "this")]
            c = [statistics.median(r["phase_cpu"].get(p, 0.0) for r in sides[s]) for s in ("ref", "this")]
            ratio = f"{c[1] / c[0]:6.3f}x" if c[0] > 0 else ""
            print(f"  {p:32} {wall[0]:8.1f} s {wall[1]:5.1f} s   {c[0]:7.1f} s {c[1]:5.1f} s {ratio:>7}")
        for side in ("ref", "this"):
            print(f"CPU seconds per core per phase, {side}'s last round ({os.cpu_count()} cores):")
            last = sides[side][-1]
            for p, c in last["detail"].items():
                print(f"  {p:32} {last['phases'][p]:6.1f} s  {bench.phase_cpu(c, last['phases'][p])}")
        wall_x, cpu_x = med["this"] / med["ref"], cpu["this"] / cpu["ref"]
        bar = "" if args.bar is None else f" (bar: at most {args.bar:.2f}x: {{}})"
        print(
            f"end to end: ref {med['ref']:.1f} s, this {med['this']:.1f} s -> {wall_x:.3f}x"
            + bar.format("met" if args.bar is None or wall_x <= args.bar else "NOT met")
        )
        print(
            f"CPU of its own processes and workers: ref {cpu['ref']:.1f} s, this {cpu['this']:.1f} s -> "
            f"{cpu_x:.3f}x (moved less than wall time by other processes)"
            + bar.format("met" if args.bar is None or cpu_x <= args.bar else "NOT met")
        )
        differ = _differing_rows(work / "ref.duckdb", work / "this.duckdb")
        print(f"claim rows that differ between the two runs: {differ}" + (" (bar: 0)" if args.bar is not None else ""))
    finally:
        # the other commits' worktrees and their folders are removed (the traces and stores with the work folder
        # at exit, unless --workdir keeps them: bench/workdirs.py)
        for made in (ref_dir, this_dir):
            if made is not None:
                subprocess.run(
                    ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(made / "checkout")], check=False
                )
                shutil.rmtree(made, ignore_errors=True)


if __name__ == "__main__":
    main()
