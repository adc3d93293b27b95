"""A trace with both OpenInference auto-instrumented spans and citeline stage spans: citeline's win.

Auto-instrumentation (an LLM client, a vector store, a web framework) writes its own
spans into the same trace: the app's root span, a retriever span and an LLM call
inside citeline's stages, a follow-up LLM call after generation. Each stage must be
read from citeline's span; the OpenInference spans only stand in for a stage that
has no citeline span at all.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import pytest

from citeline.analyzer.run.analyze import analyze
from citeline.examples.demo import gold_path
from citeline.instrumentation import context_assembly, generation, request, retrieval
from tests.conftest import make_tracing

QUESTION = "Can opened electronics be returned after three weeks?"
SUPPORT = {
    "doc_id": "returns",
    "chunk_id": "returns-v4#eligibility-2",
    "version": "v4",
    "text": "Opened electronics may be returned within 30 days of delivery with proof of purchase.",
}
FEE = {
    "doc_id": "restocking",
    "chunk_id": "restocking-v2#fee-1",
    "version": "v2",
    "text": "A 15% restocking fee applies to opened electronics returned after 14 days.",
}
RIGHT = "Opened electronics may be returned within 30 days of delivery [1]."
WRONG = "Opened electronics may be returned within 14 days of delivery [1]."


def _oi(tracer: Any, name: str, kind: str, **attrs: Any) -> Any:
    return tracer.start_as_current_span(name, attributes={"openinference.span.kind": kind, **attrs})


# scenario -> (citeline retrieval returns, citeline answer, expected bucket, stage whose span broke)
SCENARIOS = {
    "ok": ([SUPPORT, FEE], RIGHT, "ok", None),
    # the follow-up LLM call says the right thing; the answer the user got did not
    "grounding": ([SUPPORT, FEE], WRONG, "grounding", "generation"),
    # the vector store's raw hits held the support; citeline's retrieval returned without it
    "retrieval_miss": ([FEE], RIGHT, "retrieval_miss", "retrieval"),
}


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_citeline_spans_win_over_openinference_spans_of_the_same_kind(tmp_path: Path, scenario: str) -> None:
    hits, said, bucket, stage = SCENARIOS[scenario]
    t = make_tracing(tmp_path)
    auto = t.handle.provider.get_tracer("openinference.instrumentation.auto")

    @retrieval
    def search(q: str) -> list[dict[str, str]]:
        raw = {"retrieval.documents.0.document.id": SUPPORT["chunk_id"], "retrieval.documents.1.document.id": "x#9"}
        with _oi(auto, "VectorStore.query", "RETRIEVER", **raw):
            return list(hits)

    @context_assembly
    def build(q: str, found: list[dict[str, str]]) -> list[dict[str, str]]:
        return found

    @generation
    def answer(prompt: Any) -> str:
        with _oi(auto, "ChatCompletion", "LLM", **{"output.value": said}):
            return said

    with (
        _oi(auto, "POST /ask", "CHAIN", **{"input.value": '{"q": "can I return it?"}'}),
        request(question=QUESTION, case_id="returns-window", as_of="2026-08-10"),
    ):
        answer(build(QUESTION, search(QUESTION)))
        with _oi(auto, "ChatCompletion", "LLM", **{"output.value": RIGHT + " Want to know about refunds?"}):
            pass
    t.handle.shutdown()
    spans = {s: f"{t.by_stage(s)[0].context.span_id:016x}" for s in ("request", "retrieval", "generation")}

    result = analyze(tmp_path / "s.duckdb", gold=gold_path(), traces=[t.trace_dir])
    rows = result.claims.to_dicts()
    # one trace, joined through citeline's request span (not the app's root span), one gold claim
    assert [(r["case_id"], r["gold_claim_id"]) for r in rows] == [("returns-window", "window")]
    (row,) = rows
    assert (row["bucket"], row["stage"], row["span_id"]) == (bucket, stage, spans[stage] if stage else None)


def test_a_generation_another_source_traced_reads_the_context_spans_label_map(tmp_path: Path) -> None:
    """@context_assembly, then an instrumentor's LLM span as the generation: "[1]" means the context span's
    first chunk. Ingest stores that map as the context span's labels beside its own chunk ids and versions
    (no second copy in map_chunk_id / map_version); a store ingested before, which holds the copy and no
    context versions, reads the same."""
    t = make_tracing(tmp_path)
    auto = t.handle.provider.get_tracer("openinference.instrumentation.auto")

    @retrieval
    def search(q: str) -> list[dict[str, str]]:
        return [SUPPORT, FEE]

    @context_assembly
    def build(q: str, found: list[dict[str, str]]) -> list[dict[str, str]]:
        return found

    with request(question=QUESTION, case_id="returns-window", as_of="2026-08-10"):
        build(QUESTION, search(QUESTION))
        with _oi(auto, "ChatCompletion", "LLM", **{"output.value": RIGHT}):
            pass
    t.handle.shutdown()
    llm = next(f"{s.context.span_id:016x}" for s in t.spans() if s.name == "ChatCompletion")
    db = tmp_path / "s.duckdb"

    def verdict() -> tuple[str, str | None, list[str]]:
        (row,) = analyze(db, gold=gold_path(), traces=[t.trace_dir]).claims.to_dicts()
        return row["bucket"], row["generation_span"], row["cited_chunks"]

    assert verdict() == ("ok", llm, [SUPPORT["chunk_id"]])
    con = duckdb.connect(str(db))
    stored = con.execute(
        "SELECT map_label, map_chunk_id, map_version, chunk_id, chunk_version FROM spans WHERE stage = 'context'"
    ).fetchall()
    assert stored == [(["1", "2"], None, None, [SUPPORT["chunk_id"], FEE["chunk_id"]], ["v4", "v2"])]
    # as a store ingested before this release holds it: the copy, and no versions on the context span
    con.execute(
        "UPDATE spans SET map_chunk_id = chunk_id, map_version = chunk_version, chunk_version = NULL "
        "WHERE stage = 'context'"
    )
    con.close()
    assert verdict() == ("ok", llm, [SUPPORT["chunk_id"]])
