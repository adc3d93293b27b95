"""Context steps that return a prompt, not chunk objects, with the real LangChain and LlamaIndex types.

The chunks that reached the model are the ones handed to the step (or
retrieved earlier in the request) whose text is in the prompt, in prompt
order, each with the label written before it. The analyzer then blames the
right component: a chunk trimmed away by ``trim_messages`` is a context drop,
not the model's invalid citation.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from citeline.analyzer.run.analyze import analyze
from citeline.examples.demo import gold_path
from citeline.instrumentation import context_assembly, generation, request, retrieval
from tests.conftest import Tracing, make_tracing
from tests.extras import needs

needs("langchain_core", "LangChain's prompts and messages")
needs("llama_index.core", "LlamaIndex's prompts")
needs("haystack", "Haystack's Document")
from langchain_core.documents import Document  # noqa: E402
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage, trim_messages  # noqa: E402
from langchain_core.prompts import ChatPromptTemplate  # noqa: E402

SUPPORT = Document(
    page_content="Opened electronics may be returned within 30 days of delivery with proof of purchase.",
    metadata={"chunk_id": "returns-v4#eligibility-2", "doc_id": "returns", "version": "v4"},
)
FEE = Document(
    page_content="A 15% restocking fee applies to opened electronics returned after 14 days.",
    metadata={"chunk_id": "restocking-v2#fee-1", "doc_id": "restocking", "version": "v2"},
)
REFUNDS = Document(
    page_content="Refunds are issued to the original payment method within 5 business days of receiving the item.",
    metadata={"chunk_id": "returns-v4#refunds-3", "doc_id": "returns", "version": "v4"},
)
HITS = [SUPPORT, FEE, REFUNDS]
QUESTION = "Can opened electronics be returned after three weeks?"

PROMPT = ChatPromptTemplate.from_messages(
    [("system", "Answer only from these sources and cite them as [n].\n\n{context}"), ("human", "{question}")]
)


@retrieval
def search(question: str) -> list[Document]:
    return list(HITS)


@context_assembly
def stuff_prompt(question: str, docs: list[Document]) -> Any:
    """The LCEL 'stuff' pattern: every chunk in one system message, labelled [n]."""
    context = "\n\n".join(f"[{i}] {d.page_content}" for i, d in enumerate(docs, 1))
    return PROMPT.invoke({"context": context, "question": question})


@context_assembly
def chat_with_trimming(question: str, docs: list[Document], max_messages: int) -> Any:
    """Each chunk its own message; trim_messages keeps the system prompt and the newest ones."""
    messages: list[BaseMessage] = [SystemMessage("Answer only from the sources below; cite them as [n].")]
    messages += [HumanMessage(f"[{i}] {d.page_content}") for i, d in enumerate(docs, 1)]
    messages.append(HumanMessage(question))
    return trim_messages(messages, max_tokens=max_messages, token_counter=len, strategy="last", include_system=True)


@context_assembly
def prompt_from_the_request(question: str) -> str:
    """No chunks handed in: the request's last retrieval is what the prompt chose from."""
    return "Sources:\nSource 1: " + REFUNDS.page_content + "\nSource 2: " + SUPPORT.page_content + f"\nQ: {question}"


@generation
def llm(prompt: Any, script: str) -> str:  # a hosted model cannot run here: the answer is scripted
    return script


def _ask(build: Callable[[], Any], script: str) -> None:
    with request(question=QUESTION, case_id="returns-window", as_of="2026-08-10"):
        llm(build(), script)


def _analyze(tmp_path: Path, t: Tracing) -> list[dict[str, Any]]:
    t.handle.shutdown()
    result = analyze(tmp_path / "s.duckdb", gold=gold_path(), traces=[t.trace_dir])
    return [r for r in result.claims.to_dicts() if r["gold_claim_id"] == "window"]


def test_chat_prompt_value_context_is_read_from_the_prompt(tracing: Tracing) -> None:
    _ask(lambda: stuff_prompt(QUESTION, search(QUESTION)), "Within 30 days [1].")
    (ctx,) = tracing.by_stage("context")
    attrs = dict(ctx.attributes or {})
    assert "citeline.adapter_error" not in attrs
    assert attrs["citeline.chunks.chunk_id"] == (
        "returns-v4#eligibility-2",
        "restocking-v2#fee-1",
        "returns-v4#refunds-3",
    )
    assert attrs["citeline.chunks.label"] == ("1", "2", "3")
    assert attrs["citeline.context.chunks_from"] == "arguments"
    assert attrs["citeline.context.candidates"] == 3
    (gen,) = tracing.by_stage("generation")
    assert (gen.attributes or {})["citeline.generation.context.label"] == ("1", "2", "3")


