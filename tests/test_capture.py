"""capture() takes over the app's tracer provider for its block and gives it back exactly as it was.

The app here is conftest's ``tracing``: ``configure(tracer_provider=...)`` over a provider whose
in-memory exporter stands for the app's exporters (trace files too). Instrumentor spans are made
by tracers the app took from that provider before the capture, as an instrumentor does at
start-up, and by OpenInference's own ``OITracer`` (which draws ids of its own from an SDK
``RandomIdGenerator``). The global provider wiring runs in a process of its own in
tests/test_pytest_zero_code.py (OpenTelemetry sets the global once per process).
"""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.id_generator import RandomIdGenerator

from citeline.analyzer.run.analyze import analyze
from citeline.analyzer.store import connect
from citeline.analyzer.testing.captured import CapturedStore
from citeline.examples.demo import gold_path
from citeline.instrumentation import configure, request
from citeline.instrumentation.testing import capture
from tests.conftest import Tracing
from tests.extras import needs
from tests.oi_apps import SCENARIOS


def _ids(spans: list[ReadableSpan]) -> list[tuple[str, int, int, int | None]]:
    """(name, trace id, span id, parent span id) in the order the spans ended."""
    return [
        (s.name, s.context.trace_id, s.context.span_id, s.parent.span_id if s.parent else None)  # type: ignore[union-attr]
        for s in spans
    ]


def test_instrumentor_spans_get_the_capture_ids_and_the_app_gets_none_of_them_then_every_later_one(
    tracing: Tracing,
) -> None:
    provider = tracing.handle.provider
    processors = provider._active_span_processor._span_processors
    generator = provider.id_generator
    tracer = provider.get_tracer("openinference.instrumentation.langchain")  # taken at start-up
    before = tracer.start_span("started before the test")
    with capture() as cap:
        assert cap.providers == [provider]
        with request(question="How fast are refunds issued?"), tracer.start_as_current_span("ChatModel"):
            pass
        with tracer.start_as_current_span("a root of its own"):
            pass
        before.end()  # the app's span: ends where it always did
        open_at_the_end = tracer.start_span("still open when the test ends")
        spans = cap.spans()
    assert _ids(spans) == [("ChatModel", 1, 2, 1), ("request", 1, 1, None), ("a root of its own", 2, 3, None)]
    assert [s.name for s in tracing.spans()] == ["started before the test"]
    assert tracing.spans()[0].context.span_id > 2**32  # the app's own random ids
    # the provider is exactly as it was: the same processors, the same id generator of the same class
    assert provider._active_span_processor._span_processors == processors
    assert provider.id_generator is generator
    assert type(generator) is RandomIdGenerator
    assert vars(generator) == {}
    open_at_the_end.end()  # dropped: neither the capture's nor the app's
    with tracer.start_as_current_span("after the test"):
        pass
    assert [s.name for s in tracing.spans()] == ["started before the test", "after the test"]
    assert len(cap.spans()) == 3
    assert [s["name"] for s in tracing.file_spans()] == ["started before the test", "after the test"]


def test_spans_started_in_the_capture_belong_to_it_on_any_thread_or_task(tracing: Tracing) -> None:
    tracer = tracing.handle.provider.get_tracer("opentelemetry.instrumentation.openai_v2")

    def call(name: str) -> None:
        with tracer.start_as_current_span(name):
            pass

    async def task(name: str) -> None:
        with tracer.start_as_current_span(name):
            await asyncio.sleep(0)

    async def both() -> None:
        await asyncio.gather(task("task a"), task("task b"))

    with capture() as cap:
        with request(question="q"):
            outside = threading.Thread(target=call, args=("thread",))
            outside.start()
            outside.join()
            with ThreadPoolExecutor(2) as pool:
                list(pool.map(call, ["pool 1", "pool 2"]))
            asyncio.run(both())
        # started in the test, ended on another thread while it still runs
        span = tracer.start_span("handed to a thread")
        ender = threading.Thread(target=span.end)
        ender.start()
        ender.join()
        names = sorted(s.name for s in cap.spans())
    assert names == ["handed to a thread", "pool 1", "pool 2", "request", "task a", "task b", "thread"]
    assert tracing.spans() == []


def test_a_capture_inside_a_capture_takes_over_until_it_ends(tracing: Tracing) -> None:
    # the perturbation harness runs its own capture inside the fixture's (citeline.perturb(...))
    tracer = tracing.handle.provider.get_tracer("openinference.instrumentation.openai")
    with capture() as outer:
        with tracer.start_as_current_span("outer 1"):
            pass
        with capture() as inner, tracer.start_as_current_span("inner"):
            pass
        with tracer.start_as_current_span("outer 2"):
            pass
    assert _ids(inner.spans()) == [("inner", 1, 1, None)]
    assert _ids(outer.spans()) == [("outer 1", 1, 1, None), ("outer 2", 2, 2, None)]
    assert tracing.spans() == []


