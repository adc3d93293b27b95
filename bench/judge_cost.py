"""The rules judge's cost per pair on the analyzer's own traffic, this tree against another commit.

    python bench/judge_cost.py [--ref bbe2c8a] [--traces 20000] [--warm 12000] [--items 3000] [--rounds 3]

Issue #37: judging support grew 1.53x against the round's reference at 100,000 distinct answers. This
bench isolates the judge from the rest of the run. It runs the analyzer once (this tree, in one process)
on ``--traces`` synthetic distinct-answer traces (bench/synth.py) and keeps every item the run asked its
judge; then each tree judges the same items, in one process, after judging the first ``--warm`` of them
untimed (so the gold evidence is read, as it is through most of a real run, and what is left is the cost
of reading each claim against it):

- **instructions per pair**, counted by valgrind (cachegrind, no cache simulation) on ``--items`` pairs
  less the same process judging none: the same count on every run of the same tree whatever else the
  machine does (fixed ``PYTHONHASHSEED``), which a shared 2-core machine's timings are not;
- **CPU microseconds per pair**, medians of ``--rounds`` alternating runs on all the items after the warm
  ones (moved by other processes on a shared machine: quote the instructions there).

The other commit is imported ahead of this tree as bench/versions.py does it. Needs ``valgrind`` on PATH
for the instructions (``apt-get install valgrind``); without it only the CPU figures are printed.
"""

from __future__ import annotations

import argparse
import os
import pickle
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

CAPTURE = """
import pickle, sys
sys.path.insert(0, {here!r})
import synth
from pathlib import Path
from citeline.analyzer import analyze, workers
from citeline.analyzer.judges import _rules
from citeline.analyzer.sources.ingest import ingest
from citeline.analyzer.store import connect
work = Path({work!r})
synth.write_traces(work / "traces", {n}, distinct=True)
synth.gold(work / "gold.json")
asked = []
plain = _rules.RulesJudge.judge_many
def keep(self, items):
    asked.extend(items)
    return plain(self, items)
_rules.RulesJudge.judge_many = keep
con = connect(str(work / "capture.duckdb"))
ingest(con, [str(work / "traces")])
con.close()
with workers.in_process():
    analyze(str(work / "capture.duckdb"), gold=str(work / "gold.json"))
items = [(it[0], tuple(it[1]), tuple(it[2]), tuple(it[3])) for it in asked]
pickle.dump(items, open(work / "items.pkl", "wb"))
print(len(items))
"""

JUDGE = """
import pickle, sys, time
from citeline.analyzer.judges import RulesJudge
items = pickle.load(open({items!r}, "rb"))
warm, timed = items[:{warm}], items[{warm}:{warm} + {n}]
judge = RulesJudge(workers=1)
judge.judge_many(warm)
cpu = time.process_time()
judge.judge_many(timed)
print((time.process_time() - cpu) / max(1, len(timed)) * 1e6)
"""


def _python(code: str, path: str | None, valgrind: bool = False) -> str:
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    env.pop("PYTHONPATH", None)
    if path:
        env["PYTHONPATH"] = path
    cmd = [sys.executable, "-c", code]
    if valgrind:
        cmd = ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null", *cmd]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
    return done.stdout + done.stderr


def instructions(path: str | None, items: Path, warm: int, n: int) -> float:
    """Instructions per pair: the judge on ``n`` pairs less the same process judging none."""

    def count(k: int) -> int:
        out = _python(JUDGE.format(items=str(items), warm=warm, n=k), path, valgrind=True)
        found = re.search(r"I\s+refs:\s+([\d,]+)", out)
        if found is None:
            raise RuntimeError(f"valgrind printed no instruction count:\n{out[-2000:]}")
        return int(found.group(1).replace(",", ""))

    return (count(n) - count(0)) / n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ref", default="bbe2c8a", help="the commit to compare with (the round's reference)")
    ap.add_argument("--traces", type=int, default=20_000, help="synthetic distinct-answer traces the items come from")
    ap.add_argument("--warm", type=int, default=12_000, help="items judged untimed first (the evidence read)")
    ap.add_argument("--items", type=int, default=3_000, help="items whose instructions are counted")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--workdir", help="keep the traces and the items here (default: a temp dir)")
    args = ap.parse_args()
    sys.path.insert(0, str(HERE))
    from versions import _tree_of

    sys.path.insert(0, str(HERE))
    from workdirs import workdir

    work = workdir(args.workdir, "citeline-judge-cost-")
    items = work / "items.pkl"
    if not items.exists():
        asked = _python(CAPTURE.format(here=str(HERE), work=str(work), n=args.traces), None).split()[-1]
        print(f"{int(asked):,} items asked by the analyzer on {args.traces:,} distinct-answer traces")
    with open(items, "rb") as f:
        total = len(pickle.load(f))
    ref_dir = Path(tempfile.mkdtemp(prefix="citeline-ref-"))
    sides = {"ref": str(_tree_of(args.ref, ref_dir)), "this": None}
    try:
        cpu: dict[str, list[float]] = {s: [] for s in sides}
        for r in range(args.rounds):
            for side in sides if r % 2 == 0 else list(sides)[::-1]:
                code = JUDGE.format(items=str(items), warm=args.warm, n=total)
                cpu[side].append(float(_python(code, sides[side]).split()[-1]))
        med = {s: statistics.median(v) for s, v in cpu.items()}
        print(f"pairs: {total - args.warm:,} timed after {args.warm:,} warm ({total:,} asked)")
        print(
            f"CPU per pair, median of {args.rounds}: ref {args.ref} {med['ref']:.1f} us, this {med['this']:.1f} us "
            f"-> {med['this'] / med['ref']:.3f}x"
        )
        if shutil.which("valgrind") is None:
            print("instructions: valgrind is not installed")
            return
        ins = {s: instructions(p, items, args.warm, args.items) for s, p in sides.items()}
        print(
            f"instructions per pair ({args.items:,} pairs): ref {args.ref} {ins['ref']:,.0f}, this "
            f"{ins['this']:,.0f} -> {ins['this'] / ins['ref']:.3f}x"
        )
    finally:
        checkout = str(ref_dir / "checkout")
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", checkout], check=False)
        shutil.rmtree(ref_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
