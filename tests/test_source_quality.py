"""Source quality: the gold corpus rates chunks ``authority: primary|secondary|untrusted``, a case may
``require_authority: primary``.

A claim resting only on a source below what its case requires keeps its bucket and gets the
``low_authority`` flag (and counts in the report's ``low_authority`` figure); a claim citing an
``untrusted`` chunk is ``invalid_citation`` at generation. Each with its ok twin: the same answer
citing the policy page. Real decorators, real trace files, a real DuckDB file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import pytest

from citeline.analyzer.gold.goldset import load_gold
from citeline.analyzer.run.analyze import analyze
from citeline.analyzer.store import query_path
from citeline.instrumentation import context_assembly, generation, request, retrieval
from tests.conftest import make_tracing

TEXT = "Opened devices can be returned within 30 days of delivery."
CORPUS = {
    "policy#1": {"chunk_id": "policy#1", "doc_id": "policy", "version": "v1", "text": TEXT},
    "forum#9": {"chunk_id": "forum#9", "doc_id": "forum", "version": "v1", "text": TEXT},
    "snippet#3": {"chunk_id": "snippet#3", "doc_id": "snippet", "version": "v1", "text": TEXT},
}
GOLD = f"""
corpus:
  - {{chunk_id: "policy#1", doc_id: policy, version: v1, authority: primary, text: "{TEXT}"}}
  - {{chunk_id: "forum#9", doc_id: forum, version: v1, authority: secondary, text: "{TEXT}"}}
  - {{chunk_id: "snippet#3", doc_id: snippet, version: v1, authority: untrusted, text: "{TEXT}"}}
cases:
  - case_id: returns
    question: How long can opened devices be returned?
    REQUIRE
    claims:
      - claim_id: window
        text: {TEXT}
        facts: ["30 days"]
        support: [["policy#1"], ["forum#9"], ["snippet#3"]]
"""
QUESTION = "How long can opened devices be returned?"
PRINCIPAL = {"id": "pat", "groups": ["public"]}


@retrieval
def _search(query: str) -> list[dict[str, Any]]:
    return list(CORPUS.values())


@context_assembly
def _assemble(query: str, hits: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return hits  # labels 1, 2, 3: policy, forum, snippet


@generation
def _answer(prompt: Any, said: str) -> str:
    return said


def _rows(tmp_path: Path, label: str, *, require: str | None) -> tuple[list[dict[str, Any]], dict[str, str], Path]:
    t = make_tracing(tmp_path)
    try:
        with request(question=QUESTION, case_id="returns", principal=PRINCIPAL, as_of="2026-08-10"):
            _answer(
                _assemble(QUESTION, _search(QUESTION)),
                f"Opened devices can be returned within 30 days of delivery [{label}].",
            )
    finally:
        t.handle.shutdown()
    gold = tmp_path / "gold.yaml"
    gold.write_text(GOLD.replace("REQUIRE", f"require_authority: {require}" if require else ""))
    db = tmp_path / "store.duckdb"
    result = analyze(db, gold=gold, traces=[t.trace_dir])
    con = duckdb.connect(str(db))
    try:
        spans = dict(con.execute("SELECT stage, span_id FROM spans").fetchall())
    finally:
        con.close()
    return [r for r in result.claims.to_dicts() if r["gold_claim_id"] is not None], spans, db


def _verdict(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [(r["gold_claim_id"], r["bucket"], r["stage"], r["span_id"], r["flags"], r["reason"]) for r in rows]


OK_REASON = (
    "supported and cited as the gold set says; resolution and render were not traced "
    "(add @resolution and @render to check the links the user got)"
)


def test_a_claim_resting_only_on_a_forum_post_where_policy_is_required_is_flagged_low_authority(
    tmp_path: Path,
) -> None:
    rows, _, db = _rows(tmp_path, "2", require="primary")
    assert _verdict(rows) == [("window", "ok", None, None, ["low_authority"], OK_REASON)]
    con = duckdb.connect(str(db), read_only=True)
    try:
        (run_id,) = con.execute("SELECT run_id FROM runs").fetchone() or ("",)
        metrics = con.execute(
            query_path("report_citation_metrics").read_text(), {"run_id": run_id, "basis": None}
        ).fetchall()
    finally:
        con.close()
    assert [m[1:5] for m in metrics if m[1] == "low_authority"] == [("low_authority", 1, 1, 1.0)]


@pytest.mark.parametrize(("label", "require"), [("1", "primary"), ("2", None), ("2", "secondary")])
def test_the_policy_page_or_a_case_that_asks_no_more_is_no_low_authority(
    tmp_path: Path, label: str, require: str | None
) -> None:
    rows, _, _ = _rows(tmp_path, label, require=require)
    assert _verdict(rows) == [("window", "ok", None, None, [], OK_REASON)]


def test_citing_an_untrusted_snippet_is_an_invalid_citation_at_generation(tmp_path: Path) -> None:
    rows, spans, _ = _rows(tmp_path, "3", require=None)
    assert _verdict(rows) == [
        (
            "window",
            "invalid_citation",
            "generation",
            spans["generation"],
            ["invalid_citation"],
            "cites snippet#3, which the gold corpus marks untrusted (authority: untrusted): a source never to be cited",
        )
    ]


def test_the_gold_loader_names_a_bad_authority_by_file_line_and_field(tmp_path: Path) -> None:
    gold = tmp_path / "gold.yaml"
    text = GOLD.replace("authority: secondary", "authority: official").replace(
        "REQUIRE", "require_authority: untrusted"
    )
    gold.write_text(text)
    g = load_gold(gold)
    assert [str(e) for e in g.errors] == [
        f"{gold}:line 4: authority: 'official' is not one of primary, secondary, untrusted",
        # the chunk is skipped, so the claim naming it is too
        f"{gold}:line 11: support: unknown chunk 'forum#9': add it to the corpus or fix the id",
        f"{gold}:line 7: require_authority: 'untrusted' is not one of primary, secondary",
    ]
    assert g.corpus["policy#1"].authority == "primary" and "forum#9" not in g.corpus


def test_authority_in_a_jsonl_folder(tmp_path: Path) -> None:
    folder = tmp_path / "gold"
    folder.mkdir()
    (folder / "corpus.jsonl").write_text(
        '{"chunk_id": "a", "doc_id": "d", "authority": "secondary"}\n{"chunk_id": "b", "doc_id": "d", "authority": 3}\n'
    )
    (folder / "cases.jsonl").write_text(
        '{"case_id": "c", "question": "q?", "require_authority": "primary", "claims": '
        '[{"claim_id": "x", "text": "t", "support": [["a"]]}]}\n'
    )
    g = load_gold(folder)
    assert [str(e) for e in g.errors] == [
        f"{folder / 'corpus.jsonl'}:line 2: authority: 3 is not one of primary, secondary, untrusted"
    ]
    assert g.corpus["a"].authority == "secondary" and g.cases["c"].require_authority == "primary"


@pytest.mark.parametrize(("label", "trips"), [("2", True), ("1", False)], ids=["forum-post", "policy-page"])
def test_the_low_authority_figure_is_a_gate(
    tmp_path: Path, label: str, trips: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    from citeline.analyzer.cli.main import main

    _, _, db = _rows(tmp_path, label, require="primary")
    capsys.readouterr()
    assert main(["report", "--db", str(db), "--fail-on", "low_authority>0"]) == (1 if trips else 0)
    err = capsys.readouterr().err
    assert ("low_authority is 1 (1/1; gate low_authority>0)" in err) is trips
