"""What every support judge provides, and the one place a judge's failure becomes a label.

A judge answers one of ``LABELS`` with a short rationale. ``judge_all`` is how
the analyzer and ``calibrate`` ask: it never lets a judge's exception, timeout
or unknown label escape as anything but ``not_applicable`` with the reason,
marked ``error`` so the answer is not cached.

An item is the four-tuple it always was (claim, evidence, facts, quotes), so a
judge written against that API keeps working; the question the answer was
given to and each evidence text's ``Source`` ride along as attributes, read by
a judge that says ``reads_context = True`` (and then part of its cache key).
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


class Source(NamedTuple):
    """What is known of one evidence text besides its words: the gold corpus entry it is (docs/gold-format.md)."""

    chunk: str = ""
    doc: str = ""
    version: str = ""
    title: str = ""
    effective_from: str = ""  # ISO date, "" when not given
    effective_to: str = ""  # ISO date, exclusive; "" when open
    status: str = ""  # active, archived, deleted; "" when not known


class _Four(NamedTuple):
    claim: str
    evidence: Sequence[str]
    facts: Sequence[str] = ()
    quotes: Sequence[str] = ()


class JudgeItem(_Four):
    """One claim to judge: ``(claim, evidence, facts, quotes)`` as a tuple, as before (it unpacks, indexes
    and is passed as ``judge(*item)`` the same way), with two keyword-only attributes beside it: the
    ``question`` the answer was given to ("" when not known) and ``sources``, one ``Source`` per evidence
    text (empty when not known)."""

    question: str
    sources: tuple[Source, ...]

    def __new__(
        cls,
        claim: str,
        evidence: Sequence[str],
        facts: Sequence[str] = (),
        quotes: Sequence[str] = (),
        *,
        question: str = "",
        sources: Sequence[Source] = (),
    ) -> JudgeItem:
        item = super().__new__(cls, claim, evidence, facts, quotes)
        item.question = question
        item.sources = tuple(sources)
        return item


def as_item(it: Sequence[Any]) -> JudgeItem:
    """An item as a JudgeItem, keeping its question and sources (``JudgeItem(*it)`` would drop them)."""
    return it if isinstance(it, JudgeItem) else JudgeItem(*it)


def reads_context(judge: object) -> bool:
    """Does the judge read an item's question and sources? (Then they are part of its cache key.)"""
    return bool(getattr(judge, "reads_context", False))


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
    """Convenience base: ``judge_many`` asks ``judge`` one item at a time; no settings, no usage, no context."""

    name = "base"
    version = "0"
    reads_context = False

    @property
    def settings(self) -> Mapping[str, Any]:
        return {}

    def judge(
        self, claim: str, evidence: Sequence[str], facts: Sequence[str] = (), quotes: Sequence[str] = ()
    ) -> Judgment:
        raise NotImplementedError

    def judge_many(self, items: Sequence[JudgeItem]) -> list[Judgment]:
        return [self.judge(*as_item(it)) for it in items]

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
    items = [as_item(it) for it in items]
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
                context = {"question": it.question, "sources": it.sources} if reads_context(judge) else {}
                ask: Any = judge.judge  # a judge that reads no context takes the four fields, as it always did
                answers.append(ask(*it, **context))
            except Exception as exc:  # noqa: BLE001 - see above
                answers.append(failed(judge, f"{type(exc).__name__}: {exc}"))
    return [_checked(judge, a) for a in answers]
