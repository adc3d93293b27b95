"""Chunk identity read from the shapes apps really return, and survives export unchanged."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from citeline.instrumentation import Chunk, retrieval
from citeline.instrumentation.chunks import content_hash, to_columns, to_record
from tests.conftest import Tracing, attr_str, make_tracing, read_trace_files
from tests.extras import needs


def test_own_chunk_type() -> None:
    rec = to_record(Chunk("returns", "returns-v4#2", "v4", "Thirty days.", 0.7, "https://u", "Returns"))
    assert (rec.doc_id, rec.chunk_id, rec.version, rec.score, rec.uri, rec.title) == (
        "returns",
        "returns-v4#2",
        "v4",
        0.7,
        "https://u",
        "Returns",
    )
    assert rec.content_hash == content_hash("Thirty days.")


def test_dict_with_metadata_and_missing_optional_fields() -> None:
    rec = to_record({"text": "T", "metadata": {"doc_id": "d", "chunk_id": "d#1", "version": 3}})
    assert (rec.doc_id, rec.chunk_id, rec.version, rec.uri, rec.title) == ("d", "d#1", "3", "", "")
    assert math.isnan(rec.score)


def test_plain_object_with_attributes() -> None:
    @dataclass
    class Hit:
        doc_id: str
        chunk_id: str
        text: str
        score: float

    rec = to_record(Hit("d", "d#9", "body", 1.5))
    assert (rec.doc_id, rec.chunk_id, rec.score, rec.version) == ("d", "d#9", 1.5, "")


def test_langchain_document_and_scored_pairs() -> None:
    needs("langchain_core", "LangChain's Document")
    from langchain_core.documents import Document

    doc = Document(
        page_content="Opened electronics may be returned within 30 days.",
        metadata={
            "doc_id": "returns",
            "chunk_id": "returns-v4#2",
            "version": "v4",
            "source": "https://kb/returns",
            "title": "Returns",
        },
    )
    rec = to_record(doc)
    assert (rec.doc_id, rec.chunk_id, rec.version, rec.uri, rec.title) == (
        "returns",
        "returns-v4#2",
        "v4",
        "https://kb/returns",
        "Returns",
    )
    pairs = to_columns([(doc, 0.83)])
    assert pairs.chunk_id == ["returns-v4#2"] and pairs.score == [0.83]
    # ids only on Document.id: the chunk id comes from there
    bare = to_record(Document(page_content="x", metadata={"doc_id": "d"}, id="d#7"))
    assert (bare.doc_id, bare.chunk_id) == ("d", "d#7")


def test_llamaindex_node_with_score() -> None:
    needs("llama_index.core", "LlamaIndex's nodes")
    from llama_index.core.schema import NodeWithScore, TextNode

    node = TextNode(
        text="Standard shipping costs $4.99.",
        id_="shipping-v2#1",
        metadata={"doc_id": "shipping", "version": "v2", "title": "Shipping"},
    )
    rec = to_record(NodeWithScore(node=node, score=0.42))
    assert (rec.doc_id, rec.chunk_id, rec.version, rec.title, rec.score) == (
        "shipping",
        "shipping-v2#1",
        "v2",
        "Shipping",
        0.42,
    )
    assert rec.content_hash == content_hash("Standard shipping costs $4.99.")


def test_wrapper_objects_and_explicit_hook(tracing: Tracing) -> None:
    @dataclass
    class Result:
        documents: list[dict[str, Any]]

    @retrieval
    def search(query: str) -> Result:
        return Result([{"doc_id": "d", "chunk_id": "d#1"}])

    @retrieval(to_chunks=lambda rows: [{"doc_id": r[0], "chunk_id": r[1]} for r in rows])
    def sql_search(query: str) -> list[tuple[str, str]]:
        return [("d", "d#2"), ("e", "e#1")]

    search("q")
    sql_search("q")
    first, second = tracing.by_stage("retrieval")
    assert (first.attributes or {})["citeline.chunks.chunk_id"] == ("d#1",)
    assert (second.attributes or {})["citeline.chunks.chunk_id"] == ("d#2", "e#1")


def test_iterators_are_not_consumed(tracing: Tracing, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CITELINE_STRICT", "0")

    @retrieval
    def search(query: str) -> Any:
        return iter([{"doc_id": "d", "chunk_id": "d#1"}])

    assert list(search("q")) == [{"doc_id": "d", "chunk_id": "d#1"}]
    (span,) = tracing.by_stage("retrieval")
    assert "iterator" in attr_str(span, "citeline.adapter_error")


ids = st.text(alphabet=st.characters(exclude_categories=["Cs"]), min_size=1, max_size=40)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(st.tuples(ids, ids, st.text(max_size=8), st.text(max_size=60)), min_size=1, max_size=30))
def test_chunk_ids_survive_decorator_export_and_reading(
    tmp_path_factory: pytest.TempPathFactory, rows: list[tuple[str, str, str, str]]
) -> None:
    tmp = Path(tmp_path_factory.mktemp("prop"))
    t = make_tracing(tmp)
    try:
        chunks = [{"doc_id": d, "chunk_id": c, "version": v, "text": x} for d, c, v, x in rows]

        @retrieval
        def search(query: str) -> list[dict[str, Any]]:
            return chunks

        search("q")
        t.handle.force_flush()
        (span,) = read_trace_files(t.trace_dir)
        attrs = span["attributes"]
        assert attrs["citeline.chunks.doc_id"] == [d for d, _, _, _ in rows]
        assert attrs["citeline.chunks.chunk_id"] == [c for _, c, _, _ in rows]
        assert attrs["citeline.chunks.version"] == [v for _, _, v, _ in rows]
        assert attrs["citeline.chunks.content_hash"] == [content_hash(x) if x else "" for _, _, _, x in rows]
    finally:
        t.handle.shutdown()


@given(st.text(max_size=200))
def test_content_hash_ignores_whitespace_layout_only(text: str) -> None:
    spaced = "  " + text.replace(" ", " \n\t ") + "\n"
    assert content_hash(spaced) == content_hash(text)
    assert len(content_hash(text)) == 16
