"""The judge item carries the question and each chunk's source (issue #24) without breaking a judge written
against the four-field API: it still unpacks, indexes and is passed as ``judge(*item)`` as before."""

from __future__ import annotations

import pickle
from collections.abc import Sequence
from typing import Any

import duckdb

from citeline.analyzer.judges import BaseJudge, JudgeItem, Judgment, RulesJudge, Source, judge_all
from citeline.analyzer.run.judgment_cache import CachedJudge

SOURCE = Source("returns-v4#eligibility-2", "returns", "v4", "Returns policy", "2026-01-01", "", "active")
ITEM = JudgeItem("Returns take 30 days.", ["Returns are accepted for 30 days."], ["30 days"], [], question="Q?")


class FourFields(BaseJudge):
    """A plug-in as written before: judge() takes the four fields, nothing else."""

    name, version = "four", "1"

    def judge(
        self, claim: str, evidence: Sequence[str], facts: Sequence[str] = (), quotes: Sequence[str] = ()
    ) -> Judgment:
        return Judgment("entailed", f"{claim} | {len(evidence)} | {list(facts)} | {list(quotes)}")


class Unpacking(FourFields):
    """A plug-in whose batch form unpacks each item into the four names."""

    name = "unpacking"

    def judge_many(self, items: Sequence[JudgeItem]) -> list[Judgment]:
        out = []
        for claim, evidence, facts, quotes in items:
            out.append(self.judge(claim, evidence, facts, quotes))
        return out


class Reading(BaseJudge):
    """A judge that asks for the context, and whose batch form fails: the one-at-a-time fallback keeps it."""

    name, version = "reading", "1"
    reads_context = True

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
        return Judgment("insufficient", f"{question} | {[s.doc for s in sources]}")

    def judge_many(self, items: Sequence[JudgeItem]) -> list[Judgment]:
        raise RuntimeError("batch endpoint down")


def test_an_item_is_still_the_four_tuple_with_the_context_beside_it() -> None:
    item = JudgeItem("c", ["e"], question="Q?", sources=[SOURCE])
    claim, evidence, facts, quotes = item
    assert (item.question, item.sources) == ("Q?", (SOURCE,))
    assert (claim, evidence, facts, quotes, len(item), item[0]) == ("c", ["e"], (), (), 4, "c")
    assert isinstance(item, tuple) and item == ("c", ["e"], (), ())
    assert (JudgeItem("c", ["e"]).question, JudgeItem("c", ["e"]).sources) == ("", ())
    again = pickle.loads(pickle.dumps(item))  # worker processes receive items pickled
    assert (tuple(again), again.question, again.sources) == (tuple(item), "Q?", (SOURCE,))


def test_judges_written_against_the_four_field_api_keep_working() -> None:
    items: list[Any] = [ITEM, ("Plain tuple.", ["text"])]  # a plain tuple too, as such plug-ins were given
    for judge in (FourFields(), Unpacking()):
        assert [(j.label, j.rationale) for j in judge_all(judge, items)] == [
            ("entailed", "Returns take 30 days. | 1 | ['30 days'] | []"),
            ("entailed", "Plain tuple. | 1 | [] | []"),
        ]


def test_a_judge_that_reads_context_gets_it_even_one_item_at_a_time() -> None:
    item = JudgeItem("c", ["e"], question="Can I return it?", sources=[SOURCE])
    (j,) = judge_all(Reading(), [item])
    assert (j.label, j.rationale, j.error) == ("insufficient", "Can I return it? | ['returns']", False)


def test_the_context_is_in_the_cache_key_only_for_a_judge_that_reads_it() -> None:
    con = duckdb.connect()
    plain, reading = CachedJudge(con, RulesJudge(workers=1)), CachedJudge(con, Reading())
    base: tuple[str, list[str], list[str], list[str]] = (
        "Returns take 30 days.",
        ["Returns are accepted for 30 days."],
        [],
        [],
    )
    assert plain.key(*base) == plain.key(*base, question="Other?", sources=[SOURCE])
    keys = {
        reading.key(*base),
        reading.key(*base, question="Q?"),
        reading.key(*base, question="Q?", sources=[SOURCE]),
        reading.key(*base, question="Q?", sources=[SOURCE._replace(version="v5")]),
    }
    assert len(keys) == 4


def test_a_subclass_of_the_rules_judge_keeps_the_version_it_names() -> None:
    class Tuned(RulesJudge):
        name, version = "tuned", "7"

    assert (Tuned().version, Tuned(version=2).version, Tuned(version=2).rules_version) == ("7", "7", "2")
    assert (RulesJudge().version, RulesJudge(version=2).version) == ("4", "2")
