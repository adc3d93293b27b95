"""Every decorator on every function kind, and the exact attributes each stage writes."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from typing import Any

import pytest

from citeline.instrumentation import (
    context_assembly,
    generation,
    render,
    request,
    resolution,
    retrieval,
)
from citeline.instrumentation.chunks import content_hash
from tests.conftest import Tracing

CHUNKS: list[dict[str, Any]] = [
    {
        "doc_id": "returns",
        "chunk_id": "returns-v4#e2",
        "version": "v4",
        "text": "Thirty days.",
        "score": 0.9,
        "uri": "https://kb/r4",
        "title": "Returns",
    },
    {
        "doc_id": "shipping",
        "chunk_id": "shipping-v2#s1",
        "version": "v2",
        "text": "Five days.",
        "score": 0.5,
        "uri": "https://kb/s2",
        "title": "Shipping",
    },
]
RESOLVED = [{"marker": "1", "doc_id": "returns", "chunk_id": "returns-v4#e2", "version": "v4", "uri": "https://kb/r4"}]
RENDERED = [{"label": "1", "uri": "https://kb/r4", "title": "Returns"}]
ANSWER_PARTS = ["Returns are ", "accepted for 30 days ", "[1]."]

STAGE_DECORATORS: dict[str, Callable[..., Any]] = {
    "retrieval": retrieval,
    "context": context_assembly,
    "generation": generation,
    "resolution": resolution,
    "render": render,
}
OUTPUT: dict[str, Any] = {
    "retrieval": CHUNKS,
    "context": CHUNKS,
    "generation": "".join(ANSWER_PARTS),
    "resolution": RESOLVED,
    "render": RENDERED,
}
STREAM: dict[str, list[Any]] = {
    "retrieval": CHUNKS,
    "context": CHUNKS,
    "generation": ANSWER_PARTS,
    "resolution": RESOLVED,
    "render": RENDERED,
}
KINDS = ["sync", "async", "generator", "async_generator"]


def make_fn(stage: str, kind: str) -> Callable[..., Any]:
    """A function of the given kind returning (or yielding) the stage's output."""
    if kind == "sync":

        def fn(query: str) -> Any:
            return OUTPUT[stage]
    elif kind == "async":

        async def fn(query: str) -> Any:  # type: ignore[misc]
            await asyncio.sleep(0)
            return OUTPUT[stage]
    elif kind == "generator":

        def fn(query: str) -> Any:  # type: ignore[misc]
            yield from STREAM[stage]
    else:

        async def fn(query: str) -> Any:  # type: ignore[misc]
            for item in STREAM[stage]:
                await asyncio.sleep(0)
                yield item

    decorated: Callable[..., Any] = STAGE_DECORATORS[stage](fn)
    return decorated


def call(fn: Callable[..., Any], kind: str) -> Any:
    if kind == "sync":
        return fn("returns window?")
    if kind == "async":
        return asyncio.run(fn("returns window?"))
    if kind == "generator":
        return list(fn("returns window?"))

    async def drain() -> list[Any]:
        return [x async for x in fn("returns window?")]

    return asyncio.run(drain())


EXPECTED_STAGE_ATTRS: dict[str, dict[str, Any]] = {
    "retrieval": {
        "openinference.span.kind": "RETRIEVER",
        "citeline.chunks.chunk_id": ("returns-v4#e2", "shipping-v2#s1"),
        "citeline.chunks.doc_id": ("returns", "shipping"),
        "citeline.chunks.version": ("v4", "v2"),
        "citeline.chunks.score": (0.9, 0.5),
        "citeline.chunks.content_hash": (content_hash("Thirty days."), content_hash("Five days.")),
        "retrieval.documents.1.document.id": "shipping-v2#s1",
    },
    "context": {
        "openinference.span.kind": "RERANKER",
        "citeline.chunks.chunk_id": ("returns-v4#e2", "shipping-v2#s1"),
        "citeline.chunks.label": ("1", "2"),
        "reranker.output_documents.0.document.id": "returns-v4#e2",
    },
    "generation": {
        "openinference.span.kind": "LLM",
        "citeline.generation.answer": "Returns are accepted for 30 days [1].",
        "citeline.generation.format": "prose",
        "output.value": "Returns are accepted for 30 days [1].",
    },
    "resolution": {
        "openinference.span.kind": "CHAIN",
        "citeline.resolution.marker": ("1",),
        "citeline.resolution.chunk_id": ("returns-v4#e2",),
        "citeline.resolution.version": ("v4",),
        "citeline.resolution.uri": ("https://kb/r4",),
    },
    "render": {
        "openinference.span.kind": "CHAIN",
        "citeline.render.label": ("1",),
        "citeline.render.uri": ("https://kb/r4",),
        "citeline.render.title": ("Returns",),
        "citeline.render.chunk_id": ("",),
    },
}


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("stage", list(STAGE_DECORATORS))
def test_every_stage_on_every_function_kind(tracing: Tracing, stage: str, kind: str) -> None:
    fn = make_fn(stage, kind)
    kind_check = {
        "sync": lambda f: not inspect.iscoroutinefunction(f) and not inspect.isgeneratorfunction(f),
        "async": inspect.iscoroutinefunction,
        "generator": inspect.isgeneratorfunction,
        "async_generator": inspect.isasyncgenfunction,
    }[kind]
    assert kind_check(fn), "the wrapper must keep the function kind"
    assert fn.__name__ == "fn"

    with request(question="returns window?", case_id="c1"):
        result = call(fn, kind)

    expected_result = STREAM[stage] if kind in ("generator", "async_generator") else OUTPUT[stage]
    assert result == expected_result
    (req,) = tracing.by_stage("request")
    (span,) = tracing.by_stage(stage)
    assert span.parent is not None and span.parent.span_id == req.context.span_id
    attrs = dict(span.attributes or {})
    assert attrs["citeline.schema_version"] == "1"
    for key, value in EXPECTED_STAGE_ATTRS[stage].items():
        assert attrs[key] == value, key
    assert span.status.is_ok


