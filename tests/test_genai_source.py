"""The GenAI source reads every shape the conventions write, and names an LLM span it cannot read.

Rows in, rows out: one trace per shape, written as OTLP/JSON lines (a citeline request span, a
retrieval and a chat span of OpenTelemetry's GenAI conventions), analyzed against the demo's gold
set. The shapes are those the instrumentors write (their source read in site-packages): the
message attributes as a JSON string on the span, the same attributes as the structured OTLP value a
log record carries (the ``event_only`` mode, merged onto its span at ingest: the contract with the
logs reader), OpenLLMetry's older flattened ``gen_ai.prompt.N`` / ``gen_ai.completion.N``, a tool
call's arguments as the answer, and a GenAI retrieval span's ``gen_ai.retrieval.documents``. The
last test runs the real openai-v2 instrumentor with content not captured.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from citeline.analyzer.run.analyze import analyze
from citeline.analyzer.sources import genai
from citeline.examples.demo import gold_path
from tests.oi_apps import SCENARIOS, TEXT

QUESTION = SCENARIOS["ok"].question
SUPPORT = TEXT["returns-v4#refunds-3"]
OTHER = TEXT["returns-v4#eligibility-2"]
SYSTEM = "Answer from the sources, citing each fact as [n]."
USER = f"Sources:\n\nSource 1: {OTHER}\n\nSource 2: {SUPPORT}\n\nQuestion: {QUESTION}"
RIGHT = "Refunds are issued to the original payment method within 5 business days [2]."
WRONG = "Refunds are issued to the original payment method within 5 business days [1]."


def _s(value: str) -> dict[str, Any]:
    return {"stringValue": value}


def _any(value: Any) -> dict[str, Any]:
    """A plain value as the OTLP/JSON AnyValue a log record's attribute is."""
    if isinstance(value, str):
        return _s(value)
    if isinstance(value, list):
        return {"arrayValue": {"values": [_any(x) for x in value]}}
    return {"kvlistValue": {"values": [{"key": k, "value": _any(v)} for k, v in value.items()]}}


def _attrs(d: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"key": k, "value": v if isinstance(v, dict) else _s(v)} for k, v in d.items()]


def _span(trace: str, span: str, parent: str, name: str, t: int, attrs: dict[str, Any], events: Any = ()) -> Any:
    return {
        "traceId": trace, "spanId": span, "parentSpanId": parent, "name": name,
        "startTimeUnixNano": str(t), "endTimeUnixNano": str(t + 10), "status": {},
        "attributes": _attrs(attrs), "events": list(events),
    }  # fmt: skip


