"""A plain OpenAI-SDK app, traced two ways, lands every claim in its bucket, stage and span.

tests/openai_app.py: Qdrant in local mode, a prompt written by hand, the real ``openai`` SDK
against a loopback chat-completions server whose answers only are scripted (a hosted LLM cannot
run here). Mode ``decorated``: every citeline decorator. Mode ``instrumented``: OpenInference's
OpenAIInstrumentor for the LLM call plus ``@retrieval`` and ``request()``, nothing else: the
context is read off the LLM span's prompt with the chunk text @retrieval recorded, and the LLM
span is the generation. Plain, streamed and JSON calls.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import pytest
from opentelemetry.sdk.trace import TracerProvider

from citeline.analyzer.run.analyze import analyze
from citeline.examples.demo import gold_path
from citeline.instrumentation import configure
from tests.extras import needs
from tests.oi_apps import SCENARIOS
from tests.openai_app import App, ChatServer, openai_instrumented

needs("openai", "the OpenAI SDK the app calls")
needs("qdrant_client", "the app's in-process vector store")
needs("openinference.instrumentation.openai", "the OpenAI SDK's OpenInference instrumentor")

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning:openinference")

# (scenario, expected bucket, stage) - the access scenario's request names the public principal
CASES = [
    ("ok", "ok", None),
    ("grounding", "grounding", "generation"),
    ("uncited", "uncited", "generation"),
    ("attribution", "attribution", "generation"),
    ("invalid_citation", "invalid_citation", "generation"),
    ("context_drop", "context_drop", "context"),
    ("retrieval_miss", "retrieval_miss", "retrieval"),
    ("freshness", "freshness", "retrieval"),
    ("access_violation", "access_violation", "retrieval"),
]
SPANS = {
    "decorated": {
        "retrieval": "_search",
        "context": "_build",
        "generation": "_generate",
        "resolution": "_resolve",
        "render": "_render",
    },
    # no context span: a context drop shows in the prompt of the LLM call, which is the generation
    "instrumented": {"retrieval": "_search", "context": "ChatCompletion", "generation": "ChatCompletion"},
}


def _run(tmp_path: Path, mode: str, call: str) -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
    provider = TracerProvider()
    handle = configure("openai-app", trace_dir=tmp_path / "traces", tracer_provider=provider)
    asked: dict[str, str] = {}
    try:
        with ChatServer() as server:
            cases = [(n, SCENARIOS[n], "") for n, _b, _s in CASES]
            if mode == "decorated" and call != "json":
                cases.append(("resolution", SCENARIOS["ok"], "resolver-off-by-one"))
            for name, sc, faults in cases:
                app = App(server.url, sc, decorated=mode == "decorated", call=call, faults=faults)
                if mode == "instrumented":
                    with openai_instrumented(provider):
                        asked[app.ask()] = name
                else:
                    asked[app.ask()] = name
    finally:
        handle.shutdown()
    result = analyze(tmp_path / "store.duckdb", gold=gold_path(), traces=[tmp_path / "traces"])
    rows = {asked[r["trace_id"]]: r for r in result.claims.to_dicts() if r["gold_claim_id"] is not None}
    con = duckdb.connect(str(tmp_path / "store.duckdb"), read_only=True)
    try:
        names = dict(con.execute("SELECT span_id, name FROM spans").fetchall())
    finally:
        con.close()
    return rows, names


@pytest.mark.slow
@pytest.mark.parametrize("call", ["plain", "stream", "json"])
@pytest.mark.parametrize("mode", ["decorated", "instrumented"])
def test_every_fault_lands_in_its_bucket_stage_and_span(tmp_path: Path, mode: str, call: str) -> None:
    rows, names = _run(tmp_path, mode, call)
    # (a JSON answer's evidence names labels; they become chunk ids, and resolution is checked on
    # prose markers only: docs/analyzer.md)
    resolving = mode == "decorated" and call != "json"
    expected = list(CASES) + ([("resolution", "resolution", "resolution")] if resolving else [])
    got = {n: (rows[n]["bucket"], rows[n]["stage"]) for n, _b, _s in expected}
    assert got == {n: (b, s) for n, b, s in expected}, {n: rows[n]["reason"] for n in rows if n == "ok"}
    for name, _bucket, stage in expected:
        if stage is not None:
            span = names[rows[name]["span_id"]]
            want = SPANS[mode][stage]
            if mode == "decorated" and stage == "generation" and call == "stream":
                want = "_generate_stream"
            assert span == want, (name, rows[name]["reason"])


# --- decorator subsets: what a team has decorated so far ---------------------------------------
from hypothesis import HealthCheck, example, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from tests.openai_app import STAGES  # noqa: E402

SUBSET_CASES = [*CASES, ("resolution", "resolution", "resolution")]


def _buckets(tmp: Path, decorators: frozenset[str], instrumentor: bool) -> dict[str, tuple[str, str]]:
    provider = TracerProvider()
    handle = configure("openai-app", trace_dir=tmp / "traces", tracer_provider=provider)
    asked: dict[str, str] = {}
    try:
        with ChatServer() as server:
            for name, _b, _s in SUBSET_CASES:
                sc = SCENARIOS["ok" if name == "resolution" else name]
                faults = "resolver-off-by-one" if name == "resolution" else ""
                app = App(server.url, sc, decorators=decorators, faults=faults)
                if instrumentor:
                    with openai_instrumented(provider):
                        asked[app.ask()] = name
                else:
                    asked[app.ask()] = name
    finally:
        handle.shutdown()
    result = analyze(tmp / "s.duckdb", gold=gold_path(), traces=[tmp / "traces"])
    rows = {asked[r["trace_id"]]: r for r in result.claims.to_dicts() if r["gold_claim_id"] is not None}
    return {n: (r["bucket"], r["reason"]) for n, r in rows.items()}


def _allowed(truth: str, stage: str | None, got: str, decorators: frozenset[str], instrumentor: bool) -> bool:
    """Removing decorators may make a claim not_evaluable, never another component's failure. Two
    readings stand by design (docs/analyzer.md): a link nobody traced after generation (resolution,
    render) reads ok with a note saying so; and with no answer observed, a stale index still shows as
    the retrieval miss it also is (the current version was not retrieved: a fact, not a guess)."""
    if got in (truth, "not_evaluable"):
        return True
    if got == "ok" and stage in ("resolution", "render") and not {"resolution", "render"} <= decorators:
        return True
    return truth == "freshness" and got == "retrieval_miss" and "generation" not in decorators and not instrumentor


# found by this property: @context_assembly with the instrumentor's LLM span as the generation lost the
# label map (it was read off citeline's generation span only), and "[1]" came out invalid_citation
@pytest.mark.slow
@example(dropped={"generation"}, instrumentor=True, added="context")
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    dropped=st.sets(st.sampled_from(sorted(STAGES)), min_size=1, max_size=4),
    instrumentor=st.booleans(),
    added=st.sampled_from(sorted(STAGES)),
)
def test_decorators_only_ever_make_the_chain_more_observable(
    tmp_path_factory: pytest.TempPathFactory, dropped: set[str], instrumentor: bool, added: str
) -> None:
    fewer = STAGES - dropped
    more = fewer | {added}
    got_fewer = _buckets(tmp_path_factory.mktemp("fewer"), fewer, instrumentor)
    got_more = _buckets(tmp_path_factory.mktemp("more"), more, instrumentor)
    for name, truth, stage in SUBSET_CASES:
        for decorators, got in ((fewer, got_fewer), (more, got_more)):
            bucket, reason = got[name]
            assert _allowed(truth, stage, bucket, decorators, instrumentor), (
                name,
                sorted(decorators),
                instrumentor,
                bucket,
                reason,
            )
        # adding a decorator never turns a decided claim into not_evaluable
        if got_fewer[name][0] != "not_evaluable":
            assert got_more[name][0] == got_fewer[name][0] or got_more[name][0] == truth, (name, added)


@pytest.mark.slow
@pytest.mark.parametrize("content", [True, False], ids=["content-on", "content-off"])
def test_retrieval_and_generation_only_inside_a_host_span(tmp_path: Path, content: bool) -> None:
    # the prompt is built inline (no @context_assembly) and the request runs inside the host's own
    # span; before: "[1]" came out invalid_citation, as if the model had been given nothing
    provider = TracerProvider()
    handle = configure("openai-app", trace_dir=tmp_path / "traces", tracer_provider=provider, record_content=content)
    host = provider.get_tracer("host-web-framework")
    asked: dict[str, str] = {}
    try:
        with ChatServer() as server:
            for name in ("ok", "invalid_citation", "grounding"):
                app = App(server.url, SCENARIOS[name], decorators=frozenset({"retrieval", "generation"}))
                with host.start_as_current_span("POST /ask"):
                    asked[app.ask()] = name
    finally:
        handle.shutdown()
    result = analyze(tmp_path / "s.duckdb", gold=gold_path(), traces=[tmp_path / "traces"])
    got = {asked[r["trace_id"]]: (r["bucket"], r["stage"]) for r in result.claims.to_dicts() if r["gold_claim_id"]}
    if content:  # the context is read off the generation span's prompt, with the chunk text @retrieval recorded
        assert got == {
            "ok": ("ok", None),
            "invalid_citation": ("invalid_citation", "generation"),
            "grounding": ("grounding", "generation"),
        }
    else:  # nothing to read it from: not observed, never an invalid citation
        assert got == dict.fromkeys(("ok", "invalid_citation", "grounding"), ("not_evaluable", "context"))