def test_trimmed_away_chunk_is_a_context_drop_and_the_twin_is_ok(tmp_path: Path) -> None:
    t = make_tracing(tmp_path)
    # kept: system + the last 3 messages ([2] fee, [3] refunds, question); [1] (the support) is trimmed away
    _ask(
        lambda: chat_with_trimming(QUESTION, search(QUESTION), 4),
        "Opened electronics may be returned within 30 days of delivery [2].",
    )
    _ask(
        lambda: chat_with_trimming(QUESTION, search(QUESTION), 10),
        "Opened electronics may be returned within 30 days of delivery [1].",
    )
    contexts = t.by_stage("context")
    trimmed, whole = (dict(c.attributes or {}) for c in contexts)
    assert trimmed["citeline.chunks.chunk_id"] == ("restocking-v2#fee-1", "returns-v4#refunds-3")
    assert trimmed["citeline.chunks.label"] == ("2", "3")  # the labels the model saw, not positions
    assert whole["citeline.chunks.label"] == ("1", "2", "3")
    span_ids = [f"{c.context.span_id:016x}" for c in contexts]
    traces = [f"{c.context.trace_id:032x}" for c in contexts]
    rows = {r["trace_id"]: r for r in _analyze(tmp_path, t)}
    assert (rows[traces[0]]["bucket"], rows[traces[0]]["stage"], rows[traces[0]]["span_id"]) == (
        "context_drop",
        "context",
        span_ids[0],
    )
    assert rows[traces[1]]["bucket"] == "ok"


def test_prompt_with_no_chunks_handed_in_uses_the_requests_retrieval(tracing: Tracing) -> None:
    _ask(lambda: (search(QUESTION), prompt_from_the_request(QUESTION))[1], "Within 30 days [2].")
    (ctx,) = tracing.by_stage("context")
    attrs = dict(ctx.attributes or {})
    assert attrs["citeline.chunks.chunk_id"] == ("returns-v4#refunds-3", "returns-v4#eligibility-2")
    assert attrs["citeline.chunks.label"] == ("1", "2")
    assert attrs["citeline.context.chunks_from"] == "retrieval"


def test_llamaindex_prompt_and_chat_messages(tracing: Tracing) -> None:
    from llama_index.core.llms import ChatMessage
    from llama_index.core.prompts import PromptTemplate
    from llama_index.core.schema import NodeWithScore, TextNode

    nodes = [NodeWithScore(node=TextNode(text=d.page_content, id_=d.metadata["chunk_id"]), score=0.5) for d in HITS]
    template = PromptTemplate("Please answer using only the sources.\n{context_str}\nQuery: {query_str}\nAnswer: ")

    @context_assembly
    def citation_prompt(question: str, source_nodes: list[NodeWithScore]) -> list[ChatMessage]:
        # CitationQueryEngine's labelling: "Source n:" before each chunk; REFUNDS left out on purpose
        context = "\n\n".join(f"Source {i}:\n{n.node.get_content()}" for i, n in enumerate(source_nodes[:2], 1))
        return template.format_messages(context_str=context, query_str=question)

    @context_assembly
    def text_prompt(question: str, source_nodes: list[NodeWithScore]) -> str:
        context = "\n".join(f"{i}. {n.node.get_content()}" for i, n in enumerate(reversed(source_nodes), 1))
        return template.format(context_str=context, query_str=question)

    with request(question=QUESTION):
        citation_prompt(QUESTION, nodes)
        text_prompt(QUESTION, nodes)
    first, second = (dict(c.attributes or {}) for c in tracing.by_stage("context"))
    assert first["citeline.chunks.chunk_id"] == ("returns-v4#eligibility-2", "restocking-v2#fee-1")
    assert first["citeline.chunks.label"] == ("1", "2")
    assert second["citeline.chunks.chunk_id"] == (
        "returns-v4#refunds-3",
        "restocking-v2#fee-1",
        "returns-v4#eligibility-2",
    )
    assert second["citeline.chunks.label"] == ("1", "2", "3")


def test_prompt_with_nothing_to_look_for_is_loud_not_an_empty_context(
    tracing: Tracing, caplog: pytest.LogCaptureFixture
) -> None:
    @context_assembly
    def lonely(question: str) -> str:
        return f"Answer: {question}"

    with caplog.at_level(logging.WARNING, logger="citeline"), request(question="q"):
        assert lonely("q") == "Answer: q"
        lonely("q")
    for ctx in tracing.by_stage("context"):
        attrs = dict(ctx.attributes or {})
        assert "citeline.chunks.chunk_id" not in attrs
        assert attrs["citeline.adapter_error"] == (
            "the context step returned a prompt, and no chunks were passed to it or retrieved earlier in this "
            "request; pass @context_assembly(to_chunks=...) to name them"
        )
    assert [r.getMessage() for r in caplog.records] == [
        "citeline: context step 'lonely': the context step returned a prompt, and no chunks were passed to it "
        "or retrieved earlier in this request; pass @context_assembly(to_chunks=...) to name them"
    ]


def test_lists_of_documents_are_chunks_not_prompts(tracing: Tracing) -> None:
    from haystack import Document as HaystackDocument
    from llama_index.core.schema import NodeWithScore, TextNode

    @context_assembly
    def pick(kind: str) -> list[Any]:
        if kind == "langchain":
            return [SUPPORT, FEE]
        if kind == "haystack":
            return [HaystackDocument(content=d.page_content, meta=d.metadata) for d in (SUPPORT, FEE)]
        return [NodeWithScore(node=TextNode(text=d.page_content, id_=d.metadata["chunk_id"])) for d in (SUPPORT, FEE)]

    for kind in ("langchain", "haystack", "llamaindex"):
        pick(kind)
    for ctx in tracing.by_stage("context"):
        attrs = dict(ctx.attributes or {})
        assert attrs["citeline.chunks.chunk_id"] == ("returns-v4#eligibility-2", "restocking-v2#fee-1")
        assert "citeline.context.chunks_from" not in attrs
