"""An app traced by OpenTelemetry's GenAI instrumentors lands every claim in its bucket, stage and span.

tests/genai_app.py: the real ``openai`` SDK and a real in-process Chroma collection; only the
model's answers are scripted (a loopback chat-completions server stands in for the hosted LLM).
Mode ``otel``: opentelemetry-instrumentation-openai-v2 with the content on the chat span, plus
``@retrieval`` and ``request()``. Mode ``openllmetry``: OpenLLMetry's OpenAI and Chroma
instrumentors, ``request()`` only (the hits are the collection query's ``db.query.result`` events).
Neither traces a context step: the context is read off the chat span's input messages, and the
chat span is the generation. The same scenarios as the OpenInference twin (tests/test_openai_app.py)
give the same buckets.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import pytest

from citeline.analyzer.run.analyze import analyze
from citeline.examples.demo import gold_path
from citeline.instrumentation import configure
from tests.genai_app import ENV, HelpDesk, instrumented
from tests.oi_apps import SCENARIOS
from tests.openai_app import ChatServer
from tests.test_openai_app import CASES as TWIN_CASES

# OpenLLMetry's OpenAI instrumentor declares a pydantic model the old way at import
pytestmark = pytest.mark.filterwarnings("ignore:Support for class-based `config` is deprecated:DeprecationWarning")

# the OpenInference twin's scenarios and buckets, stage for stage (its request names the principal)
CASES = list(TWIN_CASES)
SPANS = {
    "otel": {"retrieval": "_search", "context": "chat scripted-model", "generation": "chat scripted-model"},
    "openllmetry": {"retrieval": "chroma.query", "context": "openai.chat", "generation": "openai.chat"},
}


def _run(tmp_path: Path, mode: str, call: str, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, dict[str, str]]:
    for key, value in ENV[mode].items():
        monkeypatch.setenv(key, value)
    handle = configure("helpdesk", trace_dir=tmp_path / "traces", tracer_provider=_provider())
    asked: dict[str, str] = {}
    try:
        with ChatServer() as server, instrumented(mode, handle.provider):
            for name, _bucket, _stage in CASES:
                asked[HelpDesk(server.url, SCENARIOS[name], mode=mode, call=call).ask()] = name
    finally:
        handle.shutdown()
    result = analyze(tmp_path / "store.duckdb", gold=gold_path(), traces=[tmp_path / "traces"])
    rows = {asked[r["trace_id"]]: r for r in result.claims.to_dicts() if r["gold_claim_id"] is not None}
    con = duckdb.connect(str(tmp_path / "store.duckdb"), read_only=True)
    try:
        names = dict(con.execute("SELECT span_id, name FROM spans").fetchall())
    finally:
        con.close()
    return (rows, result), names


def _provider() -> Any:
    from opentelemetry.sdk.trace import TracerProvider

    return TracerProvider()


@pytest.mark.parametrize("call", ["plain", "stream", "json"])
@pytest.mark.parametrize("mode", ["otel", "openllmetry"])
def test_every_fault_lands_in_its_bucket_stage_and_span(
    tmp_path: Path, mode: str, call: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    (rows, _result), names = _run(tmp_path, mode, call, monkeypatch)
    got = {n: (rows[n]["bucket"], rows[n]["stage"]) for n, _b, _s in CASES if n in rows}
    assert got == {n: (b, s) for n, b, s in CASES}, {n: rows[n]["reason"] for n in rows}
    for name, _bucket, stage in CASES:
        if stage is not None:
            assert names[rows[name]["span_id"]] == SPANS[mode][stage], (name, rows[name]["reason"])
