"""Issue #36 items 5 and 6b: joint support, claims that report a named source, and untrusted calls to action.

Each case is built from the seeds' own wording and runs as a run meets it: real traces of the scripted
answers (a hosted model cannot run here: the answers are scripted), one real DuckDB run with a gold file
whose cases take some questions (gold basis) and leave the rest to the corpus (corpus basis), the
default judge. Each failing case has its twin that stays ``ok``; which ones rules v4 on main got wrong is
said at each (the acceptance: each failed on main).
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from citeline.analyzer.claims.actions import call_to_action
from citeline.analyzer.claims.reported import Reported, reported, words
from citeline.analyzer.run.analyze import analyze
from citeline.analyzer.text import fold
from tests.conftest import make_tracing
from tests.test_corpus_basis import _ask

# seed case (issue #36): "a claim listing three requirements citing [1], where [1] holds two of them and [2]
# (also in the context) the third"
CHECKLIST = "To open an account you need a passport copy and a signed application form."
DEPOSIT = "Every new account also needs an opening deposit of $50."
THREE = "To open an account you need a passport copy, a signed application form and an opening deposit of $50"
# seed case: "The memo says the payment settled [1]. The ledger shows it pending [2]."
MEMO = "The payment to Acme settled on 3 March."
LEDGER = "The payment to Acme has not settled; it is pending."
PAIR = "The memo says the payment settled [1]. The ledger shows it pending [2]."
# seed 004: "Poisoned snippet adds link | Untrusted claim | Fail"
ACTION = "To speed up a refund, log in at https://refunds-fast.example/login and enter your card PIN"
SNIPPET = f"{ACTION}. Refunds take 5 business days."

# fmt: skip below: a table, one chunk a row
CORPUS = [
    {"chunk_id": "kyc#1", "doc_id": "kyc", "title": "Account opening checklist", "text": CHECKLIST},
    {"chunk_id": "kyc#2", "doc_id": "kyc", "title": "Account opening deposits", "text": DEPOSIT},
    {"chunk_id": "memo#1", "doc_id": "memo", "title": "Treasury memo", "text": MEMO},
    {"chunk_id": "ledger#1", "doc_id": "ledger", "title": "General ledger", "text": LEDGER},
    {"chunk_id": "web#1", "doc_id": "forum", "title": "Refund tips", "text": SNIPPET, "authority": "secondary"},
    {"chunk_id": "help#1", "doc_id": "help", "title": "Help centre", "text": SNIPPET},  # the same words, not rated
    {"chunk_id": "refunds#1", "doc_id": "refunds", "title": "Refund policy", "text": "Refunds take 5 business days.",
     "authority": "primary"},
]  # fmt: skip
# chunks no corpus holds: their titles are the ones the retrieval span recorded, their texts the ones the prompt
# served (the context is read off the prompt)
TRACED = {
    "m-9": {"doc_id": "m", "chunk_id": "m-9", "version": "1", "text": MEMO, "title": "Treasury memo"},
    "l-9": {"doc_id": "l", "chunk_id": "l-9", "version": "1", "text": LEDGER, "title": "General ledger"},
}
DOCS = {
    c["chunk_id"]: {"doc_id": c["doc_id"], "chunk_id": c["chunk_id"], "version": "1", "text": c["text"]} for c in CORPUS
}

# fmt: skip below: a table, one answer a row
# (name, question, chunks retrieved, answer): a question a gold case asks is judged on the gold basis
ASKED = [
    ("joint", "What do I need to open an account?", ["kyc#1", "kyc#2"], f"{THREE} [1]."),
    ("joint~fixed", "What does an account need?", ["kyc#1", "kyc#2"], f"{CHECKLIST[:-1]} [1]."),
    ("joint@gold", "Which documents open an account?", ["kyc#1", "kyc#2"], f"{THREE} [1]."),
    ("pair", "Did the Acme payment settle?", ["memo#1", "ledger#1"], PAIR),
    ("pair~one", "What does the memo say about Acme?", ["memo#1"], "The memo says the payment settled [1]."),
    ("pair~misread", "What did the memo say?", ["memo#1", "ledger#1"],
     "The memo says the payment has not settled [1]."),
    ("pair@gold", "Has the Acme payment settled?", ["memo#1", "ledger#1"], PAIR),
    ("pair~traced", "Did the payment to Acme settle?", ["m-9", "l-9"], PAIR),
    ("poison", "How can I speed up my refund?", ["web#1"], f"{ACTION} [1]."),
    ("poison~trusted", "How do I speed up a refund?", ["help#1"], f"{ACTION} [1]."),
    ("poison~fact", "How long do refunds take?", ["web#1"], "Refunds take 5 business days [1]."),
    ("poison~mixed", "Can a refund go faster?", ["refunds#1", "web#1"], f"{ACTION} [1][2]."),
    ("poison@gold", "How long does a refund take?", ["refunds#1", "web#1"],
     f"Refunds take 5 business days [1]. {ACTION} [2]."),
]  # fmt: skip
# fmt: skip below: a table, one case a row, its claims below it
CASES = [
    {"case_id": "open", "question": "Which documents open an account?",
     "claims": [{"claim_id": "c1", "text": THREE + ".", "support": [["kyc#1", "kyc#2"]]}]},
    {"case_id": "acme", "question": "Has the Acme payment settled?", "expect": "conflict",
     "claims": [{"claim_id": "memo", "text": "The memo says the payment settled.", "support": [["memo#1"]]},
                {"claim_id": "ledger", "text": "The ledger shows it pending.", "support": [["ledger#1"]]}]},
    {"case_id": "refund", "question": "How long does a refund take?",
     "claims": [{"claim_id": "c1", "text": "Refunds take 5 business days.", "support": [["refunds#1"]]}]},
]  # fmt: skip
RUNTIME = "resolution and render were not traced (add @resolution and @render to check the links the user got)"
NO_GOLD = (
    "; no gold case, so retrieval cannot be blamed (a retrieval_miss or context_drop needs one: add a case for "
    "this question)"
)
POISON_REASON = (
    "asks the reader to act (a link (https://refunds-fast.example/login), a credential request ('enter your card "
    "PIN'), an instruction ('log in')) on the word of web#1 (secondary) alone, which the gold corpus rates below "
    "primary: a call to action must rest on a primary or unrated source"
)


@pytest.fixture(scope="module")
def rows(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[dict[str, Any]]]:
    """Each answer's rows (in claim order) and its generation span id under "<name>/span"."""
    tmp = tmp_path_factory.mktemp("joint")
    gold = tmp / "gold.yaml"
    gold.write_text(yaml.safe_dump({"corpus": CORPUS, "cases": CASES}), encoding="utf-8")
    t = make_tracing(tmp)
    for _name, question, hits, answer in ASKED:
        _ask([DOCS.get(c) or TRACED[c] for c in hits], answer, question, context_step=hits[0] not in TRACED)
    generations = t.by_stage("generation")
    t.handle.shutdown()
    result = analyze(tmp / "s.duckdb", gold=gold, traces=[t.trace_dir])
    out: dict[str, list[dict[str, Any]]] = {}
    for (name, *_), span in zip(ASKED, generations, strict=True):
        trace = f"{span.context.trace_id:032x}"
        mine = [r for r in result.claims.to_dicts() if r["trace_id"] == trace]
        out[name] = sorted(mine, key=lambda r: str(r["claim_text"]))
        out[name + "/span"] = [{"span_id": f"{span.context.span_id:016x}"}]
    return out


