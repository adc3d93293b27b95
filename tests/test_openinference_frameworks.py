"""Zero-code adoption: real LlamaIndex, LangChain and Haystack apps, traced by their OpenInference instrumentors only.

Each app (tests/oi_apps.py) runs one request per scenario with a failure injected
where a real app would have it (an index without the page, a stale index, a filter
between retriever and prompt, a model that misquotes or mislabels), and an ok twin.
The analyzer must put each claim in the right bucket, at the right stage and span,
with no citeline decorator in the app. Only the model is scripted (a hosted LLM
cannot run here).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import duckdb
import pytest
from opentelemetry.sdk.trace import TracerProvider

from citeline.analyzer.phoenix.annotate import document_annotation_rows
from citeline.analyzer.run.analyze import analyze
from citeline.analyzer.sources.prompt_context import NO_PROMPT
from citeline.analyzer.store import connect
from citeline.examples.demo import gold_path
from citeline.instrumentation import configure
from tests.extras import needs
from tests.oi_apps import APPS, SCENARIOS, TEXT, Scenario, run_llama_index

for _module, _what in (
    ("llama_index.core", "LlamaIndex"),
    ("langchain_core", "LangChain"),
    ("haystack", "Haystack"),
    ("openinference.instrumentation.llama_index", "LlamaIndex's OpenInference instrumentor"),
    ("openinference.instrumentation.langchain", "LangChain's OpenInference instrumentor"),
    ("openinference.instrumentation.haystack", "Haystack's OpenInference instrumentor"),
):
    needs(_module, _what)

pytestmark = [
    pytest.mark.slow,  # fifty real LlamaIndex, LangChain and Haystack apps, about a second each
    # the instrumentors' own deprecations (warnings are errors in this suite: the LlamaIndex
    # instrumentor would lose its LLM spans to this one, raised inside its handler)
    pytest.mark.filterwarnings("ignore:The `json` method is deprecated:DeprecationWarning"),
    pytest.mark.filterwarnings("ignore:Calling .text\\(\\) as a method is deprecated"),
]

# the span each stage is blamed at, by framework: the instrumentor's span names
SPAN = {
    "llama_index": {
        "request": "CitationQueryEngine.query",
        "retrieval": "VectorIndexRetriever.retrieve",
        "generation": "ScriptedLLM.complete",  # the innermost LLM call: predict wraps it
    },
    "llama_index_plain": {
        "request": "RetrieverQueryEngine.query",
        "retrieval": "VectorIndexRetriever.retrieve",
        "generation": "ScriptedLLM.complete",  # the innermost LLM call: predict wraps it
    },
    "langchain": {"request": "RunnableSequence", "retrieval": "KeywordRetriever", "generation": "ScriptedChat"},
    "haystack": {
        "request": "Pipeline.run",
        "retrieval": "InMemoryBM25Retriever.run",
        "generation": "ScriptedGenerator.run",
    },
}
# without a context-assembly span, what reached the model is read off the LLM call's prompt:
# a context drop is blamed at the LLM span that was given the prompt
for names in SPAN.values():
    names["context"] = names["generation"]


def _run(tmp_path: Path, app: Any, scenario: Scenario, **kwargs: Any) -> tuple[list[dict[str, Any]], dict[str, str]]:
    provider = TracerProvider()
    handle = configure("zero-code-app", trace_dir=tmp_path / "traces", tracer_provider=provider)
    app(scenario, provider, **kwargs)
    handle.shutdown()
    result = analyze(tmp_path / "store.duckdb", gold=gold_path(), traces=[tmp_path / "traces"])
    rows = result.claims.to_dicts()
    con = duckdb.connect(str(tmp_path / "store.duckdb"), read_only=True)
    try:
        names = dict(con.execute("SELECT span_id, name FROM spans").fetchall())
    finally:
        con.close()
    return rows, names


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
@pytest.mark.parametrize("framework", sorted(APPS))
def test_each_injected_failure_lands_in_its_bucket_stage_and_span(
    tmp_path: Path, framework: str, scenario: str
) -> None:
    sc = SCENARIOS[scenario]
    rows, names = _run(tmp_path, APPS[framework], sc)
    gold_rows = [r for r in rows if r["gold_claim_id"] is not None]
    assert len(gold_rows) == 1, rows
    row = gold_rows[0]
    assert (row["bucket"], row["stage"]) == (sc.bucket, sc.stage), row["reason"]
    if sc.stage is None:
        assert row["span_id"] is None
        assert "resolution and render were not traced" in row["reason"]
    else:
        assert names[row["span_id"]] == SPAN[framework][sc.stage]
    if scenario == "access_violation":  # nobody recorded who asked: never the gold case's principal
        assert row["reason"].startswith(
            "restricted staff-handbook#discount-1 reached retrieval, and the request recorded no principal groups"
        )


@pytest.mark.parametrize("framework", sorted(APPS))
def test_access_with_the_principal_recorded(tmp_path: Path, framework: str) -> None:
    # the one decorator access needs: request() around the framework's call names who asked
    from citeline.instrumentation import request

    sc = SCENARIOS["access_violation"]
    provider = TracerProvider()
    handle = configure("zero-code-app", trace_dir=tmp_path / "traces", tracer_provider=provider)
    with request(question=sc.question, principal={"id": "bob", "groups": ["public"]}):
        APPS[framework](sc, provider)
    handle.shutdown()
    result = analyze(tmp_path / "store.duckdb", gold=gold_path(), traces=[tmp_path / "traces"])
    [row] = [r for r in result.claims.to_dicts() if r["gold_claim_id"] is not None]
    con = duckdb.connect(str(tmp_path / "store.duckdb"), read_only=True)
    try:
        names = dict(con.execute("SELECT span_id, name FROM spans").fetchall())
    finally:
        con.close()
    assert (row["bucket"], row["stage"], names[row["span_id"]]) == (
        "access_violation",
        "retrieval",
        SPAN[framework]["retrieval"],
    ), row["reason"]
    assert row["reason"] == "restricted staff-handbook#discount-1 reached retrieval"


@pytest.mark.parametrize("scenario", ["ok", "attribution", "grounding", "context_drop"])
def test_citation_query_engine_pieces_join_their_gold_chunk_by_content(tmp_path: Path, scenario: str) -> None:
    # citation_chunk_size=8 cuts every retrieved node into pieces, each a new node with a
    # fresh id under a "Source n:" label of its own; each piece must be read as its chunk
    sc = SCENARIOS[scenario]
    rows, names = _run(tmp_path, run_llama_index, sc, citation_chunk_size=8)
    [row] = rows
    assert (row["bucket"], row["stage"]) == (sc.bucket, sc.stage), row["reason"]
    if sc.stage is not None:
        assert names[row["span_id"]] == SPAN["llama_index"][sc.stage]
    if scenario == "ok":
        assert row["cited_chunks"] == ["returns-v4#refunds-3"]


_HIDDEN = """
import sys
from opentelemetry.sdk.trace import TracerProvider
from openinference.instrumentation import TraceConfig
from openinference.instrumentation.langchain import LangChainInstrumentor
from citeline.instrumentation import configure, request
from tests import oi_apps

