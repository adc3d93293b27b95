"""The OpenTelemetry GenAI source: the message attributes of an inference span, read into its prompt and answer.

``queries/ingest_spans.sql`` gives spans of the GenAI semantic conventions their stage
(``gen_ai.operation.name`` chat / text_completion / generate_content -> generation; retrieval,
or OpenLLMetry's ``db.query.result`` events -> retrieval, whose documents then join gold chunks
exactly as OpenInference's do: ``openinference.join_documents``) and reads the older flattened
``gen_ai.prompt.N`` / ``gen_ai.completion.N`` itself. What a query cannot do is read the message
attributes, because they come in two encodings:

* a JSON string on the span (``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=span_only``,
  OpenLLMetry): ``[{"role", "parts": [{"type": "text", "content"}, {"type": "tool_call",
  "arguments"}, ...]}]``;
* the structured OTLP value a log record carries (``event_only``: the attributes of a
  ``gen_ai.client.inference.operation.details`` record, merged onto the span whose id it names),
  an ``arrayValue`` of ``kvlistValue`` s, to any depth.

:func:`decode` runs at ingest, once per batch that holds such spans: it reads each distinct
(``gen_ai.system_instructions``, ``gen_ai.input.messages``, ``gen_ai.output.messages``) once
(``genai_messages.sql``) and returns the prompt (system instructions, then every input message's
text parts and tool results, in order) and the answer (the first output message's text, else its
first tool call's arguments, which the structured-answer reader takes as JSON), applied to the
batch by ``apply_genai.sql`` before the spans are stored. A span that gives no answer keeps, as
its adapter error, what it lacked and the setting that captures it: its claims are then
``not_evaluable`` at that span, and :func:`problems` names it in the run's problems.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import duckdb

from citeline.analyzer import steps
from citeline.analyzer.problems import Problem
from citeline.analyzer.store import sql
from citeline.instrumentation.otlp_json import plain_value
from citeline.instrumentation.schema import GENAI_INPUT_MESSAGES, GENAI_OUTPUT_MESSAGES

#: the settings that put message content on the span, for the reason an unread span gives
CAPTURE = (
    "set OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=span_only with "
    "OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental (true on the older conventions) for "
    "opentelemetry-instrumentation-openai-v2 and its siblings, or TRACELOOP_TRACE_CONTENT=true for "
    "OpenLLMetry; docs/genai.md"
)


def _messages(raw: str | None) -> Any:
    """An attribute value as recorded (its OTLP/JSON text) -> the messages (or parts) it holds."""
    if raw is None:
        return None
    try:
        value = plain_value(json.loads(raw))
        if isinstance(value, str):  # the span form: JSON text inside the string
            value = json.loads(value) if value.lstrip().startswith(("[", "{")) else value
    except (ValueError, RecursionError):
        return None
    return value


def _as_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)


def _texts(message: Any, *, tool_results: bool) -> list[str]:
    """A message's text parts (and, in a prompt, its tool results: what a tool gave the model)."""
    if isinstance(message, str):
        return [message]
    if not isinstance(message, dict):
        return []
    parts = message.get("parts")
    if not isinstance(parts, list):  # an older event body: {"role", "content"}
        content = message.get("content")
        return [content] if isinstance(content, str) and content else []
    out = []
    for part in parts:
        if not isinstance(part, dict):
            continue
        kind = part.get("type")
        if kind == "text" and isinstance(part.get("content"), str):
            out.append(part["content"])
        elif kind == "tool_call_response" and tool_results and part.get("response") is not None:
            out.append(_as_text(part["response"]))
    return out


def _tool_arguments(message: Any) -> str | None:
    """The first tool call's arguments of a message, as JSON text."""
    parts = message.get("parts") if isinstance(message, dict) else None
    for part in parts if isinstance(parts, list) else []:
        if isinstance(part, dict) and part.get("type") == "tool_call" and part.get("arguments") is not None:
            return _as_text(part["arguments"])
    return None


