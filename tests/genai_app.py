"""A help-desk RAG app on the real ``openai`` SDK and a real in-process Chroma collection, traced by
OpenTelemetry's own GenAI instrumentors (no OpenInference, no @generation):

* ``otel``: ``opentelemetry-instrumentation-openai-v2`` with the message content on the chat span
  (``OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental``,
  ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=span_only``), handed ``handle.provider``;
  the app's own search carries ``@retrieval`` and each question runs in ``request()``;
* ``openllmetry``: OpenLLMetry's ``opentelemetry-instrumentation-openai`` and
  ``opentelemetry-instrumentation-chromadb`` (the collection's hits as ``db.query.result`` span
  events), with ``request()`` only.

Unlike tests/openai_app.py, the instructions and the sources travel apart: the system message holds
the rules, the user message lists the sources as ``Source n:`` blocks before the question. No step
between retrieval and the chat call is traced: which chunks reached the model is read off the chat
span's input messages.

Only the model is scripted (a hosted LLM cannot run here): tests/openai_app.py's loopback
chat-completions server answers what the scenario says (plain, streamed or JSON). Chroma is given
the vectors (a hashed bag of words), so no embedding model is downloaded.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from typing import Any, cast

from opentelemetry.sdk.trace import TracerProvider

from citeline.instrumentation import request, retrieval
from tests.oi_apps import Forward, Scenario
from tests.openai_app import MODEL
from tests.openai_app import _embed as embed

PUBLIC = {"id": "carol", "groups": ["public"]}
RULES = "You answer help-desk questions from the sources given, citing each fact as [n] for Source n."
MODES = ("otel", "openllmetry")
#: what each mode's instrumentors read from the environment (set before they instrument)
ENV = {
    "otel": {
        "OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental",
        "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "span_only",
    },
    "openllmetry": {"TRACELOOP_TRACE_CONTENT": "true"},
}
_names = itertools.count()
_COLLECTIONS: dict[tuple[str, ...], Any] = {}


def _collection(docs: list[dict[str, Any]]) -> Any:
    """One Chroma collection per corpus, built once (the app's start-up), cosine distance."""
    import chromadb
    from chromadb.config import Settings

    key = tuple(d["chunk_id"] for d in docs)
    if key not in _COLLECTIONS:
        client = chromadb.EphemeralClient(settings=Settings(anonymized_telemetry=False))
        col = client.create_collection(
            f"helpdesk-{next(_names)}", embedding_function=None, metadata={"hnsw:space": "cosine"}
        )
        col.add(
            ids=[d["chunk_id"] for d in docs],
            embeddings=cast(Any, [embed(d["text"]) for d in docs]),  # chroma's stubs want numpy arrays
            documents=[d["text"] for d in docs],
            metadatas=[{"uri": d["uri"], "version": str(d.get("version", ""))} for d in docs],
        )
        _COLLECTIONS[key] = col
    return _COLLECTIONS[key]


class HelpDesk:
    """Chroma top 3 -> a filter -> the openai SDK, one question at a time."""

    def __init__(self, base_url: str, scenario: Scenario, *, mode: str, call: str = "plain") -> None:
        from openai import OpenAI

        self.client = OpenAI(base_url=base_url, api_key="sk-test-not-a-key", max_retries=0)
        self.scenario, self.call = scenario, call
        # no holiday page in this index (a superseded chunk ranking high would make every "cite
        # another chunk" scenario a freshness one), as in the OpenInference twin
        self.kb = _collection([c for c in scenario.corpus() if c["chunk_id"] != "returns-holiday#window"])
        self.search = retrieval(self._search) if mode == "otel" else self._search

    def _search(self, question: str) -> list[dict[str, Any]]:
        got = self.kb.query(query_embeddings=[embed(question)], n_results=3)
        return [
            {"chunk_id": cid, "text": text, "uri": meta["uri"], "version": meta["version"], "score": 1.0 - dist}
            for cid, text, meta, dist in zip(
                got["ids"][0], got["documents"][0], got["metadatas"][0], got["distances"][0], strict=True
            )
        ]

    def _messages(self, question: str, hits: list[dict[str, Any]]) -> list[dict[str, str]]:
        kept = [h for h in hits if self.scenario.keep(h["text"])]  # the step between retrieval and prompt
        sources = "\n\n".join(f"Source {i}: {h['text']}" for i, h in enumerate(kept, start=1))
        return [
            {"role": "system", "content": RULES},
            {"role": "user", "content": f"Sources:\n\n{sources}\n\nQuestion: {question}"},
        ]

    def _chat(self, messages: list[dict[str, str]]) -> str:
        sc = self.scenario
        script = {"question": sc.question, "answer": sc.answer, "bucket": sc.bucket, "stage": sc.stage}
        extra: dict[str, Any] = {"extra_headers": {"X-Script": json.dumps(script)}}
        if self.call == "json":
            extra["response_format"] = {"type": "json_object"}
        if self.call == "stream":
            chat: Any = self.client.chat.completions  # plain dict messages: the SDK's TypedDicts are not needed
            pieces = chat.create(model=MODEL, messages=messages, stream=True, **extra)
            return "".join(p.choices[0].delta.content or "" for p in pieces if p.choices)
        reply = cast(Any, self.client.chat.completions).create(model=MODEL, messages=messages, **extra)
        return str(reply.choices[0].message.content)

    def ask(self) -> str:
        """Answer the scenario's question; the request's trace id."""
        from opentelemetry import trace

        q = self.scenario.question
        with request(question=q, principal=PUBLIC, as_of="2026-08-10"):
            trace_id = f"{trace.get_current_span().get_span_context().trace_id:032x}"
            self._chat(self._messages(q, self.search(q)))
        return trace_id


@contextmanager
def instrumented(mode: str, provider: Any) -> Iterator[None]:
    """The mode's instrumentors on, their spans to ``provider`` (``handle.provider``). The caller sets
    ``ENV[mode]`` first.

    openai-v2 is handed ``provider`` itself and taken off afterwards. OpenLLMetry's instrumentors are
    put on once per process, as an app does at start-up (taken off and put on again, its OpenAI one
    wraps a stream twice and records every piece twice), and their spans forwarded to ``provider``
    for the run under way."""
    if mode == "otel":
        from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor

        v2 = OpenAIInstrumentor()  # type: ignore[no-untyped-call]
        v2.instrument(tracer_provider=provider)
        try:
            yield
        finally:
            v2.uninstrument()
        return
    _llmetry_on()
    _LLMETRY_FORWARD.target = provider
    try:
        yield
    finally:
        _LLMETRY_FORWARD.target = None


# a forwarder of its own (not tests/oi_apps.py's instance: the OpenInference instrumentors of other
# tests stay on in the process and must not join these runs)
_LLMETRY_FORWARD = Forward()


@cache
def _llmetry_on() -> None:
    from opentelemetry.instrumentation.chromadb import ChromaInstrumentor
    from opentelemetry.instrumentation.openai import OpenAIInstrumentor

    shared = TracerProvider()
    shared.add_span_processor(_LLMETRY_FORWARD)
    OpenAIInstrumentor().instrument(tracer_provider=shared)  # type: ignore[no-untyped-call]
    ChromaInstrumentor().instrument(tracer_provider=shared)  # type: ignore[no-untyped-call]
