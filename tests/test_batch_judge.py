"""The rules judge's batch (``judge_many``: each distinct claim read once, each tuple of cited texts put
together once, for every item sharing it) answers exactly as its per-item oracle (``judge``), label and
rationale: on random batches whose items share claims and evidence, and on every labelled set in the
repository (WiCE, ExpertQA, RGB, HaluEval) and its own rule cases."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from citeline.analyzer.judges import JudgeItem, Judgment, RulesJudge
from citeline.analyzer.labels.calibrate import examples
from tests.test_rules_judge import RULES, V3

DATA = Path(__file__).resolve().parent / "data"
LABELLED = [
    DATA / "wice" / "claim_test.jsonl",
    DATA / "expertqa" / "domain_test.jsonl",
    DATA / "expertqa" / "rand_test.jsonl",
    DATA / "rgb" / "en_fact.jsonl",
    DATA / "halueval" / "qa_one-turn.jsonl",
]

# words that wake every rule: values, names, negators, may / must, qualifiers, joins, time, sentence ends
_WORDS = (
    "the fee is $20 $25 5% 7% 2023 2019 March 3 in on by per month year Joey Cape NASA United Nations UN "
    "not never no may must can required refunds take days 30 more than less at least most all some only "
    "increased fell rose and but while ; . ! ? , Mr. Dec. between after before since three 3 two"
).split()
_TEXTS = st.lists(st.sampled_from(_WORDS), min_size=0, max_size=14).map(" ".join)


def _oracle(judge: RulesJudge, items: list[JudgeItem]) -> list[Judgment]:
    return [judge.judge(*it) for it in items]


@settings(max_examples=150, deadline=None)
@given(
    claims=st.lists(_TEXTS, min_size=1, max_size=4),
    passages=st.lists(_TEXTS, min_size=1, max_size=4),
    picks=st.lists(
        st.tuples(
            st.integers(0, 3),
            st.lists(st.integers(0, 3), max_size=3),
            st.sampled_from([(), ("The fee is $20.",), ("refunds",), ("March 3 2023",)]),
            st.sampled_from([(), ("fee is",), ("absent quote",)]),
        ),
        min_size=1,
        max_size=12,
    ),
    version=st.sampled_from(["2", "3", "4"]),
)
def test_the_batch_answers_as_the_per_item_judge_on_items_that_share_texts(
    claims: list[str],
    passages: list[str],
    picks: list[tuple[int, list[int], tuple[str, ...], tuple[str, ...]]],
    version: str,
) -> None:
    """Items drawn from a few claims and passages (so they share them, as a run's items do), with gold facts,
    quotes, empty and missing evidence: the batch gives the oracle's answer to each, in order."""
    items = [
        JudgeItem(claims[c % len(claims)], [passages[e % len(passages)] for e in ev], list(facts), list(quotes))
        for c, ev, facts, quotes in picks
    ]
    judge = RulesJudge(version=version, workers=1)
    assert judge.judge_many(items) == _oracle(judge, items)


@pytest.mark.parametrize("version", ["2", "3", "4"])
@pytest.mark.parametrize("path", LABELLED, ids=[f"{p.parent.name}-{p.stem}" for p in LABELLED])
def test_the_batch_answers_as_the_per_item_judge_on_each_labelled_set(path: Path, version: str) -> None:
    """Each labelled pair, and each claim again against the next pair's evidence (a claim met with several
    evidence sets, as in a run): the batch equals the oracle on every one."""
    found, _left_out, _problems = examples(path)
    items = [JudgeItem(x.claim, list(x.evidence)) for x in found]
    items += [JudgeItem(a.claim, list(b.evidence)) for a, b in itertools.pairwise(found)]
    assert len(items) >= 2 * len(found) - 1 > 100
    judge = RulesJudge(version=version, workers=1)
    got = judge.judge_many(items)
    assert got == _oracle(judge, items)
    assert {j.label for j in got} >= {"entailed", "insufficient"}


@pytest.mark.parametrize("version", ["2", "3", "4"])
def test_the_batch_answers_as_the_per_item_judge_on_the_rule_cases(version: str) -> None:
    """The repository's own cases (each rule's motivating example, each qualifier v3 reads and its twin),
    each claim also against every other case's evidence."""
    pairs = [(c, e) for _rule, c, e, *_rest in (*RULES, *V3)]
    items = [JudgeItem(c, [e]) for c, e in pairs] + [JudgeItem(c, [e]) for c, _ in pairs for _, e in pairs[:8]]
    judge = RulesJudge(version=version, workers=1)
    got = judge.judge_many(items)
    assert got == _oracle(judge, items)
    assert {j.label for j in got} == {"entailed", "insufficient", "contradicted"}


class _Contrary(RulesJudge):
    """A subclass that judges its own way (as a scripted or model-backed judge built on this one does)."""

    name = "contrary"

    def judge(self, claim: str, evidence: Any, facts: Any = (), quotes: Any = ()) -> Judgment:
        return Judgment("contradicted", f"contrary on {claim[:10]}")


@pytest.mark.parametrize("large", [False, True], ids=["in this process", "a batch large enough for a pool"])
def test_a_subclass_that_overrides_judge_is_asked_every_item(monkeypatch: pytest.MonkeyPatch, large: bool) -> None:
    """The batch (and the pool's chunks, which judge as the base class) never stand in for a subclass's own
    ``judge``: every item is asked of it, as BaseJudge's judge_many does."""
    from citeline.analyzer.judges import _rules

    if large:
        monkeypatch.setattr(_rules, "PARALLEL_MIN", 1)
    items = [JudgeItem(f"The fee is ${n}.", [f"The fee is ${n}."]) for n in range(6)]
    got = _Contrary(workers=2).judge_many(items)
    assert got == [Judgment("contradicted", "contrary on The fee is")] * 6
