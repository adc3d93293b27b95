"""Chunks without ids get one stable derived identity whatever shape they come in; unknown stays absent."""

from __future__ import annotations

import logging
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from citeline.instrumentation import Chunk, retrieval
from citeline.instrumentation.chunks import content_hash, to_columns, to_record
from tests.conftest import Tracing
from tests.extras import needs

needs("langchain_core", "LangChain's Document")
needs("haystack", "Haystack's Document")
needs("llama_index.core", "LlamaIndex's nodes")
from haystack import Document as HaystackDocument  # noqa: E402
from langchain_core.documents import Document  # noqa: E402
from llama_index.core.schema import NodeWithScore, TextNode  # noqa: E402

TEXT = "Opened electronics may be returned within 30 days of delivery."
H = content_hash(TEXT)


@pytest.mark.parametrize(
    ("metadata", "chunk_id", "doc_id"),
    [
        ({"source": "handbook.md", "start_index": 120}, "handbook.md#start=120", "handbook.md"),
        ({"source": "handbook.pdf", "page": 3}, f"handbook.pdf#page=3#sha={H}", "handbook.pdf"),
        ({"source": "handbook.md"}, f"handbook.md#sha={H}", "handbook.md"),
        ({}, f"sha={H}", ""),
        ({"doc_id": "returns"}, "returns", "returns"),  # a whole document: chunk id = doc id
        ({"doc_id": "returns", "start_index": 0}, "returns#start=0", "returns"),
        ({"chunk_id": "returns#2", "source": "x.md", "start_index": 5}, "returns#2", "x.md"),
    ],
)
def test_langchain_loader_documents_get_a_derived_identity(
    metadata: dict[str, Any], chunk_id: str, doc_id: str
) -> None:
    rec = to_record(Document(page_content=TEXT, metadata=metadata))
    assert (rec.chunk_id, rec.doc_id, rec.content_hash) == (chunk_id, doc_id, H)
    assert rec.derived_id is (chunk_id not in ("returns", "returns#2"))


FIELDS = st.fixed_dictionaries(
    {},
    optional={
        "doc_id": st.sampled_from(["returns", "policy 7"]),
        "chunk_id": st.sampled_from(["returns#2", "p|7"]),
        "version": st.sampled_from(["v4", "2025"]),
        "source": st.sampled_from(["handbook.md", "https://kb/x"]),
        "start_index": st.integers(0, 5000),
        "page": st.integers(1, 9),
    },
)


def _identity(rec: Any) -> tuple[Any, ...]:
    return (rec.doc_id, rec.chunk_id, rec.version, rec.content_hash, rec.derived_id)


@given(fields=FIELDS, text=st.sampled_from([TEXT, "Five days.", ""]))
def test_every_chunk_shape_normalises_ids_the_same_way(fields: dict[str, Any], text: str) -> None:
    plain = {**fields, "text": text}
    nested = {"text": text, "metadata": dict(fields)}
    lc = Document(page_content=text, metadata=dict(fields))
    obj = SimpleNamespace(
        doc_id=fields.get("doc_id"), chunk_id=fields.get("chunk_id"), text=text, metadata=dict(fields)
    )
    expected = _identity(to_record(plain))
    assert _identity(to_record(nested)) == expected
    assert _identity(to_record(lc)) == expected
    assert _identity(to_record(obj)) == expected
    # the column-wise fast path for lists of plain dicts agrees with the one-at-a-time path
    cols = to_columns([plain, plain])
    assert (cols.doc_id[0], cols.chunk_id[0], cols.version[0], cols.content_hash[0]) == expected[:4]
    assert cols.derived_ids == 2 * expected[4]
    if text or set(fields) - {"version"}:  # never an empty id when there is anything to derive it from
        assert expected[1] != ""
    if not ({"source", "start_index", "page"} & set(fields)):  # citeline's own Chunk agrees too
        own = Chunk(doc_id=fields.get("doc_id", ""), chunk_id=fields.get("chunk_id", ""), text=text)
        own.version = fields.get("version", "")
        assert _identity(to_record(own)) == expected


def test_plain_dict_with_empty_chunk_id_falls_back_like_every_other_shape() -> None:
    cols = to_columns([{"doc_id": "returns", "chunk_id": "", "text": TEXT}])
    assert cols.chunk_id == ["returns"]  # was "" on the fast path only


def test_haystack_and_llamaindex_documents() -> None:
    hs = HaystackDocument(content=TEXT, meta={"source_id": "returns", "page_number": 2})
    rec = to_record(hs)
    assert (rec.chunk_id, rec.doc_id, rec.content_hash, rec.derived_id) == (hs.id, "returns", H, False)
    named = to_record(HaystackDocument(content=TEXT, meta={"chunk_id": "returns#2", "doc_id": "returns"}, score=0.7))
    assert (named.chunk_id, named.doc_id, named.score) == ("returns#2", "returns", 0.7)
    node = NodeWithScore(node=TextNode(text=TEXT, id_="n-1", metadata={"doc_id": "returns"}), score=None)
    rec2 = to_record(node)
    assert (rec2.chunk_id, rec2.doc_id, rec2.content_hash) == ("n-1", "returns", H)


def test_id_less_chunks_warn_once_naming_the_stage_and_the_fix(
    tracing: Tracing, caplog: pytest.LogCaptureFixture
) -> None:
    @retrieval
    def loader_search(q: str) -> list[Document]:
        return [Document(page_content=TEXT, metadata={"source": "handbook.md", "start_index": 0})]

    with caplog.at_level(logging.WARNING, logger="citeline"):
        loader_search("a")
        loader_search("b")
    assert [r.getMessage() for r in caplog.records] == [
        "citeline: retrieval step 'loader_search' returned 1 chunk(s) without an id; citeline recorded ids derived "
        "from source, offset and content hash. Give each chunk a 'chunk_id' (e.g. in Document.metadata) or pass "
        "to_chunks= to the decorator for ids that match your gold set."
    ]
    first, _ = tracing.by_stage("retrieval")
    attrs = dict(first.attributes or {})
    assert attrs["citeline.chunks.chunk_id"] == ("handbook.md#start=0",)
    assert attrs["citeline.chunks.derived_ids"] == 1
    assert attrs["retrieval.documents.0.document.id"] == "handbook.md#start=0"


def test_unknown_score_and_empty_fields_are_absent(tracing: Tracing) -> None:
    @retrieval
    def bm25(q: str) -> list[Document]:  # BM25Retriever returns Documents with no score
        return [
            Document(page_content=TEXT, metadata={"chunk_id": "returns#2"}),
            Document(page_content="Five days.", metadata={"chunk_id": "ship#1", "doc_id": "ship", "version": "v2"}),
        ]

    bm25("q")
    (span,) = tracing.by_stage("retrieval")
    attrs = dict(span.attributes or {})
    assert not [k for k in attrs if k.endswith("document.score")]  # was 0.0 on every document
    assert "citeline.chunks.score" not in attrs
    assert attrs["retrieval.documents.0.document.metadata"] == f'{{"content_hash":"{H}"}}'
    assert attrs["retrieval.documents.1.document.metadata"] == (
        f'{{"doc_id":"ship","version":"v2","content_hash":"{content_hash("Five days.")}"}}'
    )
