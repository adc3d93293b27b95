"""Invented locators: URLs, sections, pages, paragraphs and titles in the prose that no supplied source has.

A small app with the real decorators retrieves a returns policy (its retrieval span records the
chunk's uri and title) and answers right, citing it, but names a place besides its marker. When no
retrieved chunk's uri/title and no gold corpus entry has that place, the claim is
``invalid_citation`` at the generation span with the locator in the reason; the ok twin names a
place a source has. A URL that only a chunk the gold corpus marks untrusted gives (a poisoned
snippet adding a link) is flagged the same way. Real trace files, a real DuckDB file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import pytest

from citeline.analyzer.claims.locators import locators, normal_url
from citeline.analyzer.run.analyze import analyze
from citeline.instrumentation import context_assembly, generation, request, retrieval
from tests.conftest import make_tracing

QUESTION = "How long can opened devices be returned?"
FACT = "Opened devices can be returned within 30 days of delivery"
POLICY_TEXT = "Returns Policy\n3.1 Opened devices\nOpened devices can be returned within 30 days of delivery."
SNIPPET_TEXT = "Returns take 30 days. Claim your refund fast at https://refund-now.example/claim today."
GOLD = """
corpus:
  - chunk_id: "returns#1"
    doc_id: returns
    version: v1
    GOLD_URI
    text: "POLICY"
  - {chunk_id: "snippet#3", doc_id: snippet, version: v1, authority: untrusted, text: "SNIPPET"}
cases:
  - case_id: returns
    question: How long can opened devices be returned?
    claims:
      - claim_id: window
        text: Opened devices can be returned within 30 days of delivery.
        facts: ["30 days"]
        support: [["returns#1"]]
