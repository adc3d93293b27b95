"""annotate never fails the run on one span: documents only where Phoenix holds them, refusals named.

A real ``phoenix serve``: the app retrieves more chunks than its provider's attribute limit leaves
OpenInference documents for, and exports over OTLP; annotate then writes a document annotation
only for the positions Phoenix holds (before: Phoenix answered 422 "Document position N is out of
bounds" and the whole annotate run failed).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import SpanLimits, TracerProvider

from citeline.analyzer.cli.main import main
from citeline.analyzer.run.analyze import analyze
from citeline.instrumentation import configure, context_assembly, generation, request, retrieval
from tests.phoenix_server import PhoenixServer, fetch_spans, wait_for_spans

pytestmark = pytest.mark.integration
PROJECT = "citeline-annotate-limits"
N = 30  # chunks retrieved per request: more than the attribute limit leaves documents for
CORPUS = [
    {"chunk_id": f"c{i}", "doc_id": "d", "version": "v1", "text": f"Fact number {i} is {i * 7}."} for i in range(N)
]
GOLD = (
    "corpus:\n"
    + "".join(
        f"  - {{chunk_id: c{i}, doc_id: d, version: v1, text: 'Fact number {i} is {i * 7}.'}}\n" for i in range(N)
    )
    + (
        "cases:\n"
        "  - case_id: f3\n    question: What is fact 3?\n"
        "    claims: [{claim_id: v, text: Fact number 3 is 21., support: [[c3]]}]\n"
    )
)


@retrieval
def _search(q: str) -> list[dict[str, Any]]:
    return CORPUS


@context_assembly
def _assemble(q: str, hits: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return hits


@generation
def _answer(ctx: Any) -> str:
    return "Fact number 3 is 22 [4]."  # wrong number: a failing claim to annotate


def test_documents_past_what_phoenix_holds_are_counted_not_sent(
    phoenix: PhoenixServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    provider = TracerProvider(
        resource=Resource.create({"service.name": "bot", "openinference.project.name": PROJECT}),
        span_limits=SpanLimits(max_span_attributes=64),
    )
    handle = configure(
        "bot", otlp_endpoint=f"{phoenix.url}/v1/traces", trace_dir=tmp_path / "t", tracer_provider=provider
    )
    try:
        with request(question="What is fact 3?", case_id="f3"):
            _answer(_assemble("q", _search("q")))
    finally:
        handle.shutdown()
    spans = wait_for_spans(phoenix.url, PROJECT, 4)
    [retr] = [s for s in spans if s["attributes"].get("citeline.stage") == "retrieval"]
    held = sum(1 for k in retr["attributes"] if k.startswith("retrieval.documents.") and k.endswith(".document.id"))
    assert 0 < held < N
    (tmp_path / "gold.yaml").write_text(GOLD)
    db = tmp_path / "s.duckdb"
    result = analyze(db, gold=tmp_path / "gold.yaml", traces=[tmp_path / "t"])
    failing = [c for c in result.claims.to_dicts() if c["bucket"] != "ok"]
    assert failing
    capsys.readouterr()
    assert main(["annotate", "--phoenix", phoenix.url, "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert f"run {result.run_id}: {len(failing)} annotation(s) named 'citeline' written" in out
    assert f"run {result.run_id}: {held} retrieved document(s) marked support or not" in out
    assert f"run {result.run_id}: {N - held} retrieved chunk(s) have no OpenInference document on their span" in out
    assert len(fetch_spans(phoenix.url, PROJECT)) == 4
