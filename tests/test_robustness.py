"""Concurrency, failures, span limits, exporters and the host app's safety."""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from citeline.examples.policy_bot import SAMPLE, PolicyBot, run_sample
from citeline.instrumentation import (
    configure,
    context_assembly,
    generation,
    request,
    retrieval,
)
from citeline.instrumentation.chunks import content_hash
from tests.conftest import Tracing, attr_str, attr_strs, make_tracing, read_trace_files


def _chunks(prefix: str, n: int) -> list[dict[str, Any]]:
    return [
        {
            "doc_id": f"{prefix}-doc",
            "chunk_id": f"{prefix}#{i}",
            "version": "v1",
            "text": f"{prefix} text {i}",
        }
        for i in range(n)
    ]


@context_assembly
def _assemble(question: str, chunks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return chunks


@generation
def _generate(prompt: Any, delay: float) -> str:
    time.sleep(delay)
    return "answer [1]"


@generation
async def _agenerate(prompt: Any) -> str:
    await asyncio.sleep(0.01)
    return "answer [1]"


def _label_maps(tracing: Tracing) -> dict[str, tuple[str, ...]]:
    """question -> chunk ids of the label map recorded on that request's generation span."""
    spans = tracing.spans()
    questions = {
        s.context.span_id: attr_str(s, "citeline.request.question")
        for s in spans
        if (s.attributes or {}).get("citeline.stage") == "request"
    }
    out = {}
    for s in spans:
        attrs = s.attributes or {}
        if attrs.get("citeline.stage") == "generation":
            assert s.parent is not None
            out[questions[s.parent.span_id]] = attr_strs(s, "citeline.generation.context.chunk_id")
    return out


def test_concurrent_requests_in_threads_keep_their_label_maps(tracing: Tracing) -> None:
    def handle(i: int) -> None:
        q = f"q{i}"
        with request(question=q):
            prompt = _assemble(q, _chunks(q, 3))
            _generate(prompt, delay=0.005 * (i % 3))

    threads = [threading.Thread(target=handle, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    maps = _label_maps(tracing)
    assert maps == {f"q{i}": (f"q{i}#0", f"q{i}#1", f"q{i}#2") for i in range(16)}


def test_concurrent_requests_in_asyncio_gather_keep_their_label_maps(tracing: Tracing) -> None:
    async def handle(i: int) -> None:
        q = f"a{i}"
        async with request(question=q):
            prompt = _assemble(q, _chunks(q, 2))
            await asyncio.sleep(0.001 * (16 - i))
            await _agenerate(prompt)

    async def main() -> None:
        await asyncio.gather(*(handle(i) for i in range(16)))

    asyncio.run(main())
    assert _label_maps(tracing) == {f"a{i}": (f"a{i}#0", f"a{i}#1") for i in range(16)}


def test_raising_adapter_is_swallowed_and_logged_once(tracing: Tracing, caplog: pytest.LogCaptureFixture) -> None:
    def broken(value: Any) -> list[Any]:
        raise KeyError("no ids here")

    @retrieval(to_chunks=broken)
    def search(query: str) -> list[str]:
        return ["opaque"]

    with caplog.at_level(logging.WARNING, logger="citeline"):
        assert search("q") == ["opaque"]
        assert search("q") == ["opaque"]
    spans = tracing.by_stage("retrieval")
    assert len(spans) == 2
    for span in spans:
        attrs = span.attributes or {}
        assert attrs["citeline.adapter_error"] == "KeyError: 'no ids here'"
        assert "citeline.chunks.chunk_id" not in attrs
    warnings = [r for r in caplog.records if r.name == "citeline" and r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "to_chunks hook" in warnings[0].getMessage()


def test_unreadable_return_value_never_breaks_the_app(tracing: Tracing, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CITELINE_STRICT", "0")  # behave as in production for this test

    sentinel = object()

    @retrieval
    def search(query: str) -> object:
        return sentinel

    assert search("q") is sentinel
    (span,) = tracing.by_stage("retrieval")
    assert attr_str(span, "citeline.adapter_error").startswith("TypeError: cannot read a chunk")


def test_host_exception_propagates_unchanged_and_is_recorded(tracing: Tracing) -> None:
    class AppError(Exception):
        pass

    err = AppError("index offline")

    @retrieval
    def search(query: str) -> list[Any]:
        raise err

    @generation
    async def answer(prompt: str) -> str:
        raise err

    with pytest.raises(AppError) as info:
        search("q")
    assert info.value is err
    with pytest.raises(AppError) as info2:
        asyncio.run(answer("p"))
    assert info2.value is err
    for span in tracing.spans():
        assert span.status.status_code.name == "ERROR"
        assert span.status.description == "AppError: index offline"
        (event,) = span.events
        assert event.name == "exception"
        exception_type = (event.attributes or {})["exception.type"]
        assert isinstance(exception_type, str) and exception_type.endswith("AppError")


def test_streaming_generation_abandoned_or_raising_records_what_was_produced(tracing: Tracing) -> None:
    @generation
    def stream(prompt: str) -> Any:
        yield "Thirty "
        yield "days "
        yield "[1]."

    @generation
    async def broken_stream(prompt: str) -> Any:
        yield "Thirty "
        raise RuntimeError("model hung up")

    gen = stream("p")
    assert next(gen) == "Thirty "
    gen.close()  # the client went away

    got: list[str] = []

    async def consume() -> None:
        async for piece in broken_stream("p"):
            got.append(piece)

    with pytest.raises(RuntimeError, match="model hung up"):
        asyncio.run(consume())
    assert got == ["Thirty "]
    abandoned, failed = tracing.by_stage("generation")
    assert (abandoned.attributes or {})["citeline.generation.answer"] == "Thirty "
    assert abandoned.status.is_ok
    assert failed.status.status_code.name == "ERROR"
    assert (failed.attributes or {}).get("citeline.generation.answer") is None


def test_two_hundred_chunk_retrieval_arrives_whole_in_the_trace_file(tracing: Tracing) -> None:
    chunks = _chunks("big", 200)

    @retrieval
    def search(query: str) -> list[dict[str, Any]]:
        return chunks

    with request(question="big"):
        search("big")
    spans = tracing.file_spans()
    (span,) = [s for s in spans if s["attributes"].get("citeline.stage") == "retrieval"]
    attrs = span["attributes"]
    assert "droppedAttributesCount" not in span
    assert attrs["openinference.span.kind"] == "RETRIEVER"
    assert attrs["citeline.chunks.count"] == 200
    assert attrs["citeline.chunks.chunk_id"] == [f"big#{i}" for i in range(200)]
    assert attrs["citeline.chunks.content_hash"] == [content_hash(f"big text {i}") for i in range(200)]
    assert len(attrs) <= 128
    # as many OpenInference documents as fit, top-ranked first, the rest counted
    shown = sum(1 for k in attrs if k.endswith(".document.id"))
    assert shown > 0
    assert attrs["retrieval.documents.0.document.id"] == "big#0"
    assert attrs["citeline.openinference.documents_omitted"] == 200 - shown


def test_span_limit_of_the_provider_is_respected(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT", "40")
    t = make_tracing(tmp_path)
    try:

        @retrieval
        def search(query: str) -> list[dict[str, Any]]:
            return _chunks("lim", 50)

        search("q")
        (span,) = t.by_stage("retrieval")
        assert span.dropped_attributes == 0
        assert (span.attributes or {})["citeline.chunks.count"] == 50
        assert (span.attributes or {})["openinference.span.kind"] == "RETRIEVER"
    finally:
        t.handle.shutdown()


def test_record_content_false_keeps_chunk_text_out(tmp_path: Path) -> None:
    t = make_tracing(tmp_path, record_content=False)
    try:
        bot = PolicyBot()
        run_sample(bot)
        t.handle.force_flush()
        raw = "".join(p.read_text() for p in t.trace_dir.glob("*.jsonl"))
        assert raw
        for chunk in bot.corpus:
            assert chunk.text not in raw, chunk.chunk_id
        retrievals = [s for s in read_trace_files(t.trace_dir) if s["attributes"]["citeline.stage"] == "retrieval"]
        assert len(retrievals) == len(SAMPLE)
        for span in retrievals:
            hashes = span["attributes"]["citeline.chunks.content_hash"]
            assert hashes and all(len(h) == 16 for h in hashes)
            assert "citeline.chunks.text" not in span["attributes"]
    finally:
        t.handle.shutdown()


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # nothing listens once the socket closes


def test_otlp_export_to_a_closed_port_costs_the_app_nothing(tmp_path: Path) -> None:
    from opentelemetry.sdk.trace import TracerProvider

    provider = TracerProvider()
    handle = configure(
        "test-bot",
        otlp_endpoint=f"http://127.0.0.1:{_closed_port()}/v1/traces",
        tracer_provider=provider,
        export_timeout=1.0,
    )
    try:
        bot = PolicyBot()
        start = time.perf_counter()
        for _ in range(20):
            run_sample(bot)
        elapsed = time.perf_counter() - start
        assert elapsed < 2.0, f"60 requests took {elapsed:.2f}s with the exporter down"
    finally:
        start = time.perf_counter()
        handle.shutdown()
        assert time.perf_counter() - start < 15


JOIN_SCRIPT = textwrap.dedent(
    """
    import json, sys
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from citeline.instrumentation import configure, retrieval, request

    memory = InMemorySpanExporter()
    theirs = TracerProvider()
    theirs.add_span_processor(SimpleSpanProcessor(memory))
    trace.set_tracer_provider(theirs)
    app_tracer = trace.get_tracer("the-app")

    handle = configure(service_name="joined", trace_dir=sys.argv[1])

    @retrieval
    def search(q):
        return [{"doc_id": "d", "chunk_id": "d#1", "text": "t"}]

    with app_tracer.start_as_current_span("http GET /ask"):
        with request(question="q"):
            search("q")
    handle.shutdown()
    print(json.dumps({
        "same_provider": trace.get_tracer_provider() is theirs and handle.provider is theirs,
        "owns": handle.owns_provider,
        "memory": sorted(s.name for s in memory.get_finished_spans()),
    }))
    """
)


def test_configure_joins_an_existing_global_provider(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-c", JOIN_SCRIPT, str(tmp_path / "t")],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    result = json.loads(out.stdout)
    assert result == {"same_provider": True, "owns": False, "memory": ["http GET /ask", "request", "search"]}
    spans = read_trace_files(tmp_path / "t")
    names = {s["name"]: s for s in spans}
    assert set(names) == {"http GET /ask", "request", "search"}
    # the request span hangs under the app's own span: one trace
    assert names["request"]["parentSpanId"] == names["http GET /ask"]["spanId"]
    assert len({s["traceId"] for s in spans}) == 1


ENV_SCRIPT = textwrap.dedent(
    """
    import json
    from opentelemetry import trace
    from citeline.instrumentation import configure
    handle = configure()
    print(json.dumps({
        "endpoint": handle.otlp_endpoint,
        "trace_dir": handle.trace_dir and str(handle.trace_dir),
        "service": trace.get_tracer_provider().resource.attributes["service.name"],
        "team": trace.get_tracer_provider().resource.attributes.get("team"),
    }))
    handle.shutdown()
    """
)


def test_configure_honours_standard_otel_variables(tmp_path: Path) -> None:
    env = {
        "PATH": "/usr/bin:/bin",
        "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9/",
        "OTEL_SERVICE_NAME": "from-env",
        "OTEL_RESOURCE_ATTRIBUTES": "team=search",
    }
    out = subprocess.run(
        [sys.executable, "-c", ENV_SCRIPT],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        env=env,
        cwd=tmp_path,
    )
    assert json.loads(out.stdout) == {
        "endpoint": "http://127.0.0.1:9/v1/traces",
        "trace_dir": None,
        "service": "from-env",
        "team": "search",
    }


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"otlp_endpoint": "localhost:6006"}, "give a full OTLP/HTTP traces URL"),
        ({"service_name": 5}, "must be a string"),
        ({"max_file_bytes": 0}, "positive number of bytes"),
    ],
)
def test_configure_fails_loudly_on_bad_arguments(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises((ValueError, TypeError), match=message):
        configure(**kwargs)


def test_trace_dir_that_is_a_file_is_rejected(tmp_path: Path) -> None:
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(ValueError, match="is a file, not a folder"):
        configure("x", trace_dir=f)


def test_trace_files_rotate_and_every_line_is_whole(tmp_path: Path) -> None:
    t = make_tracing(tmp_path, max_file_bytes=20_000)
    try:
        bot = PolicyBot()
        for _ in range(10):
            run_sample(bot)
        t.handle.force_flush()
        files = sorted(t.trace_dir.glob("*.jsonl"))
        assert len(files) > 1
        assert t.handle.trace_files == files
        traces = set()
        for path in files:
            for line in path.read_bytes().split(b"\n")[:-1]:
                for rs in json.loads(line)["resourceSpans"]:
                    for ss in rs["scopeSpans"]:
                        ids = {s["traceId"] for s in ss["spans"]}
                        assert len(ids) == 1, "one trace per line"
                        traces |= ids
        assert len(traces) == 30
        assert len(read_trace_files(t.trace_dir)) == 30 * 6
    finally:
        t.handle.shutdown()


def test_trace_file_is_readable_while_open(tracing: Tracing) -> None:
    bot = PolicyBot()
    run_sample(bot)
    tracing.handle.force_flush()
    first = read_trace_files(tracing.trace_dir)
    run_sample(bot)
    tracing.handle.force_flush()
    second = read_trace_files(tracing.trace_dir)
    assert len(first) == 18
    assert len(second) == 36
    assert len(list(tracing.trace_dir.glob("*.jsonl"))) == 1


def test_streaming_example_app_records_the_assembled_answer(tracing: Tracing) -> None:
    answers = run_sample(PolicyBot(), stream=True)
    gens = tracing.by_stage("generation")
    assert [(g.attributes or {})["citeline.generation.answer"] for g in gens] == answers
