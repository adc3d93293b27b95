"""Benchmark: the rules judge on 100,000 distinct claim/evidence pairs (target: under 30 s on 2 cores), the
default version beside the one before it (``NEW`` beside ``OLD``: v4 beside v3, target at most 15% slower per
pair; v3 was timed beside v2 the same way).

Pairs are built from the repository's real prose (ExpertQA evidence passages, WiCE and RGB text): each
claim is a sentence of its passage, kept, cut, or changed (a number, a name, a negation), and judged
against one to three passages. Two shapes are timed:

- ``shared``: passages come from a pool, so a passage meets many claims (a gold chunk cited by many
  answers, as in a real run): the judge reads each passage once;
- ``unique``: every pair's evidence text is distinct (a marker word per pair), so nothing is reused.

Also the baseline: rules v1 (the whole-evidence judge this one replaced), on the same pairs; and the default
version's two paths on one core: ``judge`` one item at a time (the oracle) and ``judge_many``'s batch (each
distinct claim read once, each tuple of cited texts put together once), their answers checked equal.

    .venv/bin/python bench/judge.py [--n 100000] [--runs 3] [--shapes shared,unique]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from citeline.analyzer import text as _text  # noqa: E402
from citeline.analyzer.judges import (  # noqa: E402
    JudgeItem,
    RulesJudge,
    _qualifiers,
    _reading,
    _structure,
)
from citeline.analyzer.labels.calibrate import examples  # noqa: E402
from citeline.analyzer.text import sentences  # noqa: E402


def passages() -> list[str]:
    found: list[str] = []
    for name in ("expertqa/rand_test.jsonl", "expertqa/domain_test.jsonl", "rgb/en_fact.jsonl"):
        ex, _, _ = examples(ROOT / "tests" / "data" / name)
        found += [e for x in ex for e in x.evidence]
    for line in (ROOT / "tests" / "data" / "wice" / "claim_test.jsonl").read_text().splitlines():
        ev = json.loads(line)["evidence"]
        found += [" ".join(ev[i : i + 8]) for i in range(0, len(ev), 8)]
    return sorted({p for p in found if 200 <= len(p) <= 3000})


def _claim(rng: random.Random, passage: str) -> str:
    ss = [s for s in sentences(passage) if len(s.split()) >= 5] or [passage[:200]]
    s = rng.choice(ss)
    words = s.split()
    roll = rng.random()
    if roll < 0.2:
        words = words[: max(4, len(words) // 2)]
    elif roll < 0.4:
        words = [str(rng.randint(2, 2030)) if w.isdigit() else w for w in words] + [str(rng.randint(1, 99))]
    elif roll < 0.5:
        words.insert(min(2, len(words)), "not")
    elif roll < 0.6:
        words = [rng.choice(["Paris", "Jordan", "Acme", "Kepler"]) if w[:1].isupper() else w for w in words]
    return " ".join(words)


def pairs(n: int, unique: bool, seed: int = 7) -> list[JudgeItem]:
    rng = random.Random(seed)
    pool = passages()
    out: list[JudgeItem] = []
    seen: set[tuple[str, tuple[str, ...]]] = set()
    while len(out) < n:
        ev = rng.sample(pool, rng.choice((1, 1, 2, 3)))
        claim = _claim(rng, ev[0]) + f" ({len(out)})"  # distinct claims, whatever the evidence
        if unique:
            ev = [*ev[:-1], ev[-1] + f" Ref {len(out)}."]
        key = (claim, tuple(ev))
        if key not in seen:
            seen.add(key)
            out.append(JudgeItem(claim, ev))
    return out


def time_judge(items: list[JudgeItem], judge: object) -> float:
    """One timed pass from cold caches (this process's; worker processes start cold anyway)."""
    for cached in (
        _reading.read_passage,
        _reading.passage_vocab,
        _reading.names,
        _text.value_spans,
        *(getattr(_qualifiers, f) for f in _qualifiers.CACHED),
        *(getattr(_structure, f) for f in _structure.CACHED),
    ):
        cached.cache_clear()
    t = time.perf_counter()
    judge.judge_many(items)  # type: ignore[attr-defined]
    return time.perf_counter() - t


def cpu_seconds() -> float:
    """CPU time of this process and of its reaped children (the judge's worker processes, stopped when a
    batch ends): what a pass costs whatever else the machine runs meanwhile."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def time_both(items: list[JudgeItem], judge: object) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one timed pass."""
    cpu = cpu_seconds()
    wall = time_judge(items, judge)
    return wall, cpu_seconds() - cpu


NEW, OLD = "4", "3"  # the default rules version and the one it replaced


def per_item_and_batch(items: list[JudgeItem], runs: int) -> str:
    """CPU per pair of the per-item oracle and of the batch, alternating, in this process (no pool); the
    answers compared, label and rationale."""
    judge = RulesJudge(version=NEW, workers=1)
    cpus: dict[str, list[float]] = {"per item": [], "batch": []}
    answers: dict[str, list[object]] = {}
    for _ in range(runs):
        for mode, taken in cpus.items():
            time_judge([], judge)  # cold caches, as every timed pass starts
            cpu = cpu_seconds()
            answers[mode] = judge.judge_many(items) if mode == "batch" else [judge.judge(*it) for it in items]
            taken.append(cpu_seconds() - cpu)
    med = {m: statistics.median(c) for m, c in cpus.items()}
    same = answers["per item"] == answers["batch"]
    return (
        f"  rules@{NEW} on one core: per item {1e6 * med['per item'] / len(items):.1f} us/pair, batch "
        f"{1e6 * med['batch'] / len(items):.1f} us/pair (CPU medians of {runs}; batch / per item "
        f"{med['batch'] / med['per item']:.3f}); answers {'equal' if same else 'DIFFER'} on {len(items):,} pairs"
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--baseline-n", type=int, default=20_000, help="pairs for the v1 baseline (it is slower)")
    ap.add_argument("--shapes", default="shared,unique", help="comma separated: shared, unique")
    args = ap.parse_args()
    from bench.rules_v1 import RulesJudgeV1

    for shape in args.shapes.split(","):
        items = pairs(args.n, unique=shape == "unique")
        # the new and the old version side by side, run after run, so a noisy machine slows both alike; CPU
        # seconds beside wall seconds, since other work on the machine stretches the wall clock but not the CPU
        times: dict[str, list[float]] = {NEW: [], OLD: []}
        cpus: dict[str, list[float]] = {NEW: [], OLD: []}
        for _ in range(args.runs):
            for version, taken in times.items():
                wall, cpu = time_both(items, RulesJudge(version=version))
                taken.append(wall)
                cpus[version].append(cpu)
        med = {v: statistics.median(t) for v, t in times.items()}
        cpu_med = {v: statistics.median(t) for v, t in cpus.items()}
        ratios = [a / b for a, b in zip(times[NEW], times[OLD], strict=True)]
        base = pairs(args.baseline_n, unique=shape == "unique")
        v1 = statistics.median(time_judge(base, RulesJudgeV1()) for _ in range(args.runs))
        for version in (NEW, OLD):
            print(
                f"rules@{version} {shape:6} evidence: {args.n:,} pairs in {med[version]:.1f} s median of {args.runs} "
                f"({args.n / med[version]:,.0f} pairs/s; runs {', '.join(f'{t:.1f}' for t in times[version])}); "
                f"CPU {cpu_med[version]:.1f} s median (runs {', '.join(f'{t:.1f}' for t in cpus[version])})"
            )
        cpu_ratio = cpu_med[NEW] / cpu_med[OLD]
        print(
            f"  rules@{NEW} / rules@{OLD} per pair: CPU {cpu_ratio:.3f} (medians); wall "
            f"{med[NEW] / med[OLD]:.3f} (medians), {statistics.median(ratios):.3f} "
            f"(median of the run-by-run ratios {', '.join(f'{r:.3f}' for r in ratios)}); target <= 1.15: "
            f"{'met' if cpu_ratio <= 1.15 else 'NOT met'} (CPU); rules@{NEW} < 30 s: "
            f"{'met' if med[NEW] < 30 else 'NOT met'}; baseline rules@1: {args.baseline_n / v1:,.0f} pairs/s "
            f"({args.n / med[NEW] / (args.baseline_n / v1):.2f}x)"
        )
        print(per_item_and_batch(items, args.runs))


if __name__ == "__main__":
    main()
