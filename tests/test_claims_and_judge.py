"""Claim splitting, marker parsing (with properties and real ExpertQA answers) and the rules judge."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from citeline.analyzer.claims.policy import Policy
from citeline.analyzer.claims.splitter import markers, split_answer, split_claims
from citeline.analyzer.judges import RulesJudge
from citeline.analyzer.text import values
from citeline.instrumentation.labels import Shape

DATA = Path(__file__).resolve().parent / "data"  # vendored test data, origin and licence beside it


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Returns take 30 days [2].", [("Returns take 30 days.", ("2",))]),
        (
            "Costs $4.99 [1][3]. Ships in 3 to 5 days [2, 3].",
            [("Costs $4.99.", ("1", "3")), ("Ships in 3 to 5 days.", ("2", "3"))],
        ),
        ("The rate is 4.5% [12]. Next.", [("The rate is 4.5%.", ("12",))]),  # "Next." is a transition
        ("Footnote style[^2]. Done [^1].", [("Footnote style.", ("2",)), ("Done.", ("1",))]),
        (
            "Marker after the stop. [4] Then more [4].",
            [("Marker after the stop.", ("4",)), ("Then more.", ("4",))],
        ),
        (
            "E.g. the U.S. rule applies [1]. Dr. Smith agrees [2].",
            [("E.g. the U.S. rule applies.", ("1",)), ("Dr. Smith agrees.", ("2",))],
        ),
        (
            "- First item costs $5 [1]\n- Second item [2]\n",
            [("First item costs $5", ("1",)), ("Second item", ("2",))],
        ),
        # the header row is no claim; the row is one, its cell a candidate named by its row and column
        (
            "| plan | price |\n|---|---|\n| basic | $5 [3] |\n",
            [("plan: basic; price: $5", ("3",)), ("basic, price: $5", ("3",))],
        ),
        (
            "Use `arr[1]` here [2].\n```\nx = a[3]\n```\nDone [4].",
            [("Use `arr[1]` here.", ("2",)), ("Done.", ("4",))],
        ),
        ("Repeated [1] and again [1].", [("Repeated and again.", ("1",))]),
        ("No sources here.", []),  # nothing to check: counted as not_factual, never a claim
    ],
)
def test_split_claims(text: str, expected: list[tuple[str, tuple[str, ...]]]) -> None:
    assert [(c.text, c.labels) for c in split_claims(text)] == expected


def test_markers_ignore_code_and_keep_repeats() -> None:
    assert markers("a [1] b `[2]` [^3][4, 5] [1]\n```\n[6]\n```") == ["1", "3", "4", "5", "1"]


prose = st.lists(
    st.one_of(
        st.text(alphabet="abcdefgh XYZ.,!?$%0123456789\n-|`", max_size=30),
        st.integers(min_value=1, max_value=40).map(lambda n: f"[{n}]"),
        st.integers(min_value=1, max_value=40).map(lambda n: f"[^{n}]"),
        st.tuples(st.integers(1, 9), st.integers(1, 9)).map(lambda t: f"[{t[0]}, {t[1]}]"),
        st.just("```\ncode [99]\n```"),
        st.just("`x[98]`"),
    ),
    max_size=12,
).map("".join)


@given(prose)
def test_parser_never_invents_a_citation(text: str) -> None:
    split = split_answer(text)
    cited = [label for c in split.claims for label in c.labels]
    found = markers(text)
    # every label a claim cites is a marker in the text, outside code
    assert set(cited) <= set(found)
    # and no marker is lost: every marker found lands on a claim, or on text that is no claim and is
    # counted with its kind (a table's header row)
    assert set(found) <= set(cited) | {label for k in split.skipped for label in k.labels}
    for c in split.claims:
        assert not re.search(r"\[\^?\d{1,2}(?:,\s*\d{1,2})*\]", c.text.replace("`", "")) or "`" in c.text


@given(st.integers(1, 9999), st.integers(1, 9999))
def test_decimals_and_markers_never_split(a: int, b: int) -> None:
    text = f"The value is {a}.{b} units [{a}]."
    (claim,) = split_claims(text, Policy(shape=Shape.of([str(a)])))  # [a] is a label of the map
    assert claim.labels == (str(a),)
    assert claim.text == f"The value is {a}.{b} units."


def test_real_expertqa_answers_parse_every_marker() -> None:
    answers = 0
    for name in ("rand_test.jsonl", "domain_test.jsonl"):
        path = DATA / "expertqa" / name
        assert path.exists(), f"test data missing: {path} (see tests/data/expertqa/ORIGIN.md)"
        for answer in (
            a for line in path.read_text(encoding="utf-8").splitlines() for a in json.loads(line)["answers"].values()
        ):
            text = answer["answer_string"]
            groups = re.findall(r"\[([\d,\s]+)\]", text)  # [3] and [1,2] alike
            expected = {n for g in groups for n in re.findall(r"\d+", g)}
            cited = {label for c in split_claims(text) for label in c.labels}
            assert cited == expected, text[:200]
            for c in split_claims(text):
                assert not re.search(r"\[\d+\]", c.text)
            answers += 1
    assert answers > 300


def test_values_read_amounts_percentages_and_dates() -> None:
    assert values("Fee is ₦150 or 5,000 TRY, 25% off, until January 31, and 3 to 5 business days") == [
        ("money", "NGN", 150.0),
        ("money", "TRY", 5000.0),
        ("percent", "%", 25.0),
        ("date", "", 131.0),
        ("num", "", 3.0),
        ("qty", "bday", 5.0),
    ]
    assert values("costs $4.99 from 2026-01-01") == [("money", "USD", 4.99), ("date", "2026", 101.0)]


@pytest.mark.parametrize(
    ("claim", "facts", "quotes", "label"),
    [
        ("Opened electronics may be returned within 30 days of delivery.", ["30 days"], [], "entailed"),
        ("Opened electronics may be returned within 60 days of delivery.", ["30 days"], [], "contradicted"),
        ("Opened electronics may be returned within 60 days of delivery.", [], [], "contradicted"),
        ("Opened electronics must be returned within 30 days of delivery.", [], [], "contradicted"),
        ("Opened electronics cannot be returned within 30 days of delivery.", [], [], "contradicted"),
        ("Gift cards are refundable in cash at any store.", [], [], "insufficient"),
        ("Returns within 30 days need proof of purchase.", [], ["proof of purchase"], "entailed"),
        ("Returns within 30 days need proof of purchase.", [], ["a receipt and the box"], "contradicted"),
        ("Returns within 30 days need proof of purchase.", [], ["PROOF  of\tpurchase"], "entailed"),
    ],
)
def test_rules_judge(claim: str, facts: list[str], quotes: list[str], label: str) -> None:
    evidence = ["Opened electronics may be returned within 30 days of delivery with proof of purchase."]
    assert RulesJudge().judge(claim, evidence, facts, quotes).label == label


def test_rules_judge_currency_codes_and_symbols() -> None:
    j = RulesJudge()
    ev = ["Hotels above 5,000 TRY per night need manager approval."]
    assert j.judge("Hotels above 5,000 TRY per night need manager approval.", ev).label == "entailed"
    assert j.judge("Hotels above 4,000 TRY per night need manager approval.", ev).label == "contradicted"
    assert j.judge("Hotels above $5,000 per night need manager approval.", ev).label == "insufficient"
    assert j.judge("anything", []).label == "not_applicable"


@pytest.mark.slow
def test_answers_split_on_every_core_give_the_same_columns_in_the_same_order(monkeypatch: pytest.MonkeyPatch) -> None:
    """A large run splits its distinct answers in worker processes: the columns must be exactly one process's."""
    import random

    from citeline.analyzer.run import analyze as _analyze

    rng = random.Random(3)
    parts = [
        "Refunds take {n} business days [{a}].",
        "I cannot verify that from the policies I have.",
        "- Opened items: {n} days [{a}][{b}]\n- Sealed items: 60 days.",
        "Orders over ${n} ship free (e.g. in the U.S.) [^{a}]. Yes.",
        "| plan | days |\n|---|---|\n| basic | {n} [{b}] |",
    ]
    answers = list(
        dict.fromkeys(
            " ".join(
                rng.choice(parts).format(n=rng.randrange(100), a=rng.randrange(1, 9), b=rng.randrange(1, 9))
                for _ in range(rng.randrange(1, 4))
            )
            for _ in range(300)
        )
    )
    import duckdb

    from citeline.analyzer import steps as _steps
    from citeline.analyzer import workers as _workers
    from citeline.analyzer.run import splitting as _splitting

    schemas = {t: _steps.schema(duckdb.connect(), t) for t in _splitting.TABLES}
    one, one_abstains = _splitting.split_answers(answers, _analyze.DEFAULT_ABSTAIN_PHRASES, schemas)
    monkeypatch.setattr(_splitting, "POOL_MIN_ANSWERS", 10)
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    with _workers.pool(2) as pool:  # the executor the run hands the split step
        many, many_abstains = _splitting._split_on(pool, answers, _analyze.DEFAULT_ABSTAIN_PHRASES, schemas)
    assert {t: many[t].to_pylist() for t in many} == {t: one[t].to_pylist() for t in one}
    assert many_abstains == one_abstains
    assert one["t_answer_claims"].num_rows > len(answers) and one["t_text_sets"].num_rows > len(answers)
    assert len(one_abstains) == len(answers) and any(one_abstains) and not all(one_abstains)


