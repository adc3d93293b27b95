"""Traces from OpenInference auto-instrumentation alone (no citeline decorators) still classify."""

from __future__ import annotations

import json
from pathlib import Path

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.trace import Tracer
from opentelemetry.util.types import AttributeValue

from citeline.analyzer.run.analyze import analyze
from citeline.analyzer.sources.prompt_context import NO_PROMPT
from citeline.examples.demo import gold_path
from citeline.instrumentation import OTLPJsonFileExporter, TraceFileProcessor


def _oi_trace(tracer: Tracer, answer: str, docs: list[str]) -> None:
    with tracer.start_as_current_span(
        "chain",
        attributes={
            "openinference.span.kind": "CHAIN",
            "input.value": "How much does  standard shipping cost?",
        },
    ):
        attrs: dict[str, AttributeValue] = {"openinference.span.kind": "RETRIEVER", "input.value": "shipping cost"}
        for i, doc in enumerate(docs):
            attrs[f"retrieval.documents.{i}.document.id"] = doc
            attrs[f"retrieval.documents.{i}.document.score"] = 1.0 - i / 10
        with tracer.start_as_current_span("retrieve", attributes=attrs):
            pass
        with tracer.start_as_current_span(
            "llm",
            attributes={
                "openinference.span.kind": "LLM",
                "output.value": answer,
            },
        ):
            pass


def test_openinference_only_traces_join_by_question_and_classify(tmp_path: Path) -> None:
    provider = TracerProvider()
    processor = TraceFileProcessor(OTLPJsonFileExporter(tmp_path / "t", prefix="oi"))
    provider.add_span_processor(processor)
    tracer = provider.get_tracer("openinference.instrumentation.demo")
    # documents listed out of order on purpose: N in the key decides the order
    _oi_trace(tracer, "Standard shipping costs $4.99.", ["shipping-v2#free-2", "shipping-v2#standard-1"])
    _oi_trace(tracer, "Standard shipping costs $4.99.", ["shipping-v2#free-2"])
    processor.shutdown()
    result = analyze(tmp_path / "s.duckdb", gold=gold_path(), traces=[tmp_path / "t"])
    assert result.skipped == 0
    rows = sorted(
        (r["case_id"], r["gold_claim_id"], r["bucket"], r["stage"], r["reason"]) for r in result.claims.to_dicts()
    )
    # these spans record no document text and no prompt: what reached the model cannot be
    # read, so the trace whose retrieval held the support is not_evaluable, naming the
    # decorator that would show it; the retrieval that missed it is still a retrieval miss
    assert rows == [
        ("shipping-cost", "cost", "not_evaluable", "context", "the context stage is " + NO_PROMPT),
        (
            "shipping-cost",
            "cost",
            "retrieval_miss",
            "retrieval",
            "no support bundle was fully retrieved (needs one of [shipping-v2#standard-1])",
        ),
    ]
    report = json.loads(json.dumps(result.to_json(), default=str))
    assert {c["case_id"] for c in report["cases"]} == {"shipping-cost"}
