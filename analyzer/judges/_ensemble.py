"""The ``ensemble`` judge: a model judge whose ``entailed`` the rules' value and name checks can veto.

A model must never call "$0.50" entailed by "$0.25", nor "Scott Weiland" by evidence naming Joey Cape.
Options: ``judge`` (the model judge: ``llm`` by default, or ``nli``, or a plug-in); every other option is
passed to it. Only the model's ``entailed`` is checked: the rules' value, name, quote and fact checks
(never their word coverage, negation or may/must, which a model reads better) can turn it into their
``contradicted`` or ``insufficient``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from citeline.analyzer.judges._api import (
    BaseJudge,
    Judge,
    JudgeItem,
    Judgment,
    Source,
    as_item,
    judge_all,
    reads_context,
)
from citeline.analyzer.judges._rules import RulesJudge


class EnsembleJudge(BaseJudge):
    name = "ensemble"

    def __init__(self, judge: str = "llm", **options: Any) -> None:
        from citeline.analyzer.judges._registry import load

        if judge == "ensemble":
            raise ValueError("judge=ensemble: the ensemble needs a model judge (llm, nli or a plug-in)")
        self.model: Judge = load(judge, **options)
        self.veto = RulesJudge(coverage=0.0, negation=False, modality=False, version=2)  # values and names only
        self.version = f"1+{self.model.name}@{self.model.version}"
        self.reads_context = reads_context(self.model)  # the model's question and sources are passed on
        self.vetoed = 0

    @property
    def settings(self) -> Mapping[str, Any]:
        return dict(self.model.settings)

    def usage(self) -> dict[str, float]:
        inner = getattr(self.model, "usage", None)
        return {**(inner() if callable(inner) else {}), "vetoed": self.vetoed}

    def judge(
        self,
        claim: str,
        evidence: Sequence[str],
        facts: Sequence[str] = (),
        quotes: Sequence[str] = (),
        *,
        question: str = "",
        sources: Sequence[Source] = (),
    ) -> Judgment:
        item = JudgeItem(claim, list(evidence), list(facts), list(quotes), question=question, sources=sources)
        return self.judge_many([item])[0]

    def judge_many(self, items: Sequence[JudgeItem]) -> list[Judgment]:
        items = [as_item(it) for it in items]
        said = judge_all(self.model, items)
        out = []
        for it, j in zip(items, said, strict=True):
            verdict = j
            if j.label == "entailed":
                check = self.veto.judge(*it)
                if check.label in ("contradicted", "insufficient"):
                    self.vetoed += 1
                    why = f"{self.model.name} said entailed; the rules veto it: {check.rationale}"
                    verdict = Judgment(check.label, why)
            out.append(verdict)
        return out