def test_called_form_and_name_override(tracing: Tracing) -> None:
    @retrieval(name="vector-search")
    def search(query: str) -> list[dict[str, Any]]:
        return CHUNKS

    search("q")
    (span,) = tracing.by_stage("retrieval")
    assert span.name == "vector-search"


def test_retrieval_span_attributes_exhaustive(tracing: Tracing) -> None:
    """Pop every expected attribute, then nothing may be left."""

    @retrieval
    def search(query: str) -> list[dict[str, Any]]:
        return CHUNKS

    search("returns window?")
    (span,) = tracing.by_stage("retrieval")
    attrs = dict(span.attributes or {})
    expected: dict[str, Any] = {
        "openinference.span.kind": "RETRIEVER",
        "citeline.schema_version": "1",
        "citeline.stage": "retrieval",
        "input.value": "returns window?",
        "input.mime_type": "text/plain",
        "citeline.chunks.count": 2,
        "citeline.chunks.doc_id": ("returns", "shipping"),
        "citeline.chunks.chunk_id": ("returns-v4#e2", "shipping-v2#s1"),
        "citeline.chunks.version": ("v4", "v2"),
        "citeline.chunks.content_hash": (content_hash("Thirty days."), content_hash("Five days.")),
        "citeline.chunks.score": (0.9, 0.5),
        "citeline.chunks.uri": ("https://kb/r4", "https://kb/s2"),
        "citeline.chunks.title": ("Returns", "Shipping"),
        "citeline.chunks.text": ("Thirty days.", "Five days."),
    }
    for i, c in enumerate(CHUNKS):
        base = f"retrieval.documents.{i}.document."
        expected[base + "id"] = c["chunk_id"]
        expected[base + "score"] = c["score"]
        expected[base + "content"] = c["text"]
        expected[base + "metadata"] = (
            f'{{"doc_id":"{c["doc_id"]}","version":"{c["version"]}",'
            f'"content_hash":"{content_hash(c["text"])}","uri":"{c["uri"]}","title":"{c["title"]}"}}'
        )
    for key, value in expected.items():
        assert attrs.pop(key) == value, key
    assert attrs == {}


def test_generation_records_label_map_of_its_request(tracing: Tracing) -> None:
    @context_assembly
    def build(question: str) -> list[dict[str, Any]]:
        return [{**CHUNKS[1], "label": "A"}, {**CHUNKS[0], "label": "B"}]

    @generation
    def answer(prompt: Any) -> str:
        return "Thirty days [B]."

    with request(question="q"):
        answer(build("q"))
    (gen,) = tracing.by_stage("generation")
    attrs = gen.attributes or {}
    assert attrs["citeline.generation.context.label"] == ("A", "B")
    assert attrs["citeline.generation.context.chunk_id"] == ("shipping-v2#s1", "returns-v4#e2")
    assert attrs["citeline.generation.context.doc_id"] == ("shipping", "returns")
    assert attrs["citeline.generation.context.version"] == ("v2", "v4")


