"""The rules judge as round 1 shipped it (rules@1), kept only as the benchmark baseline for bench/judge.py."""

from __future__ import annotations

import re
from collections.abc import Sequence

from citeline.analyzer.judges import JudgeItem, Judgment
from citeline.analyzer.judges._rules import _Claim, _facts
from citeline.analyzer.text import Value, _comparable, _content_words, _same_value, _show, _stem, fold, values

# round 1 compared negation and may/must anywhere in the whole evidence: kept here as it was
_NEG = re.compile(r"\b(not|no|never|none|cannot|can't|won't|isn't|aren't|doesn't|don't|without|neither|nor)\b|n't\b")
_MAY = re.compile(r"\b(may|can|could|optional|optionally|allowed)\b")
_MUST = re.compile(r"\b(must|required|requires|require|shall|mandatory|have to|has to|need to|needs to)\b")


def _shared_ratio(claim: str, evidence: str) -> float:
    words = {_stem(w) for w in _content_words(claim)}
    if not words:
        return 1.0
    ev = {_stem(w) for w in _content_words(evidence)}
    return len(words & ev) / len(words)


def _quote_missing(quotes: list[str], ev_fold: str) -> Judgment | None:
    for q in quotes:
        if q and fold(q) not in ev_fold:
            return Judgment("contradicted", f"quote {q!r} does not occur in the cited evidence")
    return None


def _values_differ(claim_values: list[Value], ev_values: list[Value]) -> Judgment | None:
    """A value of the claim the evidence states otherwise, or (numbers aside) does not state."""
    for v in claim_values:
        if any(_same_value(v, e) for e in ev_values):
            continue
        rivals = [e for e in ev_values if _comparable(v, e) and v[0] != "num"]
        if rivals:
            return Judgment("contradicted", f"claim says {_show(v)}, evidence says {_show(rivals[0])}")
        if v[0] != "num":
            return Judgment("insufficient", f"evidence does not state {_show(v)}")
    return None


def _wording_differs(claim_fold: str, ev_fold: str, ratio: float) -> Judgment | None:
    """Negation or obligation (may vs must) that differs between the claim and the whole evidence."""
    if bool(_NEG.search(claim_fold)) != bool(_NEG.search(ev_fold)) and ratio >= 0.5:
        return Judgment("contradicted", "negation differs between claim and evidence")
    c_must, e_must = bool(_MUST.search(claim_fold)), bool(_MUST.search(ev_fold))
    c_may, e_may = bool(_MAY.search(claim_fold)), bool(_MAY.search(ev_fold))
    if (c_must and e_may and not e_must) or (c_may and e_must and not e_may):
        return Judgment("contradicted", "obligation differs (may vs must)")
    return None


class RulesJudgeV1:
    """Round 1's rules judge (whole-evidence word coverage), kept as the benchmark baseline."""

    name = "rules"
    version = "1"

    def __init__(self, coverage: float = 0.6) -> None:
        self.coverage = coverage

    def judge(
        self, claim: str, evidence: list[str], facts: list[str] | None = None, quotes: list[str] | None = None
    ) -> Judgment:
        evidence = [e for e in evidence if e and e.strip()]
        if not evidence:
            return Judgment("not_applicable", "no evidence text to judge against")
        ev = " ".join(evidence)
        ev_fold, claim_fold = fold(ev), fold(claim)
        ratio = _shared_ratio(claim, ev)
        verdict = (
            _quote_missing(quotes or [], ev_fold)
            or _facts(_Claim(claim, False), facts or [])  # the gold-fact check is the same in v1 and v2
            or _values_differ(values(claim), values(ev))
            or _wording_differs(claim_fold, ev_fold, ratio)
        )
        if verdict is not None:
            return verdict
        if ratio >= self.coverage:
            return Judgment("entailed", f"{ratio:.0%} of the claim's words are in the evidence; values agree")
        return Judgment("insufficient", f"only {ratio:.0%} of the claim's words are in the evidence")

    @property
    def settings(self) -> dict[str, object]:
        return {}

    def judge_many(self, items: Sequence[JudgeItem]) -> list[Judgment]:
        return [self.judge(it.claim, list(it.evidence), list(it.facts), list(it.quotes)) for it in items]
