"""How well a judge agrees with people: accuracy and Cohen's kappa against human labels.

Reads ExpertQA-style files (``answers.<system>.claims[].claim_string``,
``.evidence``, ``.support``) or plain JSONL rows ``{"claim", "evidence":
[...], "label"}``. Human labels are folded to two classes, supported or not:
ExpertQA's ``Complete`` is supported; ``Partial``, ``Incomplete`` and
``Missing`` are not; ``N/A`` rows are left out.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ._claims import markers
from ._judge import Judge

_EXPERTQA = {"Complete": True, "Partial": False, "Incomplete": False, "Missing": False}


@dataclass
class Agreement:
    judge: str
    n: int
    accuracy: float
    kappa: float
    confusion: dict[str, int]  # "human/judge" -> count, e.g. "supported/not"


def _strip_markers(text: str) -> str:
    for label in set(markers(text)):
        text = text.replace(f"[{label}]", "")
    return " ".join(text.split())


def _examples(path: Path) -> Iterator[tuple[str, list[str], bool]]:
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        rec = json.loads(line)
        if "answers" in rec:
            for answer in rec["answers"].values():
                for claim in answer.get("claims") or []:
                    human = _EXPERTQA.get(claim.get("support") or "")
                    evidence = [e for e in claim.get("evidence") or [] if e]
                    if human is None or not evidence:
                        continue
                    yield _strip_markers(claim["claim_string"]), evidence, human
        elif "claim" in rec and "label" in rec:
            yield rec["claim"], list(rec.get("evidence") or []), rec["label"] == "entailed"


def calibrate(path: str | Path, judge: Judge) -> Agreement:
    """Judge every labelled claim and compare with the human label."""
    counts = {"supported/supported": 0, "supported/not": 0, "not/supported": 0, "not/not": 0}
    for claim, evidence, human in _examples(Path(path)):
        said = judge.judge(claim, evidence).label == "entailed"
        counts[f"{'supported' if human else 'not'}/{'supported' if said else 'not'}"] += 1
    n = sum(counts.values())
    if n == 0:
        return Agreement(f"{judge.name}@{judge.version}", 0, 0.0, 0.0, counts)
    agree = counts["supported/supported"] + counts["not/not"]
    p_o = agree / n
    human_yes = (counts["supported/supported"] + counts["supported/not"]) / n
    judge_yes = (counts["supported/supported"] + counts["not/supported"]) / n
    p_e = human_yes * judge_yes + (1 - human_yes) * (1 - judge_yes)
    kappa = 0.0 if p_e == 1 else (p_o - p_e) / (1 - p_e)
    return Agreement(f"{judge.name}@{judge.version}", n, p_o, kappa, counts)