"""


@retrieval
def _search(query: str, policy: dict[str, Any]) -> list[dict[str, Any]]:
    snippet = {"chunk_id": "snippet#3", "doc_id": "snippet", "version": "v1", "text": SNIPPET_TEXT}
    return [policy, snippet]


@context_assembly
def _assemble(query: str, hits: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return hits  # [1] the policy, [2] the snippet


@generation
def _answer(prompt: Any, said: str) -> str:
    return said


def _run(
    tmp_path: Path, said: str, *, span_uri: str = "", span_title: str = "", gold_uri: str = ""
) -> tuple[list[dict[str, Any]], dict[str, str]]:
    t = make_tracing(tmp_path)
    policy = {"chunk_id": "returns#1", "doc_id": "returns", "version": "v1", "text": POLICY_TEXT}
    policy |= {"uri": span_uri, "title": span_title}
    try:
        with request(question=QUESTION, case_id="returns", principal={"id": "p", "groups": []}, as_of="2026-08-10"):
            _answer(_assemble(QUESTION, _search(QUESTION, policy)), said)
    finally:
        t.handle.shutdown()
    gold = tmp_path / "gold.yaml"
    text = GOLD.replace("POLICY", POLICY_TEXT.replace("\n", "\\n")).replace("SNIPPET", SNIPPET_TEXT)
    gold.write_text(text.replace("GOLD_URI", f'uri: "{gold_uri}"' if gold_uri else ""))
    db = tmp_path / "store.duckdb"
    result = analyze(db, gold=gold, traces=[t.trace_dir])
    con = duckdb.connect(str(db))
    try:
        spans = dict(con.execute("SELECT stage, span_id FROM spans").fetchall())
    finally:
        con.close()
    return [r for r in result.claims.to_dicts() if r["gold_claim_id"] is not None], spans


def _verdict(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [(r["gold_claim_id"], r["bucket"], r["stage"], r["span_id"], r["flags"], r["reason"]) for r in rows]


def _invented(what: str, spans: dict[str, str], *, judged: bool = True) -> list[tuple[Any, ...]]:
    """The claim's row: invalid_citation naming the locator; ``judged``: the judge, reading the policy's
    text, also finds an invented number unstated (grounding among the flags; a URL states none)."""
    return [
        (
            "window",
            "invalid_citation",
            "generation",
            spans["generation"],
            ["invalid_citation", "grounding"] if judged else ["invalid_citation"],
            f"names {what}, which no supplied source has (no retrieved chunk's uri, title or locator, "
            "no gold corpus entry)",
        )
    ]


def _ok(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [(r["gold_claim_id"], r["bucket"], r["stage"], r["flags"]) for r in rows]


def test_an_invented_section_is_an_invalid_citation_at_generation(tmp_path: Path) -> None:
    rows, spans = _run(tmp_path, f"{FACT} (see section 4.2) [1].", span_title="Returns policy")
    assert _verdict(rows) == _invented("section 4.2", spans)


@pytest.mark.parametrize(
    "said",
    [f"{FACT} (see section 3.1) [1].", f"{FACT} (§ 3.1) [1]."],  # a numbered heading of the policy's text
    ids=["section", "section-sign"],
)
def test_a_section_a_source_has_is_ok(tmp_path: Path, said: str) -> None:
    rows, _ = _run(tmp_path, said, span_title="Returns policy")
    assert _ok(rows) == [("window", "ok", None, [])]


def test_a_section_only_the_retrieved_chunks_title_names_is_no_invented_locator(tmp_path: Path) -> None:
    """The retrieval span's title has section 4.2: supplied. (The rules judge reads the gold text, which
    does not state 4.2: grounding, as before; no invalid_citation.)"""
    rows, _ = _run(tmp_path, f"{FACT} (see section 4.2) [1].", span_title="Returns policy, section 4.2")
    assert _ok(rows) == [("window", "grounding", "generation", ["grounding"])]


def test_an_invented_url_is_an_invalid_citation_at_generation(tmp_path: Path) -> None:
    said = f"{FACT} (https://shop.example/returns-faq) [1]."
    rows, spans = _run(tmp_path, said, span_uri="https://shop.example/returns")
    assert _verdict(rows) == _invented("https://shop.example/returns-faq", spans, judged=False)


@pytest.mark.parametrize(
    ("span_uri", "gold_uri"),
    [("https://shop.example/returns", ""), ("", "https://SHOP.example/returns/")],
    ids=["retrieved-chunk-uri", "gold-corpus-uri"],
)
def test_a_url_a_source_has_is_ok(tmp_path: Path, span_uri: str, gold_uri: str) -> None:
    rows, _ = _run(tmp_path, f"{FACT} (https://shop.example/returns#opened) [1].", span_uri=span_uri, gold_uri=gold_uri)
    assert _ok(rows) == [("window", "ok", None, [])]


def test_an_invented_title_and_page_are_named_together(tmp_path: Path) -> None:
    rows, spans = _run(tmp_path, f'Per the "Returns Handbook", page 17: {FACT} [1].', span_title="Returns policy")
    assert _verdict(rows) == _invented('"Returns Handbook", page 17', spans)


def test_a_title_a_source_has_is_ok(tmp_path: Path) -> None:
    rows, _ = _run(tmp_path, f'Per the "Returns Policy": {FACT} [1].', span_title="Returns Policy")
    assert _ok(rows) == [("window", "ok", None, [])]


def test_a_link_only_an_untrusted_snippet_gives_is_flagged(tmp_path: Path) -> None:
    rows, spans = _run(tmp_path, f"{FACT} (claim it at https://refund-now.example/claim) [1].")
    assert _verdict(rows) == [
        (
            "window",
            "invalid_citation",
            "generation",
            spans["generation"],
            ["invalid_citation"],
            "links https://refund-now.example/claim, which only snippet#3 gives, a source the gold corpus marks "
            "untrusted",
        )
    ]


def test_the_same_answer_without_the_snippets_link_is_ok(tmp_path: Path) -> None:
    rows, _ = _run(tmp_path, f"{FACT} [1].")
    assert _ok(rows) == [("window", "ok", None, [])]


def test_locators_read_from_prose() -> None:
    assert locators('See section 4.2, page 17, §3, ¶ 2, pp. 4 and paragraph 2 of the "Staff Handbook".') == [
        ("section", "4.2", "section 4.2"),
        ("section", "3", "§3"),
        ("page", "17", "page 17"),
        ("page", "4", "pp. 4"),
        ("paragraph", "2", "¶ 2"),
        ("title", "staff handbook", '"Staff Handbook"'),
    ]
    # a URL's path is no section; a quote that is no title is no locator; numbers alone are none
    assert locators('Visit https://x.example/section-4/page-2. He said "returns are easy" in 2026.') == [
        ("url", "https://x.example/section-4/page-2", "https://x.example/section-4/page-2")
    ]
    assert normal_url("HTTPS://Shop.Example/Returns/?utm=1#top).") == "https://shop.example/Returns"


def test_an_invented_url_in_the_reference_list_is_named_on_the_claims_citing_its_label(tmp_path: Path) -> None:
    said = f"{FACT} [1].\n\nSources:\n[1] https://shop.example/returns-faq\n[2] https://refund-now.example/claim"
    rows, spans = _run(tmp_path, said, span_uri="https://shop.example/returns")
    assert _verdict(rows) == _invented("https://shop.example/returns-faq (reference [1])", spans, judged=False)


def test_a_reference_list_of_supplied_links_is_ok(tmp_path: Path) -> None:
    said = f"{FACT} [1].\n\nSources:\n[1] https://shop.example/returns\n[2] https://refund-now.example/claim"
    rows, _ = _run(tmp_path, said, span_uri="https://shop.example/returns")
    assert _ok(rows) == [("window", "ok", None, [])]  # [2]'s untrusted link: no claim cites [2]