def test_openinference_tracer_draws_the_capture_ids_too(tracing: Tracing) -> None:
    needs("openinference.instrumentation", "OpenInference's tracer")
    from openinference.instrumentation import OITracer, TraceConfig

    tracer = OITracer(tracing.handle.provider.get_tracer("openinference.instrumentation.langchain"), TraceConfig())
    with capture() as cap, request(question="q"), tracer.start_as_current_span("RunnableSequence"):
        assert trace.get_current_span().get_span_context().span_id == 2
    assert _ids(cap.spans()) == [("RunnableSequence", 1, 2, 1), ("request", 1, 1, None)]
    assert tracing.spans() == []


@pytest.mark.slow  # the openai SDK, Qdrant and the GenAI instrumentor imported, two analyses: ~4 s
def test_captured_genai_spans_and_log_records_are_analyzed_as_the_trace_files_are(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # OpenTelemetry's GenAI instrumentor for the openai SDK, handed handle.provider and
    # handle.logger_provider, content as events: the chat span's content travels as a log record,
    # which must be captured with it (and kept from the app's log files). tests/test_pytest_zero_code.py
    # has the content on the span.
    content = "event_only"
    needs("openai", "the OpenAI SDK the app calls")
    needs("qdrant_client", "the app's in-process vector store")
    needs("opentelemetry.instrumentation.openai_v2", "OpenTelemetry's GenAI instrumentor for the OpenAI SDK")
    from tests.openai_app import App, ChatServer
    from tests.test_genai_logs import genai_instrumented

    scenarios = ["ok", "grounding", "context_drop"]
    handle = configure("genai-app", trace_dir=tmp_path / "traces", tracer_provider=TracerProvider())
    try:
        with ChatServer() as server, genai_instrumented(handle, content, monkeypatch):
            with capture() as cap:
                for name in scenarios:
                    App(server.url, SCENARIOS[name], decorators=frozenset({"retrieval"})).ask()
                spans, logs = cap.spans(), cap.log_records()
            handle.force_flush()
            assert list((tmp_path / "traces").glob("*.jsonl")) == []  # the app's exporters got nothing
            for name in scenarios:  # the same requests, to the app's trace files
                App(server.url, SCENARIOS[name], decorators=frozenset({"retrieval"})).ask()
    finally:
        handle.shutdown()
    assert len(logs) == 3  # one record per chat call

    def rows(result: Any, con: Any) -> list[tuple[Any, ...]]:
        names = dict(con.execute("SELECT span_id, name FROM spans").fetchall())
        return sorted(
            (r["case_id"], r["gold_claim_id"], r["bucket"], r["stage"], r["reason"], names.get(r["span_id"]))
            for r in result.claims.to_dicts()
        )

    store = CapturedStore(tmp_path / "captured")
    try:
        captured = rows(store.analyze(spans, gold_path(), logs=logs), store.con)
    finally:
        store.close()
    con = connect(":memory:")
    try:
        from_files = rows(analyze(":memory:", gold=gold_path(), traces=[tmp_path / "traces"], con=con), con)
    finally:
        con.close()
    assert captured == from_files
    assert [(r[0], r[2], r[3], r[5]) for r in captured] == [
        ("refund-speed", "context_drop", "context", "chat scripted-model"),
        ("refund-speed", "grounding", "generation", "chat scripted-model"),
        ("refund-speed", "ok", None, None),
    ]


class _FrozenIds(RandomIdGenerator):
    """An app's id generator that takes no attributes."""

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"{name}: frozen")


def test_an_id_generator_that_takes_no_attributes_keeps_its_ids_and_its_spans_are_still_captured(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    app = InMemorySpanExporter()
    provider = TracerProvider(id_generator=_FrozenIds())
    provider.add_span_processor(SimpleSpanProcessor(app))
    handle = configure("frozen-app", trace_dir=tmp_path / "traces", tracer_provider=provider, record_logs=False)
    tracer = provider.get_tracer("openinference.instrumentation.openai")
    try:
        with capture() as cap, tracer.start_as_current_span("ChatCompletion"):
            pass
    finally:
        handle.shutdown()
    [span] = cap.spans()
    assert span.context is not None and span.context.span_id > 2**32  # its own ids
    assert app.get_finished_spans() == ()
    assert type(provider.id_generator) is _FrozenIds
    assert caplog.messages == [
        "citeline: the tracer provider's id generator (_FrozenIds) cannot lend the capture's ids: spans made on "
        "it in a test are captured with ids of its own"
    ]
