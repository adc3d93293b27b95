"""Support judges: does this evidence support this claim?

    from citeline.analyzer import judges
    judge = judges.load("rules")                      # or "llm", "nli", "ensemble", a plug-in
    judge.judge("Refunds take 30 days.", ["Refunds are paid within 30 days."])
    # Judgment(label='entailed', rationale='...')

Every judge answers one of ``LABELS`` with a rationale, has a ``name``, a
``version`` and ``settings`` (the options that can change a verdict: they are
part of the cache key), and a batch form ``judge_many``. Third-party judges
register a factory in the ``citeline.judges`` entry point group.
"""

from citeline.analyzer.judges._api import LABELS, BaseJudge, Judge, JudgeItem, Judgment, Source, ident, judge_all
from citeline.analyzer.judges._registry import JudgeNotFound, available, load
from citeline.analyzer.judges._rules import RulesJudge

__all__ = [
    "LABELS",
    "BaseJudge",
    "Judge",
    "JudgeItem",
    "JudgeNotFound",
    "Judgment",
    "RulesJudge",
    "Source",
    "available",
    "ident",
    "judge_all",
    "load",
]