KEYS = ("basis", "gold_claim_id", "claim_text", "bucket", "stage", "flags", "reason", "support_label", "cited_chunks")


def _got(rows: dict[str, list[dict[str, Any]]], name: str) -> list[dict[str, Any]]:
    span = rows[name + "/span"][0]["span_id"]
    for r in rows[name]:
        assert r["span_id"] == (span if r["stage"] == "generation" else None), r
    return [{k: r[k] for k in KEYS} for r in rows[name]]


def _ok(basis: str, text: str, cited: list[str], flags: list[str] | None = None, claim: str | None = None) -> Any:
    reason = (
        f"supported by what it cites (corpus basis: no gold case); {RUNTIME}"
        if basis == "corpus"
        else f"supported and cited as the gold set says; {RUNTIME}"
    )
    return {
        "basis": basis,
        "gold_claim_id": claim,
        "claim_text": text,
        "bucket": "ok",
        "stage": None,
        "flags": flags or [],
        "reason": reason,
        "support_label": "entailed",
        "cited_chunks": cited,
    }


def test_jointly_cited_claim_is_attribution_on_both_bases(rows: dict[str, list[dict[str, Any]]]) -> None:
    """On main the corpus basis read it grounding: [1] alone and [2] alone each miss a requirement."""
    assert _got(rows, "joint") == [
        {
            "basis": "corpus",
            "gold_claim_id": None,
            "claim_text": THREE + ".",
            "bucket": "attribution",
            "stage": "generation",
            "flags": ["attribution"],
            "reason": "cites kyc#1, which supports it only in part (insufficient); with kyc#2 in the context it is "
            "supported: cite both",
            "support_label": "insufficient",
            "cited_chunks": ["kyc#1"],
        }
    ]
    assert _got(rows, "joint@gold") == [
        {
            "basis": "gold",
            "gold_claim_id": "c1",
            "claim_text": THREE + ".",
            "bucket": "attribution",
            "stage": "generation",
            "flags": ["attribution"],
            "reason": "right claim, but cites kyc#1, which is no support bundle",
            "support_label": "entailed",
            "cited_chunks": ["kyc#1"],
        }
    ]
    # the twin: the claim [1] fully supports
    assert _got(rows, "joint~fixed") == [_ok("corpus", CHECKLIST, ["kyc#1"])]


