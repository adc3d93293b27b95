"""Leaks at render: a restricted title, preview or link on the page, to a principal outside the chunk's ACL.

A small app written with the real decorators: its index returns a public chunk and a staff-only one
(the app trims the staff chunk before the model), the model answers right from the public chunk,
and the page's source panel shows something of the staff chunk. Each leak is ``access_violation`` at
the render span even though the claim is right; the ok twin is the same page for a staff principal.
The ACL comes from the retrieval span (the app's index said it) or, when the index says none, from
the gold corpus. Real trace files, a real DuckDB file, nothing mocked.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import pytest

from citeline.analyzer.run.analyze import analyze
from citeline.instrumentation import context_assembly, generation, render, request, retrieval
from tests.conftest import make_tracing, read_trace_files

QUESTION = "Which orders ship free?"
STAFF_TEXT = "Employees get 25% off accessories until the end of the quarter."
PATRON = {"id": "pat", "groups": ["patrons"]}
STAFF = {"id": "sam", "groups": ["staff"]}
PUBLIC_CHUNK = {"chunk_id": "public#1", "doc_id": "public", "version": "v1", "text": "Orders over $50 ship free."}
STAFF_CHUNK = {
    "chunk_id": "staff#1",
    "doc_id": "staff",
    "version": "v1",
    "title": "Staff handbook: discounts",
    "uri": "https://intra.example/staff/discounts",
    "text": STAFF_TEXT,
}
GOLD = """
corpus:
  - {chunk_id: "public#1", doc_id: public, version: v1, uri: "https://shop.example/shipping",
     title: "Shipping", text: "Orders over $50 ship free."}
  - {chunk_id: "staff#1", doc_id: staff, version: v1, title: "Staff handbook: discounts",
     uri: "https://intra.example/staff/discounts", text: "STAFF_TEXT"ACL}
cases:
  - case_id: free-shipping
    question: Which orders ship free?
    claims:
      - claim_id: over-50
        text: Orders over $50 ship free.
        facts: ["$50"]
        support: [["public#1"]]