provider = TracerProvider()
handle = configure("zero-code-app", trace_dir=sys.argv[1], tracer_provider=provider)
# the app hides what it sends to the model (a privacy setting of the instrumentor)
LangChainInstrumentor().instrument(
    tracer_provider=oi_apps._SHARED, config=TraceConfig(hide_inputs=True, hide_input_messages=True)
)
oi_apps._INSTRUMENTED.add(LangChainInstrumentor)
scenario = oi_apps.SCENARIOS[sys.argv[2]]
# hide_inputs hides the question too: the one decorator added is request(), for the question
with request(question=scenario.question):
    oi_apps.run_langchain(scenario, provider)
handle.shutdown()
"""


@pytest.mark.parametrize(
    ("scenario", "bucket", "stage"),
    [("ok", "not_evaluable", "context"), ("retrieval_miss", "retrieval_miss", "retrieval")],
)
def test_a_hidden_prompt_is_not_evaluable_and_names_the_decorator(
    tmp_path: Path, scenario: str, bucket: str, stage: str
) -> None:
    # one process per configuration: an instrumentor is set up once per process
    subprocess.run(
        [sys.executable, "-W", "ignore", "-c", _HIDDEN, str(tmp_path / "traces"), scenario],
        check=True,
        cwd=Path(__file__).resolve().parent.parent,
    )
    result = analyze(tmp_path / "store.duckdb", gold=gold_path(), traces=[tmp_path / "traces"])
    [row] = result.claims.to_dicts()
    assert (row["bucket"], row["stage"]) == (bucket, stage)
    if bucket == "not_evaluable":
        # never an invalid citation for a marker whose label map could not be read
        assert row["reason"] == "the context stage is " + NO_PROMPT
        con = duckdb.connect(str(tmp_path / "store.duckdb"), read_only=True)
        try:
            assert con.execute("SELECT name FROM spans WHERE span_id = ?", [row["span_id"]]).fetchall() == [
                ("ScriptedChat",)
            ]
        finally:
            con.close()
        problems = [p.message for p in result.ingest.problems if p.source == "openinference"]
        assert len(problems) == 1 and problems[0].startswith("1 OpenInference-only trace(s) recorded no prompt")


@pytest.mark.parametrize("framework", sorted(APPS))
def test_document_relevance_for_phoenix_reads_documents_as_the_gold_chunks_they_joined(
    tmp_path: Path, framework: str
) -> None:
    # what `citeline annotate` writes on each retrieved document (Phoenix's retrieval metrics):
    # a LlamaIndex node UUID or an id-less LangChain document that joined the support chunk is support
    provider = TracerProvider()
    handle = configure("zero-code-app", trace_dir=tmp_path / "traces", tracer_provider=provider)
    APPS[framework](SCENARIOS["ok"], provider)
    handle.shutdown()
    result = analyze(tmp_path / "store.duckdb", gold=gold_path(), traces=[tmp_path / "traces"])
    con = connect(tmp_path / "store.duckdb")
    try:
        rows = document_annotation_rows(con, result.run_id)
        names = dict(con.execute("SELECT span_id, name FROM spans").fetchall())
    finally:
        con.close()
    docs = [(names[r["span_id"]], r["metadata"]["chunk_id"], r["result"]["label"]) for r in rows]
    assert {d for d in docs if d[2] == "support"} == {(SPAN[framework]["retrieval"], "returns-v4#refunds-3", "support")}
    # every other document is named by the gold chunk it joined, never by the framework's id
    assert all(cid in TEXT for _name, cid, _label in docs), docs


CUSTOM_QA = (
    "Context excerpts are below, separated by blank lines. Cite the n-th excerpt as [n].\n\n"
    "{context_str}\n\nAnswer the question from the excerpts only: {query_str}\n"
)


@pytest.mark.parametrize("scenario", ["ok", "grounding", "attribution"])
def test_a_custom_qa_template_whose_instructions_hold_a_placeholder_label(tmp_path: Path, scenario: str) -> None:
    # "[n]" in the instructions stands just before the first excerpt: it is no label (labels are read
    # only where a chunk's text follows them, and a label names a source: it has a digit). Before: the
    # label map was read off the predict span's JSON blob and [1] came out invalid_citation
    sc = SCENARIOS[scenario]
    rows, names = _run(tmp_path, lambda s, p: run_llama_index(s, p, engine="plain", qa_template=CUSTOM_QA), sc)
    [row] = [r for r in rows if r["gold_claim_id"] is not None]
    assert (row["bucket"], row["stage"]) == (sc.bucket, sc.stage), row["reason"]
    if sc.stage is not None:
        assert names[row["span_id"]] == "ScriptedLLM.complete"  # the call inside the predict wrapper
