"""Identity by content: id-less chunks join the gold corpus by their text; drifted text is freshness."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from citeline.analyzer.run.analyze import analyze
from citeline.examples.demo import gold_path
from citeline.instrumentation import content_hash, context_assembly, generation, request, retrieval
from tests.conftest import make_tracing
from tests.extras import needs

needs("langchain_core", "LangChain's loader Documents")
from langchain_core.documents import Document  # noqa: E402

QUESTION = "Can opened electronics be returned after three weeks?"
GOLD_TEXT = "Opened electronics may be returned within 30 days of delivery with proof of purchase."
DRIFTED = "Opened electronics may be returned within 60 days of delivery with proof of purchase."


@context_assembly
def build(q: str, hits: list[Any]) -> list[Any]:
    return hits


@generation
def llm(prompt: Any, said: str) -> str:  # a hosted model cannot run here: the answer is scripted
    return said


def _ask(hits: list[Any], said: str) -> None:
    @retrieval
    def search(q: str) -> list[Any]:
        return hits

    with request(question=QUESTION, case_id="returns-window", as_of="2026-08-10"):
        llm(build(QUESTION, search(QUESTION)), said)


def test_loader_documents_without_ids_join_the_gold_corpus_by_content(tmp_path: Path) -> None:
    t = make_tracing(tmp_path)
    docs = [  # what a loader + splitter return: a source and an offset, no ids
        Document(page_content=GOLD_TEXT, metadata={"source": "kb/returns.md", "start_index": 0}),
        Document(page_content="Something the gold set never heard of.", metadata={"source": "kb/x.md"}),
    ]
    _ask(docs, "Opened electronics may be returned within 30 days of delivery [1].")
    t.handle.shutdown()
    result = analyze(tmp_path / "s.duckdb", gold=gold_path(), traces=[t.trace_dir])
    (row,) = [r for r in result.claims.to_dicts() if r["gold_claim_id"] == "window"]
    assert (row["bucket"], row["cited_chunks"]) == ("ok", ["returns-v4#eligibility-2"])  # was retrieval_miss
    unknown = f"kb/x.md#sha={content_hash('Something the gold set never heard of.')}"
    assert result.problems() == [
        "chunk identity:-: citeline.chunks.derived_ids: 1 chunk id(s) the app did not give joined the gold corpus "
        f"by content hash; 1 joined nothing (their text is not in the gold corpus, or met two texts): {unknown}"
    ]


def test_text_drifted_under_a_gold_id_is_freshness_not_the_models_grounding(tmp_path: Path) -> None:
    t = make_tracing(tmp_path)
    chunk = {"doc_id": "returns", "chunk_id": "returns-v4#eligibility-2", "version": "v4"}
    _ask([{**chunk, "text": DRIFTED}], "Opened electronics may be returned within 60 days of delivery [1].")
    _ask([{**chunk, "text": GOLD_TEXT}], "Opened electronics may be returned within 30 days of delivery [1].")
    retrievals = t.by_stage("retrieval")
    t.handle.shutdown()
    result = analyze(tmp_path / "s.duckdb", gold=gold_path(), traces=[t.trace_dir])
    rows = {r["trace_id"]: r for r in result.claims.to_dicts() if r["gold_claim_id"] == "window"}
    drifted, twin = (rows[f"{s.context.trace_id:032x}"] for s in retrievals)
    assert (drifted["bucket"], drifted["stage"], drifted["span_id"]) == (
        "freshness",
        "retrieval",
        f"{retrievals[0].context.span_id:016x}",
    )  # was grounding: the model quoted its index faithfully
    assert drifted["reason"] == (
        f"content drift: the index served returns-v4#eligibility-2 with content hash {content_hash(DRIFTED)} where "
        f"the gold corpus has {content_hash(GOLD_TEXT)} (same id and version, other text)"
    )
    assert "content_drift" in drifted["flags"]
    assert (twin["bucket"], twin["flags"]) == ("ok", [])