def test_structured_answer(tracing: Tracing) -> None:
    @generation
    def answer(prompt: str) -> dict[str, Any]:
        return {
            "text": "30 days. Free over $50.",
            "claims": [
                {"text": "30 days.", "evidence": [{"chunk_id": "returns-v4#e2", "quote": "Thirty days"}]},
                {"text": "Free over $50.", "evidence": [{"chunk_id": "a"}, {"chunk_id": "b", "quote": "x"}]},
            ],
            "abstained": False,
        }

    answer("prompt")
    (gen,) = tracing.by_stage("generation")
    attrs = gen.attributes or {}
    assert attrs["citeline.generation.format"] == "structured"
    assert attrs["citeline.generation.claims.text"] == ("30 days.", "Free over $50.")
    assert attrs["citeline.generation.evidence.claim_index"] == (0, 1, 1)
    assert attrs["citeline.generation.evidence.chunk_id"] == ("returns-v4#e2", "a", "b")
    assert attrs["citeline.generation.evidence.quote"] == ("Thirty days", "", "x")
    assert attrs["citeline.generation.abstained"] is False


def test_request_span_attributes(tracing: Tracing) -> None:
    import datetime as dt

    with request(
        question="Can I?",
        case_id="c9",
        principal={"id": "alice", "groups": ["staff", "eu"]},
        as_of=dt.date(2026, 8, 10),
    ):
        pass
    (req,) = tracing.by_stage("request")
    attrs = dict(req.attributes or {})
    expected = {
        "openinference.span.kind": "CHAIN",
        "citeline.schema_version": "1",
        "citeline.stage": "request",
        "citeline.request.question": "Can I?",
        "citeline.request.case_id": "c9",
        "citeline.request.principal.id": "alice",
        "citeline.request.principal.groups": ("staff", "eu"),
        "citeline.request.as_of": "2026-08-10",
        "citeline.request.service": "test-bot",
        "input.value": "Can I?",
        "input.mime_type": "text/plain",
        "user.id": "alice",
    }
    for key, value in expected.items():
        assert attrs.pop(key) == value, key
    assert attrs == {}


def test_request_as_decorator_reads_call_arguments(tracing: Tracing) -> None:
    @request
    def handle(question: str, *, case_id: str, principal: str) -> str:
        return "ok"

    @request(case_id="fixed")
    async def handle_async(question: str) -> str:
        return "ok"

    assert handle("Where is my order?", case_id="c1", principal="bob") == "ok"
    assert asyncio.run(handle_async("Second?")) == "ok"
    first, second = tracing.by_stage("request")
    assert (first.attributes or {})["citeline.request.question"] == "Where is my order?"
    assert (first.attributes or {})["citeline.request.case_id"] == "c1"
    assert (first.attributes or {})["citeline.request.principal.id"] == "bob"
    assert (second.attributes or {})["citeline.request.question"] == "Second?"
    assert (second.attributes or {})["citeline.request.case_id"] == "fixed"


def test_async_request_context_manager(tracing: Tracing) -> None:
    @retrieval
    async def search(query: str) -> list[dict[str, Any]]:
        return CHUNKS

    async def main() -> None:
        async with request(question="q"):
            await search("q")

    asyncio.run(main())
    (req,) = tracing.by_stage("request")
    (ret,) = tracing.by_stage("retrieval")
    assert ret.parent is not None and ret.parent.span_id == req.context.span_id


def test_methods_keep_signature_and_binding(tracing: Tracing) -> None:
    class Bot:
        @retrieval
        def search(self, query: str, k: int = 2) -> list[dict[str, Any]]:
            """Search the index."""
            return CHUNKS[:k]

    assert Bot.search.__doc__ == "Search the index."
    assert list(inspect.signature(Bot.search).parameters) == ["self", "query", "k"]
    assert inspect.signature(Bot.search) == inspect.signature(inspect.unwrap(Bot.search))
    assert Bot().search("q", k=1) == CHUNKS[:1]
    (span,) = tracing.by_stage("retrieval")
    assert (span.attributes or {})["citeline.chunks.chunk_id"] == ("returns-v4#e2",)
    assert (span.attributes or {})["input.value"] == "q"


def test_no_configuration_means_no_spans_and_plain_results() -> None:
    # no configure() and no global provider in this process state: a plain call
    from citeline.instrumentation import _config

    saved = (_config._settings.tracer, _config._settings.handle)
    _config._settings.tracer, _config._settings.handle = None, None
    try:

        @retrieval
        def search(query: str) -> list[dict[str, Any]]:
            return CHUNKS

        assert _config.current_tracer() is None
        assert search("q") is CHUNKS
    finally:
        _config._settings.tracer, _config._settings.handle = saved