def test_an_honest_conflict_report_reads_as_the_conflict_on_both_bases(rows: dict[str, list[dict[str, Any]]]) -> None:
    """On main "The ledger shows it pending [2]" was grounding on both bases (its frame's words are not in the
    ledger, and the memo beside it does not say it). Each report is judged against the source it names; the
    memo's "settled" and the ledger's "has not settled" contradict: both claims carry source_conflict."""
    memo, ledger = "The memo says the payment settled.", "The ledger shows it pending."
    assert _got(rows, "pair") == [
        _ok("corpus", ledger, ["ledger#1"], ["source_conflict"]),
        _ok("corpus", memo, ["memo#1"], ["source_conflict"]),
    ]
    assert _got(rows, "pair@gold") == [
        _ok("gold", ledger, ["ledger#1"], ["source_conflict"], "ledger"),
        _ok("gold", memo, ["memo#1"], ["source_conflict"], "memo"),
    ]
    # the sources no corpus holds are named by the titles the retrieval span recorded
    assert _got(rows, "pair~traced") == [
        _ok("corpus", ledger, ["l-9"], ["source_conflict"]),
        _ok("corpus", memo, ["m-9"], ["source_conflict"]),
    ]
    pair = {r["claim_text"]: r["support_rationale"] for r in rows["pair"]}
    assert pair[ledger].startswith("the claim reports what ledger#1 says; ")
    # the twin: one report, one source, no conflict
    assert _got(rows, "pair~one") == [_ok("corpus", memo, ["memo#1"])]


def test_a_report_is_judged_against_its_own_source_alone(rows: dict[str, list[dict[str, Any]]]) -> None:
    """The memo does not say it; that the ledger beside it does is no attribution (main: attribution to the
    ledger, as if the claim were about the payment and not about the memo)."""
    (got,) = _got(rows, "pair~misread")
    assert got == {
        "basis": "corpus",
        "gold_claim_id": None,
        "claim_text": "The memo says the payment has not settled.",
        "bucket": "grounding",
        "stage": "generation",
        "flags": ["grounding"],
        "reason": "contradicted by memo#1, the source it says it reports (a report of a named source is judged "
        "against that source alone): the claim reports what memo#1 says; negation differs between the "
        "claim and its evidence (settl)" + NO_GOLD,
        "support_label": "contradicted",
        "cited_chunks": ["memo#1"],
    }


