"""Benchmark: a perturbation run over the example app's gold set (issue #25, target: under 10 s).

Every gold case of ``examples/policy_gold.yaml`` (11 cases) runs once as is and once under each of the
eleven perturbations that applies to it, then the traces are analyzed (two analyze runs: the gold set as
is, and with the newer versions in force for the supersede cells). Timed three ways:

- ``perturb()`` in one process, after a first run that imports and warms up (what a test pays);
- the same for the LangChain example (``examples/langchain_app.py``);
- ``citeline perturb --app ... --gold ...`` as a fresh process each time (what CI pays, imports included).

    .venv/bin/python bench/perturb.py [--runs 7]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from citeline.analyzer.testing import perturb  # noqa: E402
from citeline.examples import langchain_app, perturb_apps  # noqa: E402
from citeline.examples.demo import gold_path  # noqa: E402


def _times(fn: object, runs: int) -> list[float]:
    out = []
    for _ in range(runs):
        started = time.perf_counter()
        fn()  # type: ignore[operator]
        out.append(time.perf_counter() - started)
    return out


def _show(what: str, times: list[float]) -> None:
    print(
        f"{what}: median {statistics.median(times):.2f} s over {len(times)} runs "
        f"(min {min(times):.2f}, max {max(times):.2f})"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args()
    gold = gold_path()
    first = perturb(perturb_apps.answer_case, gold)  # warm-up, and the run's shape
    cells = sum(1 for c in first.cells if c.status != "n/a")
    print(f"example app: {len(first.cases)} cases, {len(first.perturbations)} perturbations, {cells} cells run")
    _show("perturb(), example app", _times(lambda: perturb(perturb_apps.answer_case, gold), args.runs))
    perturb(langchain_app.answer_case, gold)
    _show("perturb(), LangChain example", _times(lambda: perturb(langchain_app.answer_case, gold), args.runs))
    cli = [
        str(Path(sys.executable).parent / "citeline"),
        "perturb",
        "--app",
        "citeline.examples.perturb_apps:answer_case",
        "--gold",
        str(gold),
        "--format",
        "json",
        "--out",
        "/dev/null",
    ]
    _show(
        "citeline perturb (fresh process)",
        _times(lambda: subprocess.run(cli, check=True, capture_output=True), max(3, args.runs // 2 + 1)),
    )


if __name__ == "__main__":
    main()
