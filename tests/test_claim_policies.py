"""How an answer becomes claims, policy by policy (docs/analyzer.md, "How an answer becomes claims"): the
examples of that section, each split exactly, plus what is no claim, reference lists, tables in HTML, bad
policy settings, and the ExpertQA answers against what main's splitter found in them."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest

from citeline.analyzer.claims.policy import EXEMPT_KINDS, Policy, PolicyError, attach_policy, exempt_kinds
from citeline.analyzer.claims.splitter import Split, skipped_kinds, split_answer, split_claims
from citeline.analyzer.claims.tables import row_parts
from citeline.analyzer.gold.goldset import load_gold
from citeline.instrumentation.labels import Shape

DATA = Path(__file__).resolve().parent / "data"
EIGHT = Shape.of([str(n) for n in range(1, 9)])


def _claims(text: str, attach: str = "auto") -> list[tuple[str, tuple[str, ...]]]:
    """The claims under ``attach``, without the whole sentences that only matching reads."""
    return [(c.text, c.labels) for c in split_claims(text, Policy(attach=attach, shape=EIGHT)) if not c.joins]


COMPOUND = "Opened devices can be returned within 30 days [1], and refunds take 5 business days [2]."
PARAGRAPH = "Opened devices can be returned within 30 days. Refunds take 5 business days. A 15% fee applies [1]."
MIXED = "Returns take 30 days [1]. Refunds take 5 business days. A 15% fee applies [2]."
ITEMS = "- Opened devices: 30 days. Sealed devices: 60 days [1]\n- Refunds take 5 business days [2]"
TABLE = "| Plan | Price | Refund window |\n|---|---|---|\n| Basic | $5 | 30 days [1] |\n| Pro | $12 [2] | 60 days |\n"


@pytest.mark.parametrize(
    ("attach", "text", "expected"),
    [
        # auto: a marker closing a clause covers its clause; a block's only closing markers cover it
        (
            "auto",
            COMPOUND,
            [("Opened devices can be returned within 30 days.", ("1",)), ("refunds take 5 business days.", ("2",))],
        ),
        (
            "auto",
            PARAGRAPH,
            [
                ("Opened devices can be returned within 30 days.", ("1",)),
                ("Refunds take 5 business days.", ("1",)),
                ("A 15% fee applies.", ("1",)),
            ],
        ),
        # ... but not when other sentences of the block cite: the middle one is uncited
        (
            "auto",
            MIXED,
            [("Returns take 30 days.", ("1",)), ("Refunds take 5 business days.", ()), ("A 15% fee applies.", ("2",))],
        ),
        # ... and a table row is one claim, its cells labelled by their headers, citing every marker of the row
        # (issue #36; its cells are kept as candidates for matching: test_a_table_row_is_one_claim_...)
        (
            "auto",
            TABLE,
            [
                ("Plan: Basic; price: $5; refund window: 30 days", ("1",)),
                ("Plan: Pro; price: $12; refund window: 60 days", ("2",)),
            ],
        ),
        # sentence: a marker covers its sentence (main's reading); a table row is one claim
        (
            "sentence",
            COMPOUND,
            [("Opened devices can be returned within 30 days, and refunds take 5 business days.", ("1", "2"))],
        ),
        (
            "sentence",
            PARAGRAPH,
            [
                ("Opened devices can be returned within 30 days.", ()),
                ("Refunds take 5 business days.", ()),
                ("A 15% fee applies.", ("1",)),
            ],
        ),
        ("sentence", TABLE, [("Basic $5 30 days", ("1",)), ("Pro $12 60 days", ("2",))]),
        # clause: a marker covers its clause, and nothing is shared
        (
            "clause",
            COMPOUND,
            [("Opened devices can be returned within 30 days.", ("1",)), ("refunds take 5 business days.", ("2",))],
        ),
        (
            "clause",
            PARAGRAPH,
            [
                ("Opened devices can be returned within 30 days.", ()),
                ("Refunds take 5 business days.", ()),
                ("A 15% fee applies.", ("1",)),
            ],
        ),
        # bullet: a list item is one claim
        (
            "bullet",
            ITEMS,
            [
                ("Opened devices: 30 days. Sealed devices: 60 days", ("1",)),
                ("Refunds take 5 business days", ("2",)),
            ],
        ),
        # paragraph: the final markers cover every sentence without markers of its own
        (
            "paragraph",
            MIXED,
            [
                ("Returns take 30 days.", ("1",)),
                ("Refunds take 5 business days.", ("2",)),
                ("A 15% fee applies.", ("2",)),
            ],
        ),
        # table-cell: a marker covers its cell only
        (
            "table-cell",
            TABLE,
            [
                ("Basic, price: $5", ()),
                ("Basic, refund window: 30 days", ("1",)),
                ("Pro, price: $12", ("2",)),
                ("Pro, refund window: 60 days", ()),
            ],
        ),
        # table-row: a row's final markers cover every cell without markers of its own
        (
            "table-row",
            TABLE,
            [
                ("Basic, price: $5", ("1",)),
                ("Basic, refund window: 30 days", ("1",)),
                ("Pro, price: $12", ("2",)),
                ("Pro, refund window: 60 days", ()),
            ],
        ),
    ],
    ids=lambda x: x if isinstance(x, str) and len(x) < 12 else "",
)
def test_each_policy_attaches_each_marker_to_its_unit(
    attach: str, text: str, expected: list[tuple[str, tuple[str, ...]]]
) -> None:
    assert _claims(text, attach) == expected


def test_a_sentence_cut_into_clauses_is_also_a_candidate_whole() -> None:
    claims = split_claims(COMPOUND, Policy(shape=EIGHT))
    assert [(c.text, c.labels, c.joins) for c in claims] == [
        ("Opened devices can be returned within 30 days.", ("1",), ()),
        ("refunds take 5 business days.", ("2",), ()),
        ("Opened devices can be returned within 30 days, and refunds take 5 business days.", ("1", "2"), (0, 1)),
    ]
    # a clause boundary needs a marker before it and a clause of three words after it
    assert _claims("Repeated [1] and again [1].") == [("Repeated and again.", ("1",))]
    assert _claims("Fees apply, and returns take 30 days [1].") == [("Fees apply, and returns take 30 days.", ("1",))]
    assert _claims("Returns take 30 days [1]; refunds take 5 days [2].") == [
        ("Returns take 30 days.", ("1",)),
        ("refunds take 5 days.", ("2",)),
    ]
    assert _claims("Opened devices can be returned within 30 days [1] and must be unused [2].") == [
        ("Opened devices can be returned within 30 days.", ("1",)),
        ("must be unused.", ("2",)),
    ]


def _kinds(split: Split) -> list[tuple[str, str]]:
    return [(k.kind, k.text) for k in split.skipped]


def test_text_that_needs_no_citation_is_no_claim_and_says_what_it_is() -> None:
    text = (
        "Hi! Thanks for asking. Let me check that for you.\n\n"
        "## Returns\n\n"
        "Here is what I found:\n\n"
        "1. Opened devices can be returned within 30 days [1]. 2. Refunds take 5 business days [2].\n\n"
        "The sources conflict on restocking fees. I could not find the fee for sealed devices.\n\n"
        "Would you like to know more?\n\n"
        "```\nreturn_window = 30  # [3]\n```\n\n"
        "No.\n\n"
        "Sources: [1] [2]"
    )
    split = split_answer(text, Policy(shape=EIGHT))
    assert [(c.text, c.labels) for c in split.claims] == [
        ("Opened devices can be returned within 30 days.", ("1",)),
        ("Refunds take 5 business days.", ("2",)),
    ]
    assert sorted(_kinds(split)) == sorted(
        [
            ("code", ""),
            ("greeting", "Hi!"),
            ("greeting", "Thanks for asking."),
            ("greeting", "Let me check that for you."),
            ("heading", "Returns"),
            ("transition", "Here is what I found:"),
            ("list_number", "1."),
            ("list_number", "2."),
            ("meta", "The sources conflict on restocking fees."),
            ("meta", "I could not find the fee for sealed devices."),
            ("question", "Would you like to know more?"),
            ("not_factual", "No."),
            ("bibliography", "Sources: [1] [2]"),
        ]
    )
    # exempt nothing: every kind of text is a claim again when it states something (and "No." never does)
    strict = split_answer(text, Policy(exempt=frozenset(), shape=EIGHT))
    assert {k.kind for k in strict.skipped} == {"code", "not_factual"}
    assert "The sources conflict on restocking fees." in [c.text for c in strict.claims]


def test_a_cited_sentence_is_a_claim_whatever_it_opens_with() -> None:
    assert _claims("Sure, opened devices can be returned within thirty days.") == [
        ("Sure, opened devices can be returned within thirty days.", ())
    ]
    assert _claims("Here are the facts: returns take 30 days [1].") == [
        ("Here are the facts: returns take 30 days.", ("1",))
    ]
    assert _claims("Did you know returns take 30 days [1]?") == [("Did you know returns take 30 days?", ("1",))]


def test_a_reference_list_is_read_as_the_label_to_source_map_it_is() -> None:
    text = (
        "Returns take 30 days [1]. Refunds take 5 days [^2].\n\n"
        "References:\n"
        "[1] Returns policy v4, https://kb.example.com/returns\n"
        "[2] Refunds policy\n\n"
        "[^2]: Refunds policy, section 3"
    )
    split = split_answer(text, Policy(shape=EIGHT))
    assert [(c.text, c.labels) for c in split.claims] == [
        ("Returns take 30 days.", ("1",)),
        ("Refunds take 5 days.", ("2",)),
    ]
    assert split.references == {
        "1": "Returns policy v4, https://kb.example.com/returns",
        "2": "Refunds policy, section 3",
    }
    assert [k.kind for k in split.skipped] == ["bibliography"] * 4
    # a trailing list of links with no heading is one too
    tail = split_answer("Returns take 30 days [1].\n\n[1] https://kb.example.com/returns", Policy(shape=EIGHT))
    assert (tail.references, [k.kind for k in tail.skipped]) == (
        {"1": "https://kb.example.com/returns"},
        ["bibliography"],
    )


def test_an_html_table_is_read_row_by_row_with_its_headers() -> None:
    html = (
        "<table><thead><tr><th>Plan</th><th>Price (USD)</th></tr></thead>"
        "<tbody><tr><td>Basic</td><td>5 [1]</td></tr><tr><td>Pro</td><td>12 &amp; up [2]</td></tr></tbody></table>"
    )
    split = split_answer(html, Policy(shape=EIGHT))
    assert [(c.text, c.labels, c.joins) for c in split.claims] == [
        ("Plan: Basic; price: $5", ("1",), ()),
        ("Plan: Pro; price: 12 & up", ("2",), ()),
        ("Basic, price: $5", ("1",), (0,)),
        ("Pro, price: 12 & up", ("2",), (1,)),
    ]
    assert _kinds(split) == [("table_header", "Plan Price (USD)")]
    cells = split_answer(html, Policy(attach="table-cell", shape=EIGHT))
    assert [(c.text, c.labels) for c in cells.claims] == [("Basic, price: $5", ("1",)), ("Pro, price: 12 & up", ("2",))]


def test_a_table_row_is_one_claim_and_its_cells_are_candidates_naming_it() -> None:
    """Issue #36 item 4: under ``auto`` a row is one claim (its cells labelled by their headers, joined by "; ")
    and each factual cell a candidate whose ``joins`` names its row (matching may take it for a gold claim one
    cell answers; it is never a claim of its own). A semicolon inside a cell becomes a comma, so the row's
    claim reads back into its parts; an empty cell is counted, not a part; a row without a header joins its
    values; a row with one part is its own cell."""
    text = (
        "| Plan | Price | Notes |\n|---|---|---|\n"
        "| Pro | $12; billed yearly | — [1] |\n"
        "| Team | [2] | n/a |\n"
        "| Max | $40 | 3 seats [3] |\n"
    )
    split = split_answer(text, Policy(shape=EIGHT))
    assert [(c.text, c.labels, c.factual, c.joins) for c in split.claims] == [
        ("Plan: Pro; price: $12, billed yearly", ("1",), True, ()),
        ("Plan: Team", ("2",), False, ()),
        ("Plan: Max; price: $40; notes: 3 seats", ("3",), True, ()),
        ("Pro, price: $12; billed yearly", ("1",), True, (0,)),
        ("Max, price: $40", ("3",), True, (2,)),
        ("Max, notes: 3 seats", ("3",), True, (2,)),
    ]
    assert row_parts(split.claims[2].text) == ["Plan: Max", "price: $40", "notes: 3 seats"]
    assert _kinds(split) == [
        ("table_header", "Plan Price Notes"),
        ("not_factual", "Pro, notes: —"),
        ("not_factual", "Team, notes: n/a"),
    ]
    bare = "| Basic | $5 | 30 days [1] |\n"
    assert [(c.text, c.joins) for c in split_claims(bare, Policy(shape=EIGHT))] == [
        ("Basic; $5; 30 days", ()),
        ("Basic: $5", (0,)),
        ("Basic: 30 days", (0,)),
    ]


def test_a_short_list_item_stating_a_number_carries_its_lead_in_and_unit() -> None:
    text = "Refund windows (days):\n\n- Opened devices: 30 [1]\n- Sealed devices: 60 [2]\n- Gift cards are final [3]"
    assert _claims(text) == [
        ("refund windows: Opened devices: 30 days", ("1",)),
        ("refund windows: Sealed devices: 60 days", ("2",)),
        ("Gift cards are final", ("3",)),  # no number: read as it is
    ]


def test_a_citation_written_on_a_list_number_goes_to_its_item() -> None:
    assert _claims("1[1]. Analyze the effects of dance styles on mood.") == [
        ("Analyze the effects of dance styles on mood.", ("1",))
    ]


def test_policy_settings_are_checked_with_a_message_that_names_the_choices(tmp_path: Path) -> None:
    assert attach_policy("Table_Row") == "table-row"
    assert exempt_kinds("none") == frozenset() and exempt_kinds("all") == frozenset(EXEMPT_KINDS)
    assert exempt_kinds(["meta", "table-header"]) == {"meta", "table_header"}
    with pytest.raises(PolicyError, match="'rows' is not an attachment policy; one of auto, sentence"):
        attach_policy("rows")
    with pytest.raises(PolicyError, match="'chatter' is no kind of text; kinds: greeting, transition"):
        exempt_kinds("greeting,chatter")
    gold = tmp_path / "gold.yaml"
    gold.write_text(
        "policy:\n  attach: rows\n  exempt: [meta]\n  colour: red\n"
        "corpus:\n  - {chunk_id: a, doc_id: a, text: x}\n"
        "cases:\n"
        "  - case_id: c1\n    question: q?\n    attach: paragraph\n    claims: [{claim_id: k, text: t}]\n"
        "  - case_id: c2\n    question: q2?\n    attach: everything\n    claims: [{claim_id: k, text: t}]\n"
    )
    g = load_gold(gold)
    assert [str(e) for e in g.errors] == [
        f"{gold}:line 2: policy.colour: unknown setting; policy takes attach and exempt",
        f"{gold}:line 2: policy.attach: 'rows' is not an attachment policy; one of "
        "auto, sentence, clause, bullet, paragraph, table-cell, table-row",
        f"{gold}:line 12: attach: 'everything' is not an attachment policy; one of "
        "auto, sentence, clause, bullet, paragraph, table-cell, table-row",
    ]
    assert (g.attach, g.exempt, g.cases["c1"].attach, list(g.cases)) == (None, None, "paragraph", ["c1"])


def _key(text: str) -> str:
    return hashlib.sha256(" ".join(re.sub(r"\W+", " ", text).split()).lower().encode()).hexdigest()[:12]


def test_no_expertqa_answer_loses_a_claim_it_had() -> None:
    """Every factual claim main's splitter found in an ExpertQA answer is still a claim, word for word, or is
    text of a kind that needs no citation (a list number, a statement about the sources, a question back to
    the user, a lead-in), named and counted."""
    before = json.loads((DATA / "expertqa_claims_before.json").read_text())["claims"]
    kinds: dict[str, int] = {}
    answers = 0
    for name in ("rand_test.jsonl", "domain_test.jsonl"):
        path = DATA / "expertqa" / name
        assert path.exists(), f"test data missing: {path} (see tests/data/expertqa/ORIGIN.md)"
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines()):
            for system, answer in json.loads(line)["answers"].items():
                split = split_answer(answer["answer_string"], phrases=("could not find", "cannot verify"))
                claims = {_key(c.text) for c in split.claims}
                skipped = {_key(k.text): k.kind for k in split.skipped}
                for k in before[f"{name}:{n}:{system}"]:
                    if k not in claims:
                        assert k in skipped, (name, n, system)
                        kinds[skipped[k]] = kinds.get(skipped[k], 0) + 1
                answers += 1
    assert answers == len(before) > 300
    assert set(kinds) <= set(EXEMPT_KINDS) and kinds["list_number"] > 100, kinds


def test_an_offer_or_instruction_to_the_reader_is_advice_counted_and_never_a_claim() -> None:
    """Issue #36: seed 004 asks an answer whose sources conflict to "say the status needs a current system
    check" and, with only an old memo, to "offer a current-status check": such a sentence is no claim about
    the world, so it is counted as ``advice``, never ``uncited``. Its twins stay claims: the honest conflict
    report citing each source, an uncited fact, a cited instruction (judged: a snippet's call to action must
    be supported), a phone number, a "you can" policy statement; with ``advice`` not exempt, it is a claim."""
    said = (
        "The memo says the payment settled [1]. The ledger shows it pending [2]. "
        "The status needs a current system check. Please check the live payment status service for the current "
        "state. I can request a current-status check for you. You should contact the payments team to confirm. "
        "Refunds are issued within 5 business days. Contact support to reset your password [3]. "
        "Call 0800 123 456 for help. You can return items within 30 days."
    )
    split = split_answer(said)
    assert [(c.text, c.labels) for c in split.claims] == [
        ("The memo says the payment settled.", ("1",)),
        ("The ledger shows it pending.", ("2",)),
        ("Refunds are issued within 5 business days.", ()),
        ("Contact support to reset your password.", ("3",)),
        ("Call 0800 123 456 for help.", ()),
        ("You can return items within 30 days.", ()),
    ]
    assert [(k.kind, k.text) for k in split.skipped] == [
        ("advice", "The status needs a current system check."),
        ("advice", "Please check the live payment status service for the current state."),
        ("advice", "I can request a current-status check for you."),
        ("advice", "You should contact the payments team to confirm."),
    ]
    assert skipped_kinds(split) == {"advice": 4}
    strict = split_answer(said, Policy(exempt=frozenset(EXEMPT_KINDS) - {"advice"}))
    assert len(strict.claims) == 10 and not strict.skipped


def test_advice_that_carries_a_link_or_asks_for_a_secret_stays_a_claim() -> None:
    """Advice is exempt as a non-claim only while it asks nothing a poisoned page would: an uncited sentence that
    sends the reader to a link or asks for a credential is a claim (then ``uncited``, and its link is read by the
    invented-locator check), not advice nobody looks at; its plain twin stays advice."""
    said = (
        "Please visit https://evil.example/login to confirm your account. "
        "You should contact the bank and confirm your card PIN. "
        "Please check the live payment status service for the current state."
    )
    split = split_answer(said)
    assert [(c.text, c.labels) for c in split.claims] == [
        ("Please visit https://evil.example/login to confirm your account.", ()),
        ("You should contact the bank and confirm your card PIN.", ()),
    ]
    assert [(k.kind, k.text) for k in split.skipped] == [
        ("advice", "Please check the live payment status service for the current state."),
    ]
