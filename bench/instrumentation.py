"""Instrumentation cost and trace-file throughput, each against its baseline, in one run.

    python bench/instrumentation.py [--quick]

1. One decorated retrieval call against a hand-written OpenTelemetry span
   carrying the same data (citeline arrays + OpenInference documents up to
   the span limit), for 20 and 200 chunks. Target: ratio <= 1.3.
2. The OTLP/JSON file exporter against the SDK's ConsoleSpanExporter writing
   to a file (its only file-style exporter). Target: >= 25k spans/s.
3. A burst of 2,000 six-span traces through the processor configure()
   installs, against the SDK's BatchSpanProcessor with default settings.
   Target: no span dropped.

Medians of several rounds; the machine is shared, so read ratios first.
"""

from __future__ import annotations

import argparse
import io
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from citeline.instrumentation import configure, retrieval
from citeline.instrumentation import schema as K
from citeline.instrumentation._files import OTLPJsonFileExporter, TraceFileProcessor
from citeline.instrumentation.chunks import content_hash
from citeline.instrumentation.otlp_json import dumps

LIMIT = 128


def make_chunks(n: int) -> list[dict[str, Any]]:
    return [
        {
            "doc_id": f"doc-{i // 4}",
            "chunk_id": f"doc-{i // 4}#c{i}",
            "version": "v3",
            "text": f"Chunk {i}: opened electronics may be returned within 30 days of delivery. " * 3,
            "score": 1.0 / (i + 1),
            "uri": f"https://kb.example.com/doc-{i // 4}/v3#c{i}",
            "title": f"Policy {i // 4}",
        }
        for i in range(n)
    ]


