"""The example app exports over real OTLP/HTTP to a real Phoenix; spans are read back via its API."""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider

from citeline.examples.policy_bot import SAMPLE, PolicyBot, run_sample
from citeline.instrumentation import configure
from tests.phoenix_server import PhoenixServer, wait_for_spans

pytestmark = pytest.mark.integration


def test_each_stage_reaches_phoenix_with_kind_and_chunk_ids(phoenix: PhoenixServer) -> None:
    project = "citeline-export-test"
    provider = TracerProvider(
        resource=Resource.create({"service.name": "policy-bot", "openinference.project.name": project})
    )
    handle = configure("policy-bot", otlp_endpoint=f"{phoenix.url}/v1/traces", tracer_provider=provider)
    try:
        run_sample(PolicyBot())
    finally:
        handle.shutdown()

    spans = wait_for_spans(phoenix.url, project, 6 * len(SAMPLE))
    assert len(spans) == 6 * len(SAMPLE)
    by_trace: dict[str, dict[str, dict[str, Any]]] = {}
    for s in spans:
        by_trace.setdefault(s["context"]["trace_id"], {})[s["attributes"]["citeline.stage"]] = s
    assert len(by_trace) == len(SAMPLE)

    kinds = {
        "request": "CHAIN",
        "retrieval": "RETRIEVER",
        "context": "RERANKER",
        "generation": "LLM",
        "resolution": "CHAIN",
        "render": "CHAIN",
    }
    for stages in by_trace.values():
        assert set(stages) == set(kinds)
        for stage, kind in kinds.items():
            assert stages[stage]["span_kind"] == kind, stage
        root = stages["request"]["context"]["span_id"]
        for stage in ("retrieval", "context", "generation", "resolution", "render"):
            assert stages[stage]["parent_id"] == root

    case = {s["request"]["attributes"]["citeline.request.case_id"]: s for s in by_trace.values()}
    returns = case["returns-45d"]
    retrieved = returns["retrieval"]["attributes"]["citeline.chunks.chunk_id"]
    assert "returns-v4#eligibility-2" in retrieved
    assert returns["retrieval"]["attributes"]["retrieval.documents.0.document.id"] == retrieved[0]
    ctx = returns["context"]["attributes"]
    assert ctx["citeline.chunks.chunk_id"] == retrieved[:4]
    assert ctx["citeline.chunks.label"] == ["1", "2", "3", "4"]
    gen = returns["generation"]["attributes"]
    label = str(retrieved.index("returns-v4#eligibility-2") + 1)
    assert gen["citeline.generation.answer"].endswith(f"30 days of delivery [{label}].")
    assert gen["citeline.generation.context.chunk_id"] == retrieved[:4]
    res = returns["resolution"]["attributes"]
    assert res["citeline.resolution.marker"] == [label]
    assert res["citeline.resolution.chunk_id"] == ["returns-v4#eligibility-2"]
    ren = returns["render"]["attributes"]
    assert ren["citeline.render.uri"] == ["https://kb.example.com/returns/v4#eligibility-2"]
    assert case["warranty-water"]["generation"]["attributes"]["citeline.generation.evidence.chunk_id"] == [
        "warranty-v1#exclusions-2"
    ]
