"""``record_content=False`` covers every ecosystem's content keys, in spans, span events and log records.

One family of keys at a time (GenAI messages and system instructions, tool call arguments and
results, retrieval documents, OpenLLMetry's ``db.query.result`` events, flattened
``gen_ai.prompt.N`` / ``gen_ai.completion.N``, Traceloop entity input and output, OpenInference
values and messages): another instrumentor's span through ``handle.provider`` carries the family's
keys as attributes and on an event, and a log record through ``handle.logger_provider`` carries them
as attributes and in its body. With content off, the content marker is in no written file, and every
id, score and role planted beside it is still there. The content-on twin shows the marker was planted
where the test looks.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from opentelemetry._logs import LogRecord
from opentelemetry.sdk.trace import TracerProvider

from citeline.instrumentation import configure

MARK = "ZQXCONTENTMARK"
DOC = "policy-7#returns"
CALL = "call_Q7x"


def _messages() -> list[dict[str, Any]]:
    return [{"role": "user", "parts": [{"type": "text", "content": f"{MARK} question"}]}]


# family -> (attributes carrying content, ids/scores/roles that must stay)
FAMILIES: dict[str, tuple[dict[str, Any], list[str]]] = {
    "genai-messages": (
        {
            "gen_ai.input.messages": json.dumps(_messages()),
            "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": MARK}]}]),
            "gen_ai.system_instructions": json.dumps([{"type": "text", "content": MARK}]),
            "gen_ai.response.id": "chatcmpl-KEEP1",
        },
        ["chatcmpl-KEEP1"],
    ),
    "tool-calls": (
        {
            "gen_ai.tool.call.arguments": json.dumps({"q": MARK}),
            "gen_ai.tool.call.result": f"{MARK} result",
            "gen_ai.tool.call.id": CALL,
            "gen_ai.tool.name": "search_kb",
        },
        [CALL, "search_kb"],
    ),
    "retrieval-documents": (
        {
            "gen_ai.retrieval.documents": json.dumps([{"id": DOC, "score": 0.8125, "content": f"{MARK} text"}]),
            "retrieval.documents.0.document.id": DOC,
            "retrieval.documents.0.document.content": f"{MARK} text",
            "retrieval.documents.0.document.score": 0.8125,
        },
        [DOC, "0.8125"],
    ),
    "openllmetry-db-query-result": (
        {
            "db.query.result.id": DOC,
            "db.query.result.document": f"{MARK} text",
            "db.query.result.distance": 0.1875,
            "db.query.result.metadata": json.dumps({"chunk_id": DOC}),
        },
        [DOC, "0.1875"],
    ),
    "flattened-prompt-completion": (
        {
            "gen_ai.prompt.0.role": "user",
            "gen_ai.prompt.0.content": f"{MARK} question",
            "gen_ai.completion.0.content": f"{MARK} answer",
            "gen_ai.completion.0.tool_calls.0.id": CALL,
            "gen_ai.completion.0.tool_calls.0.arguments": json.dumps({"q": MARK}),
        },
        [CALL, '"user"'],
    ),
    "traceloop-entity": (
        {
            "traceloop.entity.input": json.dumps({"query": MARK}),
            "traceloop.entity.output": json.dumps({"hits": [MARK]}),
            "traceloop.entity.name": "retrieve_kb",
        },
        ["retrieve_kb"],
    ),
    "openinference": (
        {
            "input.value": f"{MARK} question",
            "output.value": f"{MARK} answer",
            "llm.input_messages.0.message.content": f"{MARK} question",
            "llm.output_messages.0.message.content": f"{MARK} answer",
            "llm.output_messages.0.message.tool_calls.0.tool_call.id": CALL,
            "openinference.span.kind": "LLM",
        },
        [CALL, '"LLM"'],
    ),
}


def _emit(handle: Any, family: str) -> None:
    attrs, _kept = FAMILIES[family]
    tracer = handle.provider.get_tracer("another-instrumentor")
    logger = handle.logger_provider.get_logger("another-instrumentor")
    with tracer.start_as_current_span(f"{family} span") as span:
        span.set_attributes(attrs)
        span.add_event(family, attrs)
        logger.emit(LogRecord(event_name=family, attributes=attrs, body=dict(attrs)))
        # structured, as GenAI log records carry messages (openai-v2 in event_only mode)
        logger.emit(LogRecord(event_name=family, attributes={"gen_ai.input.messages": _messages()}, body=_messages()))


def _written(folder: Path) -> dict[str, str]:
    """Each written line's text, keyed by whether it holds spans or log records."""
    out = {"spans": "", "logs": ""}
    for f in sorted(folder.glob("*.jsonl")):
        for line in f.read_text().splitlines():
            out["logs" if "resourceLogs" in json.loads(line) else "spans"] += line
    return out


@pytest.mark.parametrize("family", sorted(FAMILIES))
@pytest.mark.parametrize("content", [False, True], ids=["content-off", "content-on"])
def test_each_family_of_content_keys_is_withheld_and_its_ids_kept(tmp_path: Path, family: str, content: bool) -> None:
    handle = configure("bot", trace_dir=tmp_path / "t", tracer_provider=TracerProvider(), record_content=content)
    try:
        _emit(handle, family)
    finally:
        handle.shutdown()
    written = _written(tmp_path / "t")
    spans = json.loads(written["spans"])["resourceSpans"][0]["scopeSpans"][0]["spans"]
    (span,) = spans
    places = {
        "span attributes": json.dumps(span["attributes"]),
        "span event": json.dumps(span["events"]),
        "log records": written["logs"],
    }
    leaks = [where for where, text in places.items() if MARK in text]
    if content:
        assert leaks == ["span attributes", "span event", "log records"]
        return
    assert leaks == []
    for kept in FAMILIES[family][1]:
        assert all(kept in text for text in places.values()), (kept, places)
    assert "[withheld: " in places["span attributes"] and "[withheld: " in places["log records"]