@dataclass(frozen=True)
class Read:
    prompt: str | None
    answer: str | None
    error: str | None  # what the span lacked, when it gives no answer


def read(system: str | None, inputs: str | None, outputs: str | None) -> Read:
    """One inference span's message attributes (each its OTLP/JSON value text, or None) read."""
    prompt_parts: list[str] = []
    instructions = _messages(system)
    for part in instructions if isinstance(instructions, list) else [instructions]:
        prompt_parts += _texts({"parts": [part]} if isinstance(part, dict) else part, tool_results=False)
    given = _messages(inputs)
    for message in given if isinstance(given, list) else []:
        prompt_parts += _texts(message, tool_results=True)
    answer = None
    said = _messages(outputs)
    for message in said if isinstance(said, list) else []:
        if text := "\n".join(_texts(message, tool_results=False)):
            answer = text
            break
    if answer is None:
        for message in said if isinstance(said, list) else []:
            if (args := _tool_arguments(message)) is not None:
                answer = args
                break
    error = None
    if answer is None:
        if outputs is None and inputs is None:
            lacked = f"neither {GENAI_INPUT_MESSAGES} nor {GENAI_OUTPUT_MESSAGES} (message content not captured)"
        elif outputs is None:
            lacked = f"no {GENAI_OUTPUT_MESSAGES} (output content not captured)"
        else:
            lacked = f"{GENAI_OUTPUT_MESSAGES} with no text part or tool call"
        error = f"not captured: the GenAI inference span recorded {lacked}; {CAPTURE}"
    return Read("\n\n".join(p for p in prompt_parts if p) or None, answer, error)


def decode(con: duckdb.DuckDBPyConnection) -> None:
    """Reads the batch's GenAI inference spans' message attributes (genai_messages.sql), once per distinct
    triple; writes t_genai_read and applies it to t_batch (apply_genai.sql). Nothing when the batch has none."""
    rows = con.execute(sql("genai_messages")).fetchall()
    if not rows:
        return
    out = []
    for system, inputs, outputs in rows:
        got = read(system, inputs, outputs)
        out.append((system, inputs, outputs, got.prompt, got.answer, got.error))
    steps.fill(con, "t_genai_read", rows=out)
    steps.run(con, "apply_genai")


_UNREAD = "t_genai_unread"


def start(con: duckdb.DuckDBPyConnection) -> None:
    """An ingest's list of GenAI inference spans no decoder could read so far (its batches add to it)."""
    steps.declare(con, _UNREAD)


def note(con: duckdb.DuckDBPyConnection) -> None:
    """The batch's GenAI inference spans that give no answer, kept until the ingest ends: a log record read
    later may still bring their content (the span is then decoded again, and no longer listed)."""
    con.execute(
        f"INSERT INTO {_UNREAD} SELECT source_file, trace_id, span_id, adapter_error FROM t_batch "
        "WHERE genai_kind = 'inference' AND answer IS NULL AND adapter_error IS NOT NULL"
    )


def problems(con: duckdb.DuckDBPyConnection) -> list[Problem]:
    """The ingest's GenAI inference spans no decoder could read, as stored at its end (a span decoded again
    with its log records' content is not one), one entry per file and reason; the list is then dropped."""
    con.execute(
        f"DELETE FROM {_UNREAD} AS u USING spans AS s "
        "WHERE s.trace_id = u.trace_id AND s.span_id = u.span_id AND s.answer IS NOT NULL"
    )
    out = []
    for source, trace_id, span_id, n, error in con.execute(sql("genai_problems")).fetchall():
        more = f" and {n - 1} more" if n > 1 else ""
        out.append(
            Problem(
                source,
                f"trace {trace_id} span {span_id}{more}",
                GENAI_OUTPUT_MESSAGES,
                f"{n} GenAI inference span(s) give no answer: {error}; claims that need them are not_evaluable",
                skipped=False,
            )
        )
    con.execute(f"DROP TABLE {_UNREAD}")
    return out


__all__ = ["CAPTURE", "Read", "decode", "note", "problems", "read", "start"]