def hand_written(tracer: Any, chunks: list[dict[str, Any]]) -> Callable[[str], list[dict[str, Any]]]:
    """What a careful engineer would write by hand for the same span."""

    def search(query: str) -> list[dict[str, Any]]:
        with tracer.start_as_current_span(
            "search",
            attributes={
                K.OI_SPAN_KIND: "RETRIEVER",
                K.CL_SCHEMA: "1",
                K.CL_STAGE: "retrieval",
                K.OI_INPUT_VALUE: query,
                K.OI_INPUT_MIME: "text/plain",
            },
        ) as span:
            result = chunks
            hashes = [content_hash(c["text"]) for c in result]
            tail = {
                K.CL_CHUNK_COUNT: len(result),
                K.CL_CHUNK_DOC_ID: [c["doc_id"] for c in result],
                K.CL_CHUNK_ID: [c["chunk_id"] for c in result],
                K.CL_CHUNK_VERSION: [c["version"] for c in result],
                K.CL_CHUNK_HASH: hashes,
                K.CL_CHUNK_URI: [c["uri"] for c in result],
                K.CL_CHUNK_TITLE: [c["title"] for c in result],
                K.CL_CHUNK_SCORE: [c["score"] for c in result],
                K.CL_CHUNK_TEXT: [c["text"] for c in result],
            }
            fit = min(len(result), (LIMIT - 5 - len(tail) - 9) // 4)
            docs: dict[str, Any] = {}
            for i, (c, h) in enumerate(zip(result[:fit], hashes, strict=False)):
                base = f"retrieval.documents.{i}.document."
                docs[base + "id"] = c["chunk_id"]
                docs[base + "score"] = c["score"]
                docs[base + "metadata"] = dumps(
                    {
                        "doc_id": c["doc_id"],
                        "version": c["version"],
                        "content_hash": h,
                        "uri": c["uri"],
                        "title": c["title"],
                    }
                ).decode()
                docs[base + "content"] = c["text"]
            span.set_attributes({**docs, **tail})
            return result

    return search


def per_call_us(fn: Callable[[str], Any], calls: int, rounds: int) -> float:
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(calls):
            fn("can opened electronics be returned?")
        samples.append((time.perf_counter() - start) / calls * 1e6)
    return statistics.median(samples)


def bench_decorator(quick: bool) -> list[dict[str, Any]]:
    rows = []
    provider = TracerProvider()  # spans are created, filled and ended; no exporter cost in either
    tracer = provider.get_tracer("bench")
    handle = configure("bench", trace_dir=tempfile.mkdtemp(), tracer_provider=provider)
    handle.shutdown()  # keep the tracer, drop the file processor: measure the span work only
    from citeline.instrumentation import _config

    _config._settings.tracer = provider.get_tracer("citeline")
    _config._settings.max_attributes = LIMIT
    for n in (20, 200):
        chunks = make_chunks(n)

        @retrieval
        def search(query: str, chunks: list[dict[str, Any]] = chunks) -> list[dict[str, Any]]:
            return chunks

        manual = hand_written(tracer, chunks)
        calls = 300 if quick else 1500
        rounds = 5 if quick else 9
        per_call_us(search, 50, 1)  # warm up
        per_call_us(manual, 50, 1)
        dec, man = [], []
        for _ in range(rounds):  # interleave so both see the same machine noise
            dec.append(per_call_us(search, calls // 5, 1))
            man.append(per_call_us(manual, calls // 5, 1))
        d, m = statistics.median(dec), statistics.median(man)
        rows.append({"chunks": n, "decorated_us": d, "hand_written_us": m, "ratio": d / m})
    _config._settings.tracer = None
    return rows


def finished_spans(traces: int) -> list[ReadableSpan]:
    """Six-span traces shaped like the example app's, taken from memory."""
    from citeline.examples.policy_bot import PolicyBot, run_sample

    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    handle = configure("bench", trace_dir=tempfile.mkdtemp(), tracer_provider=provider)
    bot = PolicyBot()
    for _ in range((traces + 2) // 3):
        run_sample(bot)
    handle.shutdown()
    return list(memory.get_finished_spans())[: traces * 6]


def bench_exporters(spans: list[ReadableSpan], rounds: int) -> dict[str, float]:
    ours, console = [], []
    for _ in range(rounds):
        with tempfile.TemporaryDirectory() as tmp:
            exporter = OTLPJsonFileExporter(tmp, prefix="bench")
            start = time.perf_counter()
            for i in range(0, len(spans), 512):
                exporter.export(spans[i : i + 512])
            ours.append(len(spans) / (time.perf_counter() - start))
            exporter.shutdown()
            with open(Path(tmp) / "console.txt", "w") as out:
                sdk = ConsoleSpanExporter(out=out)
                start = time.perf_counter()
                for i in range(0, len(spans), 512):
                    sdk.export(spans[i : i + 512])
                console.append(len(spans) / (time.perf_counter() - start))
    return {
        "citeline_spans_per_s": statistics.median(ours),
        "console_spans_per_s": statistics.median(console),
    }


def burst(spans: list[ReadableSpan]) -> dict[str, int]:
    """Hand every span of 2,000 traces to each processor as fast as the app would end them."""
    out: dict[str, int] = {}
    with tempfile.TemporaryDirectory() as tmp:
        proc = TraceFileProcessor(OTLPJsonFileExporter(tmp, prefix="burst"))
        for s in spans:
            proc.on_end(s)
        proc.shutdown()
        written = 0
        for path in Path(tmp).glob("*.jsonl"):
            for line in path.read_bytes().split(b"\n"):
                if line:
                    req = json.loads(line)
                    written += sum(len(ss["spans"]) for rs in req["resourceSpans"] for ss in rs["scopeSpans"])
        out["citeline_written"] = written
        out["citeline_dropped"] = proc.dropped
    sink = io.StringIO()
    batch = BatchSpanProcessor(ConsoleSpanExporter(out=sink))
    for s in spans:
        batch.on_end(s)
    batch.shutdown()
    out["sdk_batch_written"] = sink.getvalue().count('"span_id"')
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds (CI smoke run)")
    args = parser.parse_args()

    print("1. decorated retrieval call vs hand-written span with the same data (median per call)")
    for row in bench_decorator(args.quick):
        verdict = "OK" if row["ratio"] <= 1.3 else "OVER TARGET"
        print(
            f"   {row['chunks']:>3} chunks: decorated {row['decorated_us']:7.1f} us, hand-written "
            f"{row['hand_written_us']:7.1f} us, ratio {row['ratio']:.2f}x (target <= 1.30x) {verdict}"
        )

    spans = finished_spans(2000)
    print(f"2. file exporter throughput over {len(spans)} example-app spans (median of rounds)")
    ex = bench_exporters(spans, 3 if args.quick else 7)
    print(
        f"   citeline OTLP/JSON lines: {ex['citeline_spans_per_s']:,.0f} spans/s "
        f"(target >= 25,000) {'OK' if ex['citeline_spans_per_s'] >= 25_000 else 'UNDER TARGET'}"
    )
    print(
        f"   SDK ConsoleSpanExporter to a file: {ex['console_spans_per_s']:,.0f} spans/s; "
        f"ratio {ex['citeline_spans_per_s'] / ex['console_spans_per_s']:.1f}x"
    )

    b = burst(spans)
    print(f"3. burst of 2,000 six-span traces ({len(spans)} spans)")
    print(
        f"   citeline TraceFileProcessor: {b['citeline_written']} written, {b['citeline_dropped']} dropped "
        f"{'OK' if b['citeline_dropped'] == 0 and b['citeline_written'] == len(spans) else 'LOST SPANS'}"
    )
    print(
        f"   SDK BatchSpanProcessor (defaults): {b['sdk_batch_written']} written, "
        f"{len(spans) - b['sdk_batch_written']} dropped"
    )


if __name__ == "__main__":
    main()
