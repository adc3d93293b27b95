"""Which stages the perturbation harness cannot reach: no citeline decorator wraps the step.

A perturbation changes what a stage's decorator hands on; a step that no decorator wraps (a
zero-code app traced by its instrumentor, or one with only ``request()``) cannot be changed,
whatever spans its instrumentor records. :func:`unreachable_stages` reads the captured spans and
says, per stage, that no decorator wraps it, which instrumentor span stands in for it (the
analyzer still reads that span; only the harness cannot act on it) and which decorator would let
the harness reach it. Pure: spans in, notes out.

The stand-ins mirror how ``queries/ingest_spans.sql`` gives a span without ``citeline.stage``
its stage: OpenInference ``RETRIEVER`` -> retrieval, ``RERANKER`` -> context, ``LLM`` ->
generation; OpenTelemetry GenAI ``gen_ai.operation.name`` chat / text_completion /
generate_content (or OpenLLMetry's ``llm.request.type``) -> generation, ``retrieval`` or
``db.query.result`` events -> retrieval. The span names in a note come from the app: escape them
for the medium they are shown in.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from citeline.instrumentation import schema as K

#: stage -> (the decorator that records it, the function to put it on)
DECORATOR: Mapping[str, tuple[str, str]] = {
    "retrieval": ("@retrieval", "the function that returns the documents"),
    "context": ("@context_assembly", "the function that picks, orders and labels the chunks the model reads"),
    "generation": ("@generation", "the function that calls the model and returns its answer"),
    "resolution": ("@resolution", "the function that maps the answer's markers to chunks"),
    "render": ("@render", "the function that builds the citations the user sees"),
}
_INFERENCE_OPS = frozenset({"chat", "text_completion", "generate_content"})
_LLM_REQUEST_TYPE = "llm.request.type"  # OpenLLMetry's older key for an inference span (ingest_spans.sql)


def _stand_in(span: Any) -> tuple[str, str] | None:
    """(stage, what the span is) for an instrumentor span that records a stage; None for any other."""
    attrs = span.attributes or {}
    if attrs.get(K.CL_STAGE) is not None:
        return None
    kind = attrs.get(K.OI_SPAN_KIND)
    if kind is not None:
        stage = {"RETRIEVER": "retrieval", "RERANKER": "context", "LLM": "generation"}.get(str(kind))
        return (stage, f"an OpenInference {kind} span") if stage else None
    op = attrs.get(K.GENAI_OPERATION)
    if op in _INFERENCE_OPS or (op is None and attrs.get(_LLM_REQUEST_TYPE) in ("chat", "completion")):
        return "generation", f"an OpenTelemetry GenAI {op or attrs.get(_LLM_REQUEST_TYPE)} span"
    if op == "retrieval":
        return "retrieval", "an OpenTelemetry GenAI retrieval span"
    if any(e.name == K.DB_QUERY_RESULT_EVENT for e in span.events or ()):
        return "retrieval", f"a vector-store span with {K.DB_QUERY_RESULT_EVENT} events"
    return None


def unreachable_stages(spans_by_trace: Mapping[str, Sequence[Any]], stages: Iterable[str]) -> dict[str, str]:
    """Stage -> why the harness cannot reach it, for each of ``stages`` that no trace has a citeline span of.

    ``spans_by_trace``: trace id -> its spans (``ReadableSpan``s, as a capture holds them). A stage
    with a decorated span in any trace is reachable and left out. The note names the instrumentor
    span that stands in for the step, if any (its kind and name), and the decorator to add::

        no decorator wraps the retrieval step (the trace has an OpenInference RETRIEVER span,
        KeywordRetriever): add @retrieval to the function that returns the documents
    """
    decorated: set[str] = set()
    stand_in: dict[str, tuple[str, str]] = {}
    for spans in spans_by_trace.values():
        for span in spans:
            stage = (span.attributes or {}).get(K.CL_STAGE)
            if stage is not None:
                decorated.add(str(stage))
                continue
            found = _stand_in(span)
            if found is not None:
                stand_in.setdefault(found[0], (found[1], span.name))
    notes: dict[str, str] = {}
    if not any(spans_by_trace.values()):
        return notes  # no call left a trace: nothing says what wraps what
    for stage in stages:
        if stage in decorated or stage not in DECORATOR:
            continue
        decorator, where = DECORATOR[stage]
        if stage in stand_in:
            what, name = stand_in[stage]
            seen = f"the trace has {what}, {name}"
        elif stage == "context" and "generation" in stand_in:
            what, name = stand_in["generation"]
            seen = f"the analyzer reads the context off the prompt of {what}, {name}"
        else:
            seen = "no span of the trace records it"
        notes[stage] = f"no decorator wraps the {stage} step ({seen}): add {decorator} to {where}"
    return notes