def _trace(n: int, chat: dict[str, Any], retrieval: dict[str, Any] | None = None, events: Any = ()) -> str:
    trace = f"{n:032x}"
    spans = [
        _span(
            trace,
            f"{n:08x}00000001",
            "",
            "ask",
            1000,
            {
                "citeline.schema_version": "1",
                "citeline.stage": "request",
                "citeline.request.question": QUESTION,
                "citeline.request.principal.groups": {"arrayValue": {"values": [_s("public")]}},
            },
        ),
        _span(trace, f"{n:08x}00000002", f"{n:08x}00000001", "search", 1020, retrieval or {}, events),
        _span(trace, f"{n:08x}00000003", f"{n:08x}00000001", "chat scripted-model", 1040, chat),
    ]
    return json.dumps({"resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [{"spans": spans}]}]})


def _hits() -> list[dict[str, Any]]:
    """OpenLLMetry's vector-store hits (db.query.result events) for the two sources of the prompt."""
    return [
        {
            "name": "db.query.result",
            "attributes": _attrs(
                {
                    "db.query.result.id": cid,
                    "db.query.result.document": TEXT[cid],
                    "db.query.result.distance": {"doubleValue": 0.1 * i},
                    "db.query.result.metadata": "{}",
                }
            ),
        }
        for i, cid in enumerate(["returns-v4#eligibility-2", "returns-v4#refunds-3"])
    ]


def _messages(answer_parts: list[dict[str, Any]], *, system_apart: bool) -> dict[str, list[Any]]:
    given = [{"role": "user", "parts": [{"type": "text", "content": USER}]}]
    if not system_apart:
        given.insert(0, {"role": "system", "parts": [{"type": "text", "content": SYSTEM}]})
    out = {"in": given, "out": [{"role": "assistant", "parts": answer_parts, "finish_reason": "stop"}]}
    if system_apart:
        out["system"] = [{"type": "text", "content": SYSTEM}]
    return out


def _chat(answer: str, *, structured: bool = False, tool: bool = False) -> dict[str, Any]:
    parts = (
        [{"type": "tool_call", "id": "call_1", "name": "answer", "arguments": json.loads(answer)}]
        if tool
        else [{"type": "text", "content": answer}]
    )
    m = _messages(parts, system_apart=structured)
    attrs: dict[str, Any] = {"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai"}
    encode = _any if structured else (lambda x: _s(json.dumps(x)))
    attrs["gen_ai.input.messages"] = encode(m["in"])
    attrs["gen_ai.output.messages"] = encode(m["out"])
    if "system" in m:
        attrs["gen_ai.system_instructions"] = encode(m["system"])
    return attrs


def _flat(answer: str) -> dict[str, Any]:
    """OpenLLMetry before the message attributes: gen_ai.prompt.N.* and gen_ai.completion.N.*."""
    return {
        "llm.request.type": "chat", "gen_ai.system": "openai",
        "gen_ai.prompt.0.role": "system", "gen_ai.prompt.0.content": SYSTEM,
        "gen_ai.prompt.1.role": "user", "gen_ai.prompt.1.content": USER,
        "gen_ai.completion.0.role": "assistant", "gen_ai.completion.0.content": answer,
    }  # fmt: skip


TOOL_ANSWER = json.dumps({"answerText": RIGHT, "claims": [{"text": RIGHT[:-5] + ".", "evidence": [{"sourceId": "2"}]}]})
DOCS = json.dumps(
    [{"id": cid, "score": 0.9, "content": TEXT[cid]} for cid in ["returns-v4#eligibility-2", "returns-v4#refunds-3"]]
)
RETRIEVAL = {"gen_ai.operation.name": "retrieval", "gen_ai.retrieval.documents": DOCS}

# (name, the chat span, the retrieval span, its events) -> (bucket, stage, span name)
SHAPES = {
    "span json, right": ((_chat(RIGHT), None, _hits()), ("ok", None, None)),
    "span json, wrong source": ((_chat(WRONG), None, _hits()), ("attribution", "generation", "chat scripted-model")),
    "log record value": ((_chat(RIGHT, structured=True), None, _hits()), ("ok", None, None)),
    "log record value, wrong": (
        (_chat(WRONG, structured=True), None, _hits()),
        ("attribution", "generation", "chat scripted-model"),
    ),
    "flattened": ((_flat(RIGHT), None, _hits()), ("ok", None, None)),
    "flattened, wrong": ((_flat(WRONG), None, _hits()), ("attribution", "generation", "chat scripted-model")),
    "tool call": ((_chat(TOOL_ANSWER, tool=True), None, _hits()), ("ok", None, None)),
    "retrieval span": ((_chat(RIGHT), RETRIEVAL, ()), ("ok", None, None)),
    "retrieval span, wrong": ((_chat(WRONG), RETRIEVAL, ()), ("attribution", "generation", "chat scripted-model")),
}


def test_every_shape_is_read(tmp_path: Path) -> None:
    (tmp_path / "traces").mkdir()
    names = list(SHAPES)
    lines = [_trace(i + 1, *SHAPES[n][0]) for i, n in enumerate(names)]
    (tmp_path / "traces" / "genai.jsonl").write_text("\n".join(lines) + "\n")
    result = analyze(tmp_path / "s.duckdb", gold=gold_path(), traces=[tmp_path / "traces"])
    rows = {r["trace_id"]: r for r in result.claims.to_dicts() if r["gold_claim_id"] is not None}
    spans = {f"{i + 1:08x}00000003": "chat scripted-model" for i in range(len(names))}
    got = {}
    for i, n in enumerate(names):
        r = rows[f"{i + 1:032x}"]
        got[n] = (r["bucket"], r["stage"], spans.get(r["span_id"]) if r["stage"] else None)
    assert got == {n: SHAPES[n][1] for n in names}, {n: rows[f"{i + 1:032x}"]["reason"] for i, n in enumerate(names)}
    assert not [p for p in result.ingest.problems if "GenAI" in p.message]


def test_read_takes_the_system_instructions_then_the_messages_in_order() -> None:
    m = _messages([{"type": "text", "content": RIGHT}], system_apart=True)
    got = genai.read(json.dumps(_s(json.dumps(m["system"]))), json.dumps(_any(m["in"])), json.dumps(_any(m["out"])))
    assert got == genai.Read(f"{SYSTEM}\n\n{USER}", RIGHT, None)


def test_hostile_values_read_as_nothing() -> None:
    deep: Any = _s("x")
    for _ in range(200):
        deep = {"arrayValue": {"values": [deep]}}
    for raw in ("not json", json.dumps(_s("[" * 5000)), json.dumps(deep), json.dumps(_s('{"parts": 3}'))):
        got = genai.read(None, raw, raw)
        assert got.answer is None and got.error is not None and "with no text part" in got.error


def test_a_chat_span_without_content_is_named_with_the_setting_that_captures_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the real openai-v2 instrumentor with its default: no message content on the span
    from citeline.instrumentation import configure
    from tests.genai_app import HelpDesk, instrumented
    from tests.openai_app import ChatServer

    monkeypatch.setenv("OTEL_SEMCONV_STABILITY_OPT_IN", "gen_ai_latest_experimental")
    monkeypatch.delenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", raising=False)
    handle = configure("helpdesk", trace_dir=tmp_path / "traces")
    try:
        with ChatServer() as server, instrumented("otel", handle.provider):
            HelpDesk(server.url, SCENARIOS["ok"], mode="otel").ask()
    finally:
        handle.shutdown()
    result = analyze(tmp_path / "s.duckdb", gold=gold_path(), traces=[tmp_path / "traces"])
    (row,) = [r for r in result.claims.to_dicts() if r["gold_claim_id"] is not None]
    assert (row["bucket"], row["stage"]) == ("not_evaluable", "generation")
    assert "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=span_only" in row["reason"]
    (problem,) = [p for p in result.ingest.problems if p.field == "gen_ai.output.messages"]
    assert "1 GenAI inference span(s) give no answer" in problem.message
    assert "neither gen_ai.input.messages nor gen_ai.output.messages" in problem.message
    assert "TRACELOOP_TRACE_CONTENT=true" in problem.message
