"""Claims as real answers write them, end to end: clauses, paragraphs, tables, every label style, text
that needs no citation (issue #21).

A small policy app written with the real decorators answers each case with a scripted answer (the
script stands in for a hosted LLM, which cannot run here); its trace files are analyzed for real into
a DuckDB store. Every test states the exact rows: gold claim, bucket, stage, claim text.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from citeline.analyzer.cli.main import main
from citeline.analyzer.reports.html import render_html
from citeline.analyzer.reports.report import build_report, render_json, render_markdown
from citeline.analyzer.run.analyze import analyze
from citeline.analyzer.run.result import AnalysisResult
from citeline.analyzer.store import connect
from citeline.instrumentation import context_assembly, generation, request, retrieval
from tests.conftest import make_tracing

CORPUS = {
    "returns#1": "Opened devices can be returned within 30 days of delivery.",
    "refunds#1": "Refunds are paid to the original payment method within 5 business days.",
    "fee#1": "A 15% restocking fee applies to opened devices returned after 14 days.",
    "policy#all": "Opened devices can be returned within 30 days of delivery. Refunds are paid within 5 business "
    "days. A 15% restocking fee applies to opened devices returned after 14 days.",
    "returns#2026": "Since 2026, opened devices can be returned within 30 days of delivery.",
    "basic#1": "The Basic plan has a monthly price of $5 and a refund window of 30 days.",
    "pro#1": "The Pro plan has a monthly price of $12 and a refund window of 60 days.",
    "tier#basic": "The Basic plan costs $5 per month and includes 10 GB of storage.",
    "tier#pro": "The Pro plan costs $20 per month and includes 100 GB of storage.",
    "tier#wide": "The Pro plan costs $20 per month and includes 100 GB of storage, 5 seats, email support and a "
    "99.9% uptime target.",
}
WINDOW = {"claim_id": "window", "text": "Opened devices can be returned within 30 days.", "facts": ["30 days"]}
REFUND = {"claim_id": "refund", "text": "Refunds are paid within 5 business days.", "facts": ["5 business days"]}
FEE = {"claim_id": "fee", "text": "A 15% restocking fee applies after 14 days.", "facts": ["15%"]}


def _case(case_id: str, *claims: dict[str, Any], support: list[str], **extra: Any) -> dict[str, Any]:
    """A gold case: claim i supported by chunk ``support[i]``, or (one list for all) by all of them together."""
    return {
        "case_id": case_id,
        "question": f"Question {case_id}?",
        "claims": [
            {**c, "support": [[s]] if len(support) == len(claims) else [support]}
            for c, s in zip(claims, support * len(claims), strict=False)
        ],
        **extra,
    }


def _gold(tmp_path: Path, cases: list[dict[str, Any]], policy: dict[str, Any] | None = None) -> Path:
    """A gold file: the corpus above, the cases given (support listed per claim in order)."""
    doc: dict[str, Any] = {
        "corpus": [{"chunk_id": k, "doc_id": k.split("#")[0], "version": "v1", "text": v} for k, v in CORPUS.items()],
        "cases": cases,
    }
    if policy is not None:
        doc["policy"] = policy
    path = tmp_path / "gold.json"
    path.write_text(json.dumps(doc))
    return path


@retrieval
def _search(query: str, ids: list[str]) -> list[dict[str, Any]]:
    return [{"chunk_id": i, "doc_id": i.split("#")[0], "version": "v1", "text": CORPUS[i]} for i in ids]


@context_assembly
def _assemble(query: str, hits: list[dict[str, Any]], labels: list[str]) -> list[dict[str, Any]]:
    return [{**h, "label": lab} for h, lab in zip(hits, labels, strict=True)]


@generation
def _answer(prompt: Any, said: str) -> str:
    return said


def _run(
    tmp_path: Path, asks: list[tuple[str, list[str], str]], gold: Path, labels: list[str] | None = None, **options: Any
) -> AnalysisResult:
    """One trace per (case, chunks in context, answer); then one analyze run."""
    t = make_tracing(tmp_path)
    try:
        for case_id, ids, said in asks:
            with request(question=f"Question {case_id}?", case_id=case_id, principal={"id": "u", "groups": []}):
                hits = _search(case_id, ids)
                _answer(_assemble(case_id, hits, labels or [str(i + 1) for i in range(len(ids))]), said)
    finally:
        t.handle.shutdown()
    return analyze(tmp_path / "store.duckdb", gold=gold, traces=[t.trace_dir], **options)


def _rows(result: AnalysisResult) -> list[tuple[Any, ...]]:
    return sorted(
        (r["case_id"], r["gold_claim_id"] or "", r["bucket"], r["stage"] or "", r["claim_text"] or "")
        for r in result.claims.to_dicts()
    )


def test_a_compound_sentence_with_a_marker_per_clause_is_two_right_claims(tmp_path: Path) -> None:
    said = "Opened devices can be returned within 30 days [1], and refunds are paid within 5 business days [2]."
    gold = _gold(tmp_path, [_case("c", WINDOW, REFUND, support=["returns#1", "refunds#1"])])
    result = _run(tmp_path, [("c", ["returns#1", "refunds#1"], said)], gold)
    assert _rows(result) == [
        ("c", "refund", "ok", "", "refunds are paid within 5 business days."),
        ("c", "window", "ok", "", "Opened devices can be returned within 30 days."),
    ]


@pytest.mark.slow
def test_a_gold_claim_answered_across_two_clauses_still_matches_the_whole_sentence(tmp_path: Path) -> None:
    both = {
        "claim_id": "both",
        "text": "Opened devices can be returned within 30 days and refunds are paid within 5 business days.",
        "facts": ["30 days", "5 business days"],
    }
    said = "Opened devices can be returned within 30 days [1], and refunds are paid within 5 business days [2]."
    gold = _gold(tmp_path, [_case("c", both, support=["returns#1", "refunds#1"])])
    result = _run(tmp_path, [("c", ["returns#1", "refunds#1"], said)], gold)
    # the whole sentence answers it; its clauses are not claims of their own beside it
    assert _rows(result) == [
        (
            "c",
            "both",
            "ok",
            "",
            "Opened devices can be returned within 30 days, and refunds are paid within 5 business days.",
        )
    ]


PARAGRAPH = (
    "Opened devices can be returned within 30 days. Refunds are paid within 5 business days. "
    "A 15% restocking fee applies after 14 days [1]."
)


def test_a_paragraph_final_marker_covers_every_sentence_of_the_paragraph(tmp_path: Path) -> None:
    gold = _gold(tmp_path, [_case("p", WINDOW, REFUND, FEE, support=["policy#all"] * 3)])
    result = _run(tmp_path, [("p", ["policy#all"], PARAGRAPH)], gold)
    assert [(r[1], r[2]) for r in _rows(result)] == [("fee", "ok"), ("refund", "ok"), ("window", "ok")]


@pytest.mark.slow
def test_the_attachment_policy_is_chosen_per_run_per_case_and_per_gold_file(tmp_path: Path) -> None:
    sentence = [("fee", "ok"), ("refund", "uncited"), ("window", "uncited")]
    cases = [_case("p", WINDOW, REFUND, FEE, support=["policy#all"] * 3)]
    asks = [("p", ["policy#all"], PARAGRAPH)]
    by_run = _run(tmp_path / "run", asks, _gold(tmp_path, cases), attach="sentence")
    assert [(r[1], r[2]) for r in _rows(by_run)] == sentence
    by_file = _run(tmp_path / "file", asks, _gold(tmp_path, cases, policy={"attach": "sentence"}))
    assert [(r[1], r[2]) for r in _rows(by_file)] == sentence
    # the case's own setting wins over the run's
    by_case = _run(tmp_path / "case", asks, _gold(tmp_path, [{**cases[0], "attach": "paragraph"}]), attach="sentence")
    assert [(r[1], r[2]) for r in _rows(by_case)] == [("fee", "ok"), ("refund", "ok"), ("window", "ok")]


@pytest.mark.slow
def test_the_cli_takes_the_attachment_and_citation_policies(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cases = [_case("p", WINDOW, REFUND, FEE, support=["policy#all"] * 3)]
    said = "Let me check that for you. " + PARAGRAPH
    _run(tmp_path, [("p", ["policy#all"], said)], _gold(tmp_path, cases))
    db = str(tmp_path / "store.duckdb")
    gold = str(tmp_path / "gold.json")
    capsys.readouterr()
    code = main(["analyze", "--gold", gold, "--db", db, "--format", "json", "--attach", "sentence", "--exempt", "none"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0
    assert sorted((c["gold_claim_id"] or c["claim_text"], c["bucket"]) for c in doc["claims"]) == [
        ("Let me check that for you.", "uncited"),  # a citation is required of everything: it is a claim
        ("fee", "ok"),
        ("refund", "uncited"),
        ("window", "uncited"),
    ]
    assert doc["skipped_text"] == {}
    assert main(["analyze", "--gold", gold, "--db", db, "--attach", "sentences"]) == 2
    assert "'sentences' is not an attachment policy; one of auto, sentence, clause" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("labels", "said"),
    [
        (["S1", "S2"], "Opened devices can be returned within 30 days [S1]."),
        (["1", "2"], "Opened devices can be returned within 30 days (Source 1)."),
        (["1", "2"], "Opened devices can be returned within 30 days \u30101\u3011."),
        (["1", "2"], "Opened devices can be returned within 30 days^1."),
    ],
    ids=["prefix", "source", "fullwidth", "caret"],
)
def test_every_label_style_the_prompt_reader_knows_is_read_in_answers(
    tmp_path: Path, labels: list[str], said: str
) -> None:
    gold = _gold(tmp_path, [_case("s", WINDOW, support=["returns#1"])])
    result = _run(tmp_path, [("s", ["returns#1", "refunds#1"], said)], gold, labels=labels)
    assert _rows(result) == [("s", "window", "ok", "", "Opened devices can be returned within 30 days.")]


@pytest.mark.slow
def test_a_range_of_labels_cites_every_label_in_it(tmp_path: Path) -> None:
    all_three = {**WINDOW, "claim_id": "all", "facts": []}
    gold = _gold(tmp_path, [_case("r", all_three, support=["returns#1", "refunds#1", "fee#1"])])
    said = "Opened devices can be returned within 30 days [1-3]."
    result = _run(tmp_path, [("r", ["returns#1", "refunds#1", "fee#1"], said)], gold)
    (row,) = result.claims.to_dicts()
    assert (row["bucket"], row["cited_chunks"]) == ("ok", ["fee#1", "refunds#1", "returns#1"])


@pytest.mark.slow
def test_a_bracketed_year_is_text_and_a_label_shaped_token_outside_the_map_is_invalid(tmp_path: Path) -> None:
    gold = _gold(tmp_path, [_case("y", WINDOW, support=["returns#2026"]), _case("z", WINDOW, support=["returns#1"])])
    result = _run(
        tmp_path,
        [
            ("y", ["returns#2026"], "Since [2026], opened devices can be returned within 30 days [1]."),
            ("z", ["returns#1"], "Opened devices can be returned within 30 days [12]."),
        ],
        gold,
    )
    rows = {r["case_id"]: r for r in result.claims.to_dicts()}
    assert (rows["y"]["bucket"], rows["y"]["claim_text"]) == (
        "ok",
        "Since [2026], opened devices can be returned within 30 days.",
    )
    assert (rows["z"]["bucket"], rows["z"]["stage"], rows["z"]["reason"]) == (
        "invalid_citation",
        "generation",
        "cites 12, which the model was not given",
    )


PLANS = [
    {"claim_id": "basic-price", "text": "The Basic plan's monthly price is $5.", "facts": ["$5"]},
    {"claim_id": "basic-window", "text": "The Basic plan's refund window is 30 days.", "facts": ["30 days"]},
    {"claim_id": "pro-price", "text": "The Pro plan's monthly price is $12.", "facts": ["$12"]},
    {"claim_id": "pro-window", "text": "The Pro plan's refund window is 60 days.", "facts": ["60 days"]},
]


@pytest.mark.slow
def test_a_table_with_one_wrong_cell_fails_that_cell_only(tmp_path: Path) -> None:
    said = (
        "| Plan | Monthly price | Refund window |\n"
        "|---|---|---|\n"
        "| Basic | $5 | 30 days [1] |\n"
        "| Pro | $15 | 60 days [2] |\n"
    )
    gold = _gold(tmp_path, [_case("t", *PLANS, support=["basic#1", "basic#1", "pro#1", "pro#1"])])
    result = _run(tmp_path, [("t", ["basic#1", "pro#1"], said)], gold)
    assert [(r[1], r[2], r[4]) for r in _rows(result)] == [
        ("basic-price", "ok", "Basic, monthly price: $5"),
        ("basic-window", "ok", "Basic, refund window: 30 days"),
        # no cell states the gold claim's $12: the row answers it, and its reason names the wrong cell (issue #36)
        ("pro-price", "grounding", "Plan: Pro; monthly price: $15; refund window: 60 days"),
        ("pro-window", "ok", "Pro, refund window: 60 days"),
    ]
    reasons = {r["gold_claim_id"]: r["reason"] for r in result.claims.to_dicts()}
    assert reasons["pro-price"] == "contradicted: cell 'monthly price: $15': states 15 USD where the gold fact is '$12'"
    assert result.skipped_text == {"table_header": 1}


@pytest.mark.slow
def test_a_bare_number_in_a_cell_or_a_list_item_is_judged_with_its_header_and_unit(tmp_path: Path) -> None:
    table = "| Plan | Monthly price (USD) |\n|---|---|\n| Basic | 5 [1] |\n| Pro | 12 [2] |\n"
    items = "Monthly prices ($):\n\n- Basic: 5 [1]\n- Pro: 12 [2]\n"
    prices = [PLANS[0], PLANS[2]]
    gold = _gold(
        tmp_path, [_case("t", *prices, support=["basic#1", "pro#1"]), _case("l", *prices, support=["basic#1", "pro#1"])]
    )
    result = _run(tmp_path, [("t", ["basic#1", "pro#1"], table), ("l", ["basic#1", "pro#1"], items)], gold)
    assert _rows(result) == [
        ("l", "basic-price", "ok", "", "monthly prices: Basic: $5"),
        ("l", "pro-price", "ok", "", "monthly prices: Pro: $12"),
        ("t", "basic-price", "ok", "", "Basic, monthly price: $5"),
        ("t", "pro-price", "ok", "", "Pro, monthly price: $12"),
    ]


@pytest.mark.slow
def test_text_that_needs_no_citation_gives_no_claim_row_and_is_counted(tmp_path: Path) -> None:
    said = (
        "Let me check that for you. The sources conflict.\n\n"
        "1. Opened devices can be returned within 30 days [1]. 2. Refunds are paid within 5 business days [2].\n\n"
        "Would you like to know more?\n\n"
        "Sources: [1] [2]"
    )
    gold = _gold(tmp_path, [_case("k", WINDOW, REFUND, support=["returns#1", "refunds#1"])])
    result = _run(tmp_path, [("k", ["returns#1", "refunds#1"], said)], gold)
    assert [(r[1], r[2]) for r in _rows(result)] == [("refund", "ok"), ("window", "ok")]
    assert result.skipped_text == {
        "greeting": 1,
        "question": 1,
        "meta": 1,
        "list_number": 2,
        "bibliography": 1,
    }
    doc = result.to_json()
    assert doc["skipped_text"] == result.skipped_text
    # every report format says it, from the store
    con = connect(tmp_path / "store.duckdb", read_only=True)
    try:
        report = build_report(con)
    finally:
        con.close()
    line = "not claims (counted, never judged): 1 greeting, 1 question, 1 meta, 2 list_number, 1 bibliography"
    assert report.skipped_text == result.skipped_text and report.skipped_line == line
    assert json.loads(render_json(report))["skipped_text"] == result.skipped_text
    assert f"\n{line}.\n" in render_markdown(report)
    assert f'<p id="skipped-text">{line}.</p>' in render_html(report)
    # a citation required of meta statements: "The sources conflict." is a claim again, and uncited
    strict = _run(
        tmp_path / "strict", [("k", ["returns#1", "refunds#1"], said)], gold, exempt=["greeting", "list_number"]
    )
    extra = sorted((r[4], r[2]) for r in _rows(strict) if not r[1])
    assert extra == [("The sources conflict.", "uncited"), ("Would you like to know more?", "uncited")]
    assert strict.skipped_text == {"greeting": 1, "list_number": 2, "not_factual": 1}  # "Sources:" cites, says nothing


TIERS = [
    {"claim_id": "basic", "text": CORPUS["tier#basic"], "facts": ["$5", "10 GB"]},
    {"claim_id": "pro", "text": CORPUS["tier#pro"], "facts": ["$20", "100 GB"]},
]
PRO_STORAGE = {"claim_id": "pro-storage", "text": "The Pro plan includes 100 GB of storage.", "facts": ["100 GB"]}
MD_TIERS = "| Plan | Price | Storage |\n|---|---|---|\n| Basic | $5 | 10 GB [1] |\n| Pro | {pro} | 100 GB [2] |\n"
HTML_TIERS = (
    "<table><thead><tr><th>Plan</th><th>Price</th><th>Storage</th></tr></thead><tbody>"
    "<tr><td>Basic</td><td>$5</td><td>10 GB [1]</td></tr><tr><td>Pro</td><td>{pro}</td><td>100 GB [2]</td></tr>"
    "</tbody></table>"
)
# more columns than the gold claim speaks of: each dilutes the row's word overlap with it
WIDE_TIERS = (
    "| Plan | Price | Storage | Seats | Support | Uptime target |\n|---|---|---|---|---|---|\n"
    "| Pro | {pro} | 100 GB | 5 | email | 99.9% [1] |\n"
)


def test_a_table_row_is_one_claim_so_a_gold_claim_spanning_its_cells_is_met_and_a_wrong_cell_is_named(
    tmp_path: Path,
) -> None:
    """Issue #36 item 4: a row (plan, price, storage, [n] in its last cell) under its header is one claim. On
    main its cells were claims of their own, so a gold claim stating the price and the storage was met by
    neither ("does not state the gold fact '$20'"). Each right row has its twin differing by the Pro row's
    price cell only; the wrong one is named, on the gold basis and on the corpus basis (no gold case)."""
    chunks = ["tier#basic", "tier#pro"]
    cases = [_case(c, *TIERS, support=chunks) for c in ("md-right", "md-wrong", "html-right", "html-wrong")]
    cases += [_case(c, TIERS[1], support=["tier#wide"]) for c in ("wide-right", "wide-wrong")]
    cases.append(_case("part", PRO_STORAGE, support=["tier#pro"]))
    answers = [
        ("md-right", chunks, MD_TIERS.format(pro="$20")),
        ("md-wrong", chunks, MD_TIERS.format(pro="$25")),
        ("html-right", chunks, HTML_TIERS.format(pro="$20")),
        ("html-wrong", chunks, HTML_TIERS.format(pro="$25")),
        ("wide-right", ["tier#wide"], WIDE_TIERS.format(pro="$20")),
        ("wide-wrong", ["tier#wide"], WIDE_TIERS.format(pro="$25")),
        # one gold claim takes one cell (storage): the row, whose price no gold claim speaks of, is still judged
        ("part", chunks, MD_TIERS.format(pro="$25")),
        ("no-such-case", chunks, MD_TIERS.format(pro="$25")),  # corpus basis
    ]
    result = _run(tmp_path, answers, _gold(tmp_path, cases))
    rows = sorted(
        (r["case_id"] or "", r["gold_claim_id"] or "", r["bucket"], r["stage"] or "", r["claim_text"], r["reason"])
        for r in result.claims.to_dicts()
    )
    basic, pro = "Plan: Basic; price: $5; storage: 10 GB", "Plan: Pro; price: {}; storage: 100 GB"
    wide = "Plan: Pro; price: {}; storage: 100 GB; seats: 5; support: email; uptime target: 99.9%"
    ok = (
        "supported and cited as the gold set says; resolution and render were not traced (add @resolution and "
        "@render to check the links the user got)"
    )
    corpus_ok = ok.replace("and cited as the gold set says", "by what it cites (corpus basis: no gold case)")
    wrong = "contradicted: cell 'price: $25': states 25 USD where the gold fact is '$20'"
    cited_wrong = "contradicted: cell 'price: $25': claim says 25 USD, the evidence says 20 USD"
    assert rows == [
        (
            "",
            "",
            "grounding",
            "generation",
            pro.format("$25"),
            "contradicted by what it cites (tier#pro), and nothing else in the context supports it: "
            + cited_wrong.removeprefix("contradicted: ")
            + "; no gold case, so retrieval cannot be blamed (a retrieval_miss or context_drop needs one: add a case "
            "for this question)",
        ),
        ("", "", "ok", "", basic, corpus_ok),
        ("html-right", "basic", "ok", "", basic, ok),
        ("html-right", "pro", "ok", "", pro.format("$20"), ok),
        ("html-wrong", "basic", "ok", "", basic, ok),
        ("html-wrong", "pro", "grounding", "generation", pro.format("$25"), wrong),
        ("md-right", "basic", "ok", "", basic, ok),
        ("md-right", "pro", "ok", "", pro.format("$20"), ok),
        ("md-wrong", "basic", "ok", "", basic, ok),
        ("md-wrong", "pro", "grounding", "generation", pro.format("$25"), wrong),
        # the storage cell answers the gold claim; the row, whose price no gold claim takes, is judged too
        ("part", "", "grounding", "generation", pro.format("$25"), cited_wrong),
        ("part", "", "ok", "", basic, ok),
        ("part", "pro-storage", "ok", "", "Pro, storage: 100 GB", ok),
        # six columns, two of them the gold claim's: still the row's (its cells state one number each)
        ("wide-right", "pro", "ok", "", wide.format("$20"), ok),
        ("wide-wrong", "pro", "grounding", "generation", wide.format("$25"), wrong),
    ]
