"""``configure(record_content=False)`` means no content: every attribute, event and status of every
span in every mode is walked for a planted marker.

Modes: the decorators alone (retrieval with a query, a context step handed the context text,
a structured answer with quotes, a streamed answer, a failing stage, a failing to_chunks hook);
and a LangChain app traced zero-code by its OpenInference instrumentor through citeline's
provider. Kept with content off, by design (docs/security.md): the request's question and the
answer, which carry markers of their own here.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider

from citeline.instrumentation import configure, context_assembly, generation, request, retrieval
from tests.oi_apps import SCENARIOS, TEXT

MARK = "ZQXCONTENTMARK"  # chunk text, queries, prompts, quotes, error messages
QUESTION = "What is the refund window QQQUESTIONMARK?"
ANSWER_MARK = "AAANSWERMARK"
CHUNKS = [{"chunk_id": f"c{i}", "doc_id": "d", "version": "v1", "text": f"{MARK} chunk {i} text"} for i in range(3)]


@retrieval
def _search(query: str) -> list[dict[str, Any]]:
    return CHUNKS


@context_assembly
def _assemble(context_text: str, hits: list[dict[str, Any]]) -> str:
    return f"Use these {MARK}:\n" + "\n".join(f"[{i + 1}] {h['text']}" for i, h in enumerate(hits))


@generation
def _structured(prompt: str) -> dict[str, Any]:
    return {
        "text": f"Refunds take 5 days [1] {ANSWER_MARK}.",
        "claims": [{"text": "Refunds take 5 days.", "evidence": [{"chunk_id": "c0", "quote": f"{MARK} quote"}]}],
    }


@generation
def _streamed(prompt: str) -> Iterator[str]:
    yield f"Refunds {ANSWER_MARK} "
    yield "take 5 days [1]."


@generation
def _fails(prompt: str) -> str:
    raise ValueError(f"the model said {MARK}")


def _hook(_hits: Any) -> Any:
    raise KeyError(f"no id in {MARK}")


@retrieval(to_chunks=_hook)
def _search_with_bad_hook(query: str) -> list[dict[str, Any]]:
    return CHUNKS


def _decorated_app() -> None:
    with request(question=QUESTION, case_id="c"):
        hits = _search(f"refund window {MARK}")
        prompt = _assemble(f"context {MARK}", hits)
        _structured(prompt)
    with request(question=QUESTION):
        prompt = _assemble(f"context {MARK}", _search(f"q {MARK}"))
        "".join(_streamed(prompt))
    with request(question=QUESTION):
        _search_with_bad_hook(f"q {MARK}")
        with pytest.raises(ValueError, match=MARK):  # the app's own exception, passed through unchanged
            _fails(f"prompt {MARK}")


def _langchain_app(provider: Any) -> None:
    from tests.oi_apps import run_langchain

    run_langchain(SCENARIOS["ok"], provider)


# what may hold the question or the answer with content off (both are what the analyzer reads)
KEPT = {
    "citeline.request.question",
    "input.value",
    "citeline.generation.answer",
    "output.value",
    "citeline.generation.claims.text",
}


def _spans(folder: Path) -> list[dict[str, Any]]:
    out = []
    for f in sorted(folder.glob("*.jsonl")):
        for line in f.read_text().splitlines():
            for rs in json.loads(line)["resourceSpans"]:
                for ss in rs["scopeSpans"]:
                    out += [{**s, "scope": ss["scope"]["name"]} for s in ss["spans"]]
    return out


def _leaks(spans: list[dict[str, Any]], needles: list[str]) -> list[str]:
    found = []
    for s in spans:
        for a in s["attributes"]:
            text = json.dumps(a["value"])
            if s["scope"] == "citeline" and a["key"] in KEPT and MARK not in text:
                continue  # the question or the answer, which carry no content marker
            found += [f"{s['name']}: {a['key']}" for n in needles if n in text]
        found += [f"{s['name']}: event {e['name']}" for e in s.get("events", []) for n in needles if n in json.dumps(e)]
        found += [f"{s['name']}: status" for n in needles if n in json.dumps(s.get("status", {}))]
    return found


@pytest.mark.parametrize("content", [False, True], ids=["content-off", "content-on"])
def test_decorated_spans_hold_no_content_when_it_is_off(tmp_path: Path, content: bool) -> None:
    handle = configure("bot", trace_dir=tmp_path / "t", tracer_provider=TracerProvider(), record_content=content)
    try:
        _decorated_app()
    finally:
        handle.shutdown()
    spans = _spans(tmp_path / "t")
    assert len(spans) == 11  # three requests: 3 + 3 + 2 stage spans
    leaks = _leaks(spans, [MARK])
    if content:  # the twin: with content on, the same app records its content
        assert {
            "_search: citeline.chunks.text",
            "_fails: event exception",
            "_structured: citeline.generation.evidence.quote",
        } <= set(leaks)
        return
    assert leaks == []
    by_name = {s["name"]: {a["key"]: a["value"] for a in s["attributes"]} for s in spans}
    assert "citeline.input.content_hash" in by_name["_search"] and "citeline.input.length" in by_name["_search"]
    quote_hash = by_name["_structured"]["citeline.generation.evidence.quote_hash"]["arrayValue"]["values"]
    assert len(quote_hash) == 1 and quote_hash[0]["stringValue"]
    # the question and answer are kept: gold joins and the analysis read them
    assert QUESTION in json.dumps(by_name["request"]) if "request" in by_name else True
    assert any(ANSWER_MARK in json.dumps(s["attributes"]) for s in spans if s["name"] == "_streamed")


@pytest.mark.filterwarnings("ignore:Calling .text\\(\\) as a method is deprecated")
@pytest.mark.parametrize("content", [False, True], ids=["content-off", "content-on"])
def test_other_instrumentors_spans_through_citelines_exporter_lose_their_content(tmp_path: Path, content: bool) -> None:
    provider = TracerProvider()
    handle = configure("bot", trace_dir=tmp_path / "t", tracer_provider=provider, record_content=content)
    try:
        _langchain_app(provider)
    finally:
        handle.shutdown()
    spans = _spans(tmp_path / "t")
    assert spans and all(s["scope"] != "citeline" for s in spans)
    texts = [t[:40] for t in TEXT.values()] + ["Answer only from these sources"]
    leaks = _leaks(spans, texts)
    if content:
        assert any("retrieval.documents" in x for x in leaks) and any("llm.input_messages" in x for x in leaks), leaks
    else:
        assert leaks == [], leaks
        keys = {a["key"] for s in spans for a in s["attributes"]}
        assert "openinference.span.kind" in keys  # the span is still there, and its ids
        assert any(k.endswith(".document.metadata") for k in keys)  # ids in metadata still join
