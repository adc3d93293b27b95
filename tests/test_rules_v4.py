"""Rules v4 (issue #36): the structure readers, each on a case built from the seed articles' own wording that
v3 calls entailed, with its twin that v4 still calls entailed, and the reader as an option."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from citeline.analyzer.judges import RulesJudge, load
from citeline.analyzer.judges import _structure as struct
from citeline.analyzer.run.analyze import analyze
from citeline.analyzer.text import fold
from tests.conftest import make_tracing
from tests.test_corpus_basis import _ask

# seed 004: 'Synthetic source FEE-2 says "domestic transfer fee is ₦150; international fee is ₦500." Ask for
# the international fee. An answer of ₦150 with a valid FEE-2 citation passes a structural link check and
# fails the meaning check.'
FEE_2 = "FEE-2: domestic transfer fee is ₦150; international fee is ₦500."
# seed 001: "Source supports half the sentence | Partially supported | Split claims and remove unsupported
# content"; the passage says the first half, and has a 10% of its own about something else
REFUNDS = "Refunds are issued within 5 business days. A 10% restocking fee is added to opened items."
PLANS = "The Basic plan costs $10 a month and the Pro plan costs $20 a month."
# seed 000: "Pay particular attention to ... temporal qualifiers"
WAIVED = "Since March 2024 the transfer fee is waived."

# fmt: skip below: a table, one case a row with its fields across (ruff would set one field a line)
CASES = [
    # (reader, claim, evidence, v4 label, v4 rationale)
    ("binding", "The international transfer fee is ₦150.", FEE_2, "contradicted",
     "the claim binds 150 NGN to 'the international transfer fee is ₦150'; the evidence binds 150 NGN to "
     "'domestic transfer fee is ₦150' and 500 NGN to 'international fee is ₦500'"),
    ("binding", "The Pro plan costs $10 a month.", PLANS,
     "contradicted", "the claim binds 10 USD to 'the pro plan costs $10 a month'; the evidence binds 10 USD to "
     "'the basic plan costs $10 a month' and 20 USD to 'the pro plan costs $20 a month'"),
    ("split", "Refunds are issued within 5 business days and a 10% store credit is added.", REFUNDS, "insufficient",
     "partly supported: the evidence does not support 'a 10% store credit is added' (only 'refunds are issued "
     "within 5 business days' and what it shares with it)"),
    ("time", "Before 2024 the transfer fee was waived.", WAIVED, "contradicted",
     "the claim speaks of 'before 2024', the evidence of 'since march 2024' (the other period)"),
    ("time", "Since 2024 the transfer fee is waived.", WAIVED, "insufficient",
     "the claim speaks of 'since 2024', the evidence only of 'since march 2024'"),
]  # fmt: skip

# each case's twin: the same reader reads it and finds it supported (v3 and v4 both entailed)
# fmt: skip below: a table, one twin a row
TWINS = [
    ("binding", "The domestic transfer fee is ₦150.", FEE_2),  # the domestic fee asked for the domestic fee
    ("binding", "The international transfer fee is ₦500.", FEE_2),
    ("binding", "The domestic fee is ₦150 and the international fee is ₦500.", FEE_2),
    ("binding", "The Pro plan costs $20 a month.", PLANS),
    ("binding", "The population was 7,000 in 2020.", "In 2010 the population was 5,000, and by 2020 it was 7,000."),
    ("split", "Refunds are issued within 5 business days and a 10% restocking fee is added to opened items.", REFUNDS),
    ("split", "Refunds are issued within 5 business days.", REFUNDS),  # the fully supported sentence
    ("time", "Since March 2024 the transfer fee is waived.", WAIVED),  # the same period
    ("time", "As of June 2024 the transfer fee is waived.", WAIVED),  # inside it
    # the claim's year is another fact's: the window writes it outside the period it opens
    ("time", "The firm was founded in 2005 and has grown since 2010.", "Founded 2005, the firm has grown since 2010."),
    ("time", "The transfer fee is waived from 1 July 2024.", "Effective 1 July 2024, the transfer fee is waived."),
]  # fmt: skip


@pytest.mark.parametrize(
    ("reader", "claim", "evidence", "label", "rationale"), CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)]
)
def test_v4_reads_what_v3_called_entailed(reader: str, claim: str, evidence: str, label: str, rationale: str) -> None:
    v3 = RulesJudge(version=3, workers=1).judge(claim, [evidence])
    assert v3.label == "entailed", v3  # the defect issue #36 reports
    v4 = RulesJudge(workers=1).judge(claim, [evidence])
    assert (v4.label, v4.rationale) == (label, rationale)
    off = load("rules", **{reader: "false"}, workers="1")  # the reader is what decides
    assert off.judge(claim, [evidence]).label == "entailed"
    assert dict(off.settings) == {reader: False}


@pytest.mark.parametrize(("reader", "claim", "evidence"), TWINS, ids=[f"{t[0]}-{i}" for i, t in enumerate(TWINS)])
def test_v4_twins_stay_entailed(reader: str, claim: str, evidence: str) -> None:
    for version in ("3", "4"):
        j = RulesJudge(version=version, workers=1).judge(claim, [evidence])
        assert j.label == "entailed", (reader, version, j.rationale)


def test_fee_2_end_to_end_on_the_corpus_basis(tmp_path: Path) -> None:
    """The seed's case as a run meets it: a real trace of an answer citing FEE-2, analyzed with a corpus that
    holds it and no gold case. The international fee answered with the domestic value is grounding, with
    both bindings in the reason; the domestic fee answered with it is ok (rules v3 called both ok)."""
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(json.dumps({"chunk_id": "fee-2#1", "doc_id": "fee-2", "text": FEE_2}) + "\n", encoding="utf-8")
    hit = {"doc_id": "fee-2", "chunk_id": "fee-2#1", "version": "1", "text": FEE_2}
    t = make_tracing(tmp_path)
    _ask([hit], "The international transfer fee is ₦150 [1].", "What is the international transfer fee?")
    _ask([hit], "The domestic transfer fee is ₦150 [1].", "What is the domestic transfer fee?")
    t.handle.shutdown()
    rows = analyze(tmp_path / "s.duckdb", corpus=corpus, traces=[t.trace_dir]).claims.to_dicts()
    got = sorted((r["claim_text"], r["basis"], r["bucket"], r["support_label"], r["reason"]) for r in rows)
    assert got[0][:4] == ("The domestic transfer fee is ₦150.", "corpus", "ok", "entailed")
    assert got[1][:4] == ("The international transfer fee is ₦150.", "corpus", "grounding", "contradicted")
    assert (
        "the evidence binds 150 NGN to 'domestic transfer fee is ₦150' and 500 NGN to 'international fee" in got[1][4]
    )


# fmt: skip below: the pieces read across (ruff would set one a line)
_PIECES = [
    "since", "before", "until", "after", "from", "as of", "in", "starting", "effective", "March 2024", "2024", "2023",
    "1 July 2024", "31 February 2024", "2024-13-01", "2024-03", "₦150", "₦500", "$10", "10%", ";", ",", ":", "and",
    "but", "while", "domestic", "international", "transfer", "fee", "is", "the", "plan", "Pro", "added", "credit",
]  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(
    claim=st.lists(st.sampled_from(_PIECES), max_size=12).map(" ".join),
    window=st.lists(st.lists(st.sampled_from(_PIECES), max_size=12).map(" ".join), min_size=1, max_size=3),
)
def test_every_structure_reader_answers_a_verdict_or_nothing_on_any_text(claim: str, window: list[str]) -> None:
    """Impossible dates ("31 February 2024", month 13), empty clauses and lone marks included."""
    c, w = fold(claim), [fold(s) for s in window]
    vocab = frozenset(" ".join(w).split())
    found = [
        struct.binding(c, w),
        struct.time(c, w),
        struct.split(c, lambda part: frozenset(part.split()), vocab.__contains__, 0.5),
    ]
    assert all(j is None or j.label in ("contradicted", "insufficient") for j in found)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), min_size=1, max_size=14))
def test_v4_never_takes_back_a_claim_against_its_own_text(words: list[str]) -> None:
    """Whatever a sentence binds, splits or dates, the same sentence as evidence agrees with it."""
    text = " ".join(words) + "."
    v3 = RulesJudge(version=3, workers=1).judge(text, [text])
    v4 = RulesJudge(workers=1).judge(text, [text])
    assert v4.label == v3.label or v3.label != "entailed", (text, v4.rationale)