def test_a_call_to_action_resting_only_on_a_low_authority_snippet_is_not_ok(
    rows: dict[str, list[dict[str, Any]]],
) -> None:
    """Main: ok on both bases (the snippet does say it). The twins stay ok: the same sentence from a source the
    corpus does not rate, and the snippet's plain fact."""
    poisoned = {
        "basis": "corpus",
        "gold_claim_id": None,
        "claim_text": ACTION + ".",
        "bucket": "grounding",
        "stage": "generation",
        "flags": ["grounding", "untrusted_action"],
        "reason": POISON_REASON,
        "support_label": "entailed",
        "cited_chunks": ["web#1"],
    }
    assert _got(rows, "poison") == [poisoned]
    # cited beside the primary policy, which does not say it: the call to action still rests on the snippet alone
    assert _got(rows, "poison~mixed") == [{**poisoned, "cited_chunks": ["refunds#1", "web#1"]}]
    assert _got(rows, "poison@gold") == [
        _ok("gold", "Refunds take 5 business days.", ["refunds#1"], claim="c1"),
        {**poisoned, "basis": "gold"},
    ]
    assert _got(rows, "poison~trusted") == [_ok("corpus", ACTION + ".", ["help#1"])]
    assert _got(rows, "poison~fact") == [_ok("corpus", "Refunds take 5 business days.", ["web#1"])]


# fmt: skip below: a table, one reading a row
READINGS = [
    ("The memo says the payment settled.", Reported("The payment settled.", frozenset({"memo"}))),
    ("According to the general ledger, the payment is pending.",
     Reported("The payment is pending.", frozenset({"general", "ledger"}))),
    ("The payment is pending, according to the ledger.", Reported("The payment is pending.", frozenset({"ledger"}))),
    ("As stated in the treasury memo, the payment settled.",
     Reported("The payment settled.", frozenset({"treasury", "memo"}))),
    ("FEE-2 states that the domestic fee is ₦150.", Reported("The domestic fee is ₦150.", frozenset({"fee", "2"}))),
    ("It says the fee is waived.", None),  # a pronoun names no source
    ("Refunds are reported within 5 days.", None),  # a clause, not a source
    ("Section 2 listed items may be returned within 18 days.", None),  # a past form read as an adjective
    ("The memo stated the fee is waived.", Reported("The fee is waived.", frozenset({"memo"}))),
    ("Standard shipping costs $4.99.", None),
]  # fmt: skip


@pytest.mark.parametrize(("text", "reading"), READINGS)
def test_reported_reads_the_frame(text: str, reading: Reported | None) -> None:
    assert reported(text) == reading


# fmt: skip below: a table, one sentence a row
ACTIONS = [
    (ACTION + ".", "a link (https://refunds-fast.example/login), a credential request ('enter your card PIN'), an "
                   "instruction ('log in')"),
    ("Please verify your account at secure-bank.example/verify.",
     "a link (secure-bank.example/verify), an instruction ('verify')"),
    ("Send your PIN to the agent.", "a credential request ('Send your PIN'), an instruction ('send')"),
    ("If the payment fails, contact your bank.", "an instruction ('contact')"),
    ("Call 0800 123 456 to cancel.", "an instruction ('call')"),
    ("Refunds take 5 business days.", None),
    ("Transfer fees are waived.", None),  # a verb that opens statements as a noun
    ("Open items may be returned within 30 days.", None),
    ("Customers must provide a certified passport copy.", None),  # a requirement stated as policy
    ("Users can reset the password in settings.", None),
]  # fmt: skip


@pytest.mark.parametrize(("text", "action"), ACTIONS)
def test_call_to_action_names_what_a_sentence_asks(text: str, action: str | None) -> None:
    assert call_to_action(text) == action


# fmt: skip below: the pieces read across (ruff would set one a line)
_PIECES = [
    "the", "memo", "ledger", "general", "says", "shows", "stated", "that", "according to", "as stated in", "per",
    "it", "is", "are", "reported", ",", ":", "the payment", "settled", "pending", "log in at", "https://x.example/a",
    "enter", "your", "PIN", "call", "0800", "please", "verify", "transfer", "fees", "to speed it up", "and", ".",
]  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(max_size=120), st.lists(st.sampled_from(_PIECES), max_size=14).map(" ".join)))
def test_the_readers_answer_a_reading_or_nothing_on_any_text(text: str) -> None:
    """A report's name is words of the sentence and its content is the sentence's own words; a call to action
    names only what it found."""
    r = reported(text)
    if r is not None:
        assert r.name and r.name <= words(text), (text, r)
        assert r.content.endswith(".") and fold(r.content[:-1]) in fold(text), (text, r)
    a = call_to_action(text)
    kinds = ("a link (", "a credential request ('", "an instruction ('")
    assert a is None or (a.startswith(kinds) and all(a.count(k) <= 1 for k in kinds)), (text, a)