@given(text=st.text(alphabet="aZ.. é1-\n", max_size=40), data=st.data())
def test_the_word_before_a_stop_is_what_the_end_anchored_regex_finds(text: str, data: st.DataObject) -> None:
    """The splitter's walk back from a full stop equals re.search(r"([A-Za-z][A-Za-z.]*)$") on the prefix."""
    from citeline.analyzer.claims.blocks import _word_before

    at = data.draw(st.integers(0, len(text)))
    m = re.search(r"([A-Za-z][A-Za-z.]*)$", text[:at])
    assert _word_before(text, at) == (m.group(1) if m else "")


def _sentences_by_slicing(masked: str, start: int, end: int, marks: Any) -> list[tuple[int, int]]:
    """The sentence cutter as it was before issue #37 (it sliced the rest of the block at every stop): the
    reference the walking cutter must equal."""
    from citeline.analyzer.claims import blocks as b

    out: list[tuple[int, int]] = []
    cur = start
    for m in b._END.finditer(masked, start, end):
        stop = marks.run_end(masked, m.end(), end) if marks.marks else m.end()
        rest = masked[stop:end]
        nxt = rest.lstrip()
        if nxt and (len(rest) == len(nxt)):
            continue
        if m.group(0).startswith(".") and len(m.group(0)) == 1 and b._is_abbreviation(masked, m.start()):
            continue
        if nxt and not (nxt[0].isupper() or nxt[0].isdigit() or nxt[0] in "\"'(\u201c[*_\u3010"):
            continue
        out.append((cur, stop))
        cur = stop
    if masked[cur:end].strip():
        out.append((cur, end))
    return out


@settings(max_examples=400, deadline=None)
@given(
    text=st.text(alphabet="aZ.!?\"') \t\n\u00a0\u3000\u201d1é[*_No", max_size=80),
    data=st.data(),
)
def test_the_sentence_cutter_walks_to_the_next_word_as_the_slicing_one_did(text: str, data: st.DataObject) -> None:
    """Cutting a block into sentences without slicing the rest at every stop (linear, where slicing was
    quadratic in a long block) gives the same spans, Unicode spaces, "No. 5" and quotes after the stop included."""
    from citeline.analyzer.claims.blocks import Marks, sentences

    start = data.draw(st.integers(0, len(text)))
    end = data.draw(st.integers(start, len(text)))
    assert sentences(text, start, end, Marks([])) == _sentences_by_slicing(text, start, end, Marks([]))
