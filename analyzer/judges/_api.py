"""What every support judge provides, and the one place a judge's failure becomes a label.

A judge answers one of ``LABELS`` with a short rationale. ``judge_all`` is how
the analyzer and ``calibrate`` ask: it never lets a judge's exception, timeout
or unknown label escape as anything but ``not_applicable`` with the reason,
marked ``error`` so the answer is not cached.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol, runtime_checkable

LABELS = ("entailed", "contradicted", "insufficient", "not_applicable")


@dataclass(frozen=True)
class Judgment:
    label: str
    rationale: str
    error: bool = False  # the judge failed: the label is not_applicable and must not be cached


class JudgeItem(NamedTuple):
    claim: str
    evidence: Sequence[str]
    facts: Sequence[str] = ()
    quotes: Sequence[str] = ()


@runtime_checkable
class Judge(Protocol):
    """A support judge. ``settings`` holds every option that can change a verdict (it is part of the cache key)."""

    name: str
    version: str

    @property
    def settings(self) -> Mapping[str, Any]: ...

    def judge(
        self, claim: str, evidence: Sequence[str], facts: Sequence[str] = (), quotes: Sequence[str] = ()
    ) -> Judgment: ...

    def judge_many(self, items: Sequence[JudgeItem]) -> list[Judgment]: ...


class BaseJudge:
    """Convenience base: ``judge_many`` asks ``judge`` one item at a time; no settings, no usage."""

    name = "base"
    version = "0"

    @property
    def settings(self) -> Mapping[str, Any]:
        return {}

    def judge(
        self, claim: str, evidence: Sequence[str], facts: Sequence[str] = (), quotes: Sequence[str] = ()
    ) -> Judgment:
        raise NotImplementedError

    def judge_many(self, items: Sequence[JudgeItem]) -> list[Judgment]:
        return [self.judge(*JudgeItem(*it)) for it in items]

    def usage(self) -> dict[str, float]:
        """Counters for the run summary (model judges: requests, tokens, cost)."""
        return {}


def ident(judge: Judge) -> str:
    """``name@version``, with the settings when there are any: what a run records as its judge."""
    base = f"{judge.name}@{judge.version}"
    settings = dict(judge.settings)
    if not settings:
        return base
    return base + json.dumps(settings, sort_keys=True, separators=(",", ":"), default=str)


def failed(judge: Judge, why: str) -> Judgment:
    return Judgment("not_applicable", why, error=True)


def _checked(judge: Judge, answer: object) -> Judgment:
    if not isinstance(answer, Judgment):
        return failed(judge, f"returned {type(answer).__name__}, not a Judgment")
    if answer.label not in LABELS:
        return failed(judge, f"answered {answer.label!r}, not one of {', '.join(LABELS)}")
    return answer


def judge_all(judge: Judge, items: Sequence[JudgeItem]) -> list[Judgment]:
    """Ask the judge about every item; whatever goes wrong is ``not_applicable`` with the reason, per item."""
    items = [JudgeItem(*it) for it in items]
    if not items:
        return []
    try:
        answers = list(judge.judge_many(items))
        if len(answers) != len(items):
            raise ValueError(f"judge_many returned {len(answers)} answers for {len(items)} items")
    except Exception:  # noqa: BLE001 - a judge's failure must not end the run; ask one at a time to name it
        answers = []
        for it in items:
            try:
                answers.append(judge.judge(*it))
            except Exception as exc:  # noqa: BLE001 - see above
                answers.append(failed(judge, f"{type(exc).__name__}: {exc}"))
    return [_checked(judge, a) for a in answers]
