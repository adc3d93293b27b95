"""How the rules judge agrees with people on the repository's labelled data, and what each rule adds.

Prints the tables of docs/judges.md: per data set, rules@4 against rules@3, rules@2 and rules@1 (the judges
it replaced), then rules@4 with one rule switched off at a time (the ablations), then the confusion matrices
of rules@4.

    .venv/bin/python bench/judge_quality.py
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.rules_v1 import RulesJudgeV1  # noqa: E402
from citeline.analyzer.judges import RulesJudge  # noqa: E402
from citeline.analyzer.labels.calibrate import Agreement, agreement, examples  # noqa: E402

SETS = {
    "WiCE": "tests/data/wice/claim_test.jsonl",
    "ExpertQA rand": "tests/data/expertqa/rand_test.jsonl",
    "ExpertQA domain": "tests/data/expertqa/domain_test.jsonl",
    "RGB": "tests/data/rgb/en_fact.jsonl",
    "HaluEval QA": "tests/data/halueval/qa_one-turn.jsonl",
}
ABLATIONS: dict[str, dict[str, object]] = {
    "rules@2": {"version": 2},
    "rules@3": {"version": 3},
    "rules@4": {},
    "without values": {"values": False},
    "without names": {"names": False},
    "without negation": {"negation": False},
    "without may/must": {"modality": False},
    "without comparison": {"comparison": False},
    "without direction": {"direction": False},
    "without per (windows, denominators)": {"per": False},
    "without quantifiers": {"quantifiers": False},
    "without scope": {"scope": False},
    "without counts": {"counts": False},
    "without partial support": {"partial": False},
    "without binding (v4)": {"binding": False},
    "without split (v4)": {"split": False},
    "without time (v4)": {"time": False},
    "one-sentence window": {"window": 1},
    "coverage 0.6": {"coverage": 0.6},
    "coverage 0.4": {"coverage": 0.4},
}


def _row(name: str, a: Agreement) -> str:
    return (
        f"| {name} | {a.n} | {a.accuracy:.3f} | {a.kappa:.3f} | {a.false_support:.3f} | {a.missed_support:.3f} "
        f"| {a.with_values.kappa:.3f} | {a.with_values.false_support:.3f} |"
    )


def main() -> None:
    head = (
        "| judge | n | accuracy | kappa | false support | missed support | kappa (values) | false support (values) |\n"
        "|---|---|---|---|---|---|---|---|"
    )
    loaded = {name: examples(ROOT / path)[0] for name, path in SETS.items()}
    confusions = {}
    for name, found in loaded.items():
        print(f"\n### {name}\n\n{head}")
        v1 = agreement(RulesJudgeV1(), found)  # type: ignore[arg-type]
        print(_row("rules@1 (round 1)", v1))
        for label, options in ABLATIONS.items():
            a = agreement(RulesJudge(**options, workers=1), found)  # type: ignore[arg-type]
            print(_row(label, a))
            if not options:
                confusions[name] = a.confusion
    print("\n### Confusion matrices (rules@4): people's class by the judge's label\n")
    for name, conf in confusions.items():
        print(f"{name}:\n\n| people \\\\ judge | entailed | contradicted | insufficient | not_applicable |")
        print("|---|---|---|---|---|")
        for human, row in conf.items():
            print(f"| {human} | " + " | ".join(str(n) for n in row.values()) + " |")
        print()


if __name__ == "__main__":
    main()
