"""reach.unreachable_stages: which stages no decorator wraps, what stands in for them, which decorator would reach them.

The spans are real: made by citeline's decorators and by tracers named as instrumentors name
theirs, captured by citeline.instrumentation.testing.capture (the harness's own capture).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from opentelemetry.sdk.trace import TracerProvider

from citeline.analyzer.store import STAGES
from citeline.analyzer.testing.reach import unreachable_stages
from citeline.instrumentation import configure, request, retrieval
from citeline.instrumentation.testing import Captured, capture
from tests.extras import needs


def _by_trace(cap: Captured) -> dict[str, list[object]]:
    out: dict[str, list[object]] = {}
    for s in cap.spans():
        out.setdefault(f"{s.context.trace_id:032x}", []).append(s)  # type: ignore[union-attr]
    return out


def test_an_openinference_app_with_no_decorator_is_unreachable_at_every_stage_with_what_stands_in() -> None:
    with capture() as cap:
        tracer = cap.provider.get_tracer("openinference.instrumentation.langchain")
        with tracer.start_as_current_span("RunnableSequence", attributes={"openinference.span.kind": "CHAIN"}):
            with tracer.start_as_current_span("KeywordRetriever", attributes={"openinference.span.kind": "RETRIEVER"}):
                pass
            with tracer.start_as_current_span("ScriptedChat", attributes={"openinference.span.kind": "LLM"}):
                pass
        notes = unreachable_stages(_by_trace(cap), STAGES)
    assert notes == {
        "retrieval": "no decorator wraps the retrieval step (the trace has an OpenInference RETRIEVER span, "
        "KeywordRetriever): add @retrieval to the function that returns the documents",
        "context": "no decorator wraps the context step (the analyzer reads the context off the prompt of an "
        "OpenInference LLM span, ScriptedChat): add @context_assembly to the function that picks, orders and "
        "labels the chunks the model reads",
        "generation": "no decorator wraps the generation step (the trace has an OpenInference LLM span, "
        "ScriptedChat): add @generation to the function that calls the model and returns its answer",
        "resolution": "no decorator wraps the resolution step (no span of the trace records it): add @resolution "
        "to the function that maps the answer's markers to chunks",
        "render": "no decorator wraps the render step (no span of the trace records it): add @render to the "
        "function that builds the citations the user sees",
    }


def test_only_request_with_genai_spans_names_the_genai_stand_ins() -> None:
    with capture() as cap:
        tracer = cap.provider.get_tracer("opentelemetry.instrumentation.chromadb")
        with request(question="How fast are refunds issued?"):
            with tracer.start_as_current_span("chroma.query") as span:
                span.add_event("db.query.result", {"db.query.result.id": "returns-v4#refunds-3"})
            with tracer.start_as_current_span("chat gpt-4o", attributes={"gen_ai.operation.name": "chat"}):
                pass
        notes = unreachable_stages(_by_trace(cap), ["retrieval", "context", "generation"])
    assert notes == {
        "retrieval": "no decorator wraps the retrieval step (the trace has a vector-store span with "
        "db.query.result events, chroma.query): add @retrieval to the function that returns the documents",
        "context": "no decorator wraps the context step (the analyzer reads the context off the prompt of an "
        "OpenTelemetry GenAI chat span, chat gpt-4o): add @context_assembly to the function that picks, orders "
        "and labels the chunks the model reads",
        "generation": "no decorator wraps the generation step (the trace has an OpenTelemetry GenAI chat span, "
        "chat gpt-4o): add @generation to the function that calls the model and returns its answer",
    }


def test_a_decorated_stage_in_any_trace_is_reachable_and_left_out() -> None:
    @retrieval
    def search(q: str) -> list[dict[str, str]]:
        return [{"chunk_id": "returns-v4#refunds-3", "text": "Refunds within 5 business days."}]

    with capture() as cap:
        tracer = cap.provider.get_tracer("openinference.instrumentation.openai")
        with (
            request(question="first"),
            tracer.start_as_current_span("ChatCompletion", attributes={"openinference.span.kind": "LLM"}),
        ):
            pass
        with request(question="second"):  # the decorated search runs in another trace only
            search("second")
            with tracer.start_as_current_span("ChatCompletion", attributes={"openinference.span.kind": "LLM"}):
                pass
        by_trace = _by_trace(cap)
    assert len(by_trace) == 2
    assert sorted(unreachable_stages(by_trace, STAGES)) == ["context", "generation", "render", "resolution"]
    assert unreachable_stages({}, ["retrieval"]) == {}  # no trace at all: nothing says what wraps what
    assert unreachable_stages({"t": next(iter(by_trace.values()))}, ["retrieval"]) == {
        "retrieval": "no decorator wraps the retrieval step (no span of the trace records it): add @retrieval to "
        "the function that returns the documents"
    }


@pytest.mark.slow  # LangChain and its instrumentor imported (~2 s)
@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # the instrumentor's own
def test_a_real_zero_code_langchain_app_captured_by_the_harness_capture(tmp_path: Path) -> None:
    # LangChain's OpenInference instrumentor handed handle.provider, no decorator at all: the spans
    # the capture took from the app's provider say what stands in for each step
    needs("langchain_core", "LangChain")
    needs("openinference.instrumentation.langchain", "LangChain's OpenInference instrumentor")
    from tests.oi_apps import SCENARIOS, run_langchain

    handle = configure("zero-code-app", trace_dir=tmp_path / "traces", tracer_provider=TracerProvider())
    try:
        with capture() as cap:
            run_langchain(SCENARIOS["ok"], handle.provider)
            by_trace = _by_trace(cap)
    finally:
        handle.shutdown()
    assert len(by_trace) == 1
    assert unreachable_stages(by_trace, ["retrieval", "context", "generation"]) == {
        "retrieval": "no decorator wraps the retrieval step (the trace has an OpenInference RETRIEVER span, "
        "KeywordRetriever): add @retrieval to the function that returns the documents",
        "context": "no decorator wraps the context step (the analyzer reads the context off the prompt of an "
        "OpenInference LLM span, ScriptedChat): add @context_assembly to the function that picks, orders and "
        "labels the chunks the model reads",
        "generation": "no decorator wraps the generation step (the trace has an OpenInference LLM span, "
        "ScriptedChat): add @generation to the function that calls the model and returns its answer",
    }


@pytest.mark.slow  # LangChain and its instrumentor imported (~2 s), 11 perturbations x 1 case
@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # the instrumentor's own
def test_perturb_on_a_zero_code_app_says_per_stage_which_decorator_would_reach_it(tmp_path: Path) -> None:
    # never "not seen" (that would blame a decorator that is not there) and never "n/a" (the step is there:
    # the harness cannot reach it): "unreachable", naming the instrumentor span and the decorator (run_langchain
    # skips the test when LangChain or its instrumentor is not installed)
    from citeline.analyzer.testing import perturb
    from citeline.examples.demo import gold_path
    from tests.oi_apps import SCENARIOS, run_langchain

    handle = configure("zero-code-app", trace_dir=tmp_path / "traces", tracer_provider=TracerProvider())
    try:
        result = perturb(lambda case: run_langchain(SCENARIOS["ok"], handle.provider), gold_path(), cases=["refund-*"])
    finally:
        handle.shutdown()
    assert {s: v.verdict for s, v in result.stages.items()} == dict.fromkeys(
        ["retrieval", "context", "generation", "resolution", "render"], "unreachable"
    )
    assert result.stages["retrieval"].note == (
        "no decorator wraps the retrieval step (the trace has an OpenInference RETRIEVER span, KeywordRetriever): "
        "add @retrieval to the function that returns the documents"
    )
    assert result.stages["render"].note == (
        "no decorator wraps the render step (no span of the trace records it): add @render to the function that "
        "builds the citations the user sees"
    )
    assert {c.status for c in result.cells if c.perturbation != "retrieval.supersede"} == {"n/a"}
    assert not list((tmp_path / "traces").glob("*.jsonl"))  # the app's own exporter got none of it