""".replace("STAFF_TEXT", STAFF_TEXT)
PUBLIC_LINK = {"label": "1", "chunk_id": "public#1", "uri": "https://shop.example/shipping", "title": "Shipping"}


@retrieval
def _search(query: str, hits: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return hits


@context_assembly
def _trim(query: str, hits: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [h for h in hits if h["chunk_id"] == "public#1"]  # the app keeps staff text from the model


@generation
def _answer(prompt: Any) -> str:
    return "Orders over $50 ship free [1]."


@render
def _page(answer: str, links: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return links


def _run(
    tmp_path: Path,
    principal: dict[str, Any],
    panel: list[dict[str, Any]],
    *,
    index_acl: bool,
    gold_acl: bool,
    content: bool = True,
    retrieve_staff: bool | None = None,
) -> tuple[list[dict[str, Any]], dict[str, str], Path]:
    """One request through the real decorators and one analyze into a DuckDB file: the gold rows, the
    span id of each stage, the trace folder. The index returns the staff chunk when it records its ACL
    (``retrieve_staff`` says otherwise); with a gold ACL alone the page shows it from elsewhere (a
    related-documents widget)."""
    t = make_tracing(tmp_path, record_content=content)
    staff = dict(STAFF_CHUNK, acl=["staff"]) if index_acl else dict(STAFF_CHUNK)
    try:
        with request(question=QUESTION, case_id="free-shipping", principal=principal, as_of="2026-08-10"):
            found = index_acl if retrieve_staff is None else retrieve_staff
            hits = _search(QUESTION, [dict(PUBLIC_CHUNK), staff] if found else [dict(PUBLIC_CHUNK)])
            answer = _answer(_trim(QUESTION, hits))
            _page(answer, [PUBLIC_LINK, *panel])
    finally:
        t.handle.shutdown()
    gold = tmp_path / "gold.yaml"
    gold.write_text(GOLD.replace("ACL", ", acl: [staff]" if gold_acl else ""))
    db = tmp_path / "store.duckdb"
    result = analyze(db, gold=gold, traces=[t.trace_dir])
    con = duckdb.connect(str(db))
    try:
        spans = dict(con.execute("SELECT stage, span_id FROM spans").fetchall())
    finally:
        con.close()
    rows = [r for r in result.claims.to_dicts() if r["gold_claim_id"] is not None]
    return rows, spans, t.trace_dir


def _verdict(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [(r["gold_claim_id"], r["bucket"], r["stage"], r["span_id"], r["flags"], r["reason"]) for r in rows]


TITLE_ONLY = [{"label": "", "chunk_id": "staff#1", "title": "Staff handbook: discounts"}]
# a related-documents widget: a snippet of the staff text under a public chunk's link
PREVIEW = [{"label": "2", "chunk_id": "public#1", "uri": "", "preview": STAFF_TEXT[:40] + "…"}]
# the staff document's address behind a row that names no chunk
LINK = [{"label": "2", "uri": "https://intra.example/staff/discounts", "title": "More"}]
# the staff title on a row that names no chunk
TITLE_OF = [{"label": "", "title": "Staff Handbook: Discounts "}]


@pytest.mark.parametrize(
    ("panel", "index_acl", "gold_acl", "shown"),
    [
        (TITLE_ONLY, True, False, "title"),
        (PREVIEW, False, True, "preview"),
        (LINK, False, True, "link, title"),
        (TITLE_OF, False, True, "title"),
        (TITLE_OF, True, False, "title"),  # the title the retrieval span recorded for the chunk
        (LINK, True, False, "link, title"),  # ... and its uri
    ],
    ids=["title-index-acl", "preview-gold-acl", "link-gold-acl", "title-gold-acl", "title-of-index", "link-of-index"],
)
def test_a_restricted_title_preview_or_link_shown_to_a_patron_is_an_access_violation_at_render(
    tmp_path: Path, panel: list[dict[str, Any]], index_acl: bool, gold_acl: bool, shown: str
) -> None:
    rows, spans, _ = _run(tmp_path, PATRON, panel, index_acl=index_acl, gold_acl=gold_acl)
    assert _verdict(rows) == [
        (
            "over-50",
            "access_violation",
            "render",
            spans["render"],
            ["access_violation"],
            f"restricted staff#1 (its {shown} shown) reached render",
        )
    ]


@pytest.mark.parametrize(
    ("panel", "index_acl", "gold_acl"),
    [
        (TITLE_ONLY, True, False),
        (PREVIEW, False, True),
        (LINK, False, True),
        (TITLE_OF, False, True),
        (TITLE_OF, True, False),
        (LINK, True, False),
    ],
    ids=["title-index-acl", "preview-gold-acl", "link-gold-acl", "title-gold-acl", "title-of-index", "link-of-index"],
)
def test_the_same_page_for_staff_is_ok(
    tmp_path: Path, panel: list[dict[str, Any]], index_acl: bool, gold_acl: bool
) -> None:
    rows, _, _ = _run(tmp_path, STAFF, panel, index_acl=index_acl, gold_acl=gold_acl)
    assert [(r["bucket"], r["stage"], r["flags"]) for r in rows] == [("ok", None, [])]


def test_an_index_acl_alone_is_no_leak_when_the_app_trims_the_chunk_and_the_page_shows_none_of_it(
    tmp_path: Path,
) -> None:
    """The index returned the staff chunk with its ACL, the app trimmed it: nothing went further."""
    rows, _, _ = _run(tmp_path, PATRON, [], index_acl=True, gold_acl=False)
    assert [(r["bucket"], r["stage"], r["flags"]) for r in rows] == [("ok", None, [])]


def test_a_gold_acl_still_counts_at_retrieval(tmp_path: Path) -> None:
    """The gold corpus's ACL is the evaluation's requirement: the retrieval filter applies it, so a
    restricted chunk the search returned is a violation at the retrieval span, whatever the page shows."""
    rows, spans, _ = _run(tmp_path, PATRON, TITLE_ONLY, index_acl=False, gold_acl=True, retrieve_staff=True)
    assert _verdict(rows) == [
        (
            "over-50",
            "access_violation",
            "retrieval",
            spans["retrieval"],
            ["access_violation"],
            "restricted staff#1 reached retrieval",
        )
    ]


def test_with_content_off_the_preview_is_not_recorded_and_the_title_still_leaks(tmp_path: Path) -> None:
    """record_content=False: the preview (a chunk's text) never leaves the app; the title and ids do, so
    the title shown to a patron is still found. The ACL is group ids only."""
    panel = [{"label": "", "chunk_id": "staff#1", "title": "Staff handbook: discounts", "preview": STAFF_TEXT}]
    rows, spans, trace_dir = _run(tmp_path, PATRON, panel, index_acl=True, gold_acl=False, content=False)
    assert _verdict(rows) == [
        (
            "over-50",
            "access_violation",
            "render",
            spans["render"],
            ["access_violation"],
            "restricted staff#1 (its title shown) reached render",
        )
    ]
    written = "".join(p.read_text() for p in trace_dir.glob("*.jsonl"))
    assert STAFF_TEXT not in written and "Employees get" not in written
    (ren,) = [s for s in read_trace_files(trace_dir) if s["attributes"].get("citeline.stage") == "render"]
    assert "citeline.render.preview" not in ren["attributes"]
    (ret,) = [s for s in read_trace_files(trace_dir) if s["attributes"].get("citeline.stage") == "retrieval"]
    assert ret["attributes"]["citeline.chunks.acl_group"] == ["staff"]
    assert ret["attributes"]["citeline.chunks.acl_count"] == [-1, 1]


def test_an_empty_index_acl_is_public_as_the_apps_filter_reads_it(tmp_path: Path) -> None:
    """An index whose public chunks carry ``acl: []`` (the LangChain example's; its filter lets such a
    chunk through to anyone): no restriction, so a request that names no principal is checked as any
    other, not held not_evaluable for a chunk nobody restricted."""
    t = make_tracing(tmp_path)
    try:
        with request(question=QUESTION, case_id="free-shipping", as_of="2026-08-10"):
            hits = _search(QUESTION, [dict(PUBLIC_CHUNK, acl=[])])
            _page(_answer(_trim(QUESTION, hits)), [PUBLIC_LINK])
    finally:
        t.handle.shutdown()
    gold = tmp_path / "gold.yaml"
    gold.write_text(GOLD.replace("ACL", ""))
    [row] = analyze(tmp_path / "s.duckdb", gold=gold, traces=[t.trace_dir]).claims.to_dicts()
    assert (row["gold_claim_id"], row["bucket"], row["stage"], row["flags"]) == ("over-50", "ok", None, [])
