"""OTLP log records beside the spans: GenAI content captured as events joins its span at ingest.

An instrumentor in ``event_only`` content mode (``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``)
leaves the chat span without its messages and emits them as a log record tied to the span by trace
and span id: ``gen_ai.client.inference.operation.details`` (``gen_ai.input.messages``,
``gen_ai.output.messages``, ``gen_ai.system_instructions`` as attributes or inside the body), or, from
older instrumentors, one ``gen_ai.{system,user,assistant,tool}.message`` event per message and one
``gen_ai.choice`` per answer. Their lines (``resourceLogs``, as citeline's log exporter and the
Collector's file exporter write them) sit in the same folders as the spans.

DuckDB finds the lines (``log_lines.sql``: a substring test per line); they are few, so they are
parsed here. Each GenAI content record is stored in ``logs`` with its content in the shape a span
attribute has it (a JSON string), and ``ingest_spans.sql`` adds it to its span's attributes. Other
log records are counted as read and otherwise left alone. A content record whose span is not in the
store is named in the problems (:func:`orphans`), never dropped silently.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import orjson

from citeline.analyzer import steps
from citeline.analyzer import streaming as _streaming
from citeline.analyzer.problems import Problem
from citeline.analyzer.store import run
from citeline.instrumentation import schema as K
from citeline.instrumentation.otlp_json import plain_value

_ROLES_IN = ("system", "user", "assistant", "tool", "developer")


@dataclass
class LogsRead:
    """What one pass over log lines found."""

    lines: int = 0
    records: int = 0
    content: int = 0


def start(con: duckdb.DuckDBPyConnection) -> None:
    """An ingest begins: no log line read yet."""
    steps.declare(con, "t_log_lines")


def has_logs(head: bytes) -> bool:
    """Does a file's first 64 KiB hold log records? (Files whose logs start later are found when their
    lines do not all give spans, and read then: :func:`read`.)"""
    return b'"resourceLogs"' in head


def read(con: duckdb.DuckDBPyConnection, files: list[str], max_line: int) -> LogsRead:
    """Read the log lines of ``files``: GenAI content records into ``logs``, every line into t_log_lines
    (made by :func:`start`, which the ingest calls first)."""
    found = LogsRead()
    rows = run(con, "log_lines", {"files": files, "max_line": max_line}).fetchall()
    records: list[tuple[Any, ...]] = []
    lines: list[tuple[Any, ...]] = []
    for source, line_hash, line_bytes, text in rows:
        try:
            doc = orjson.loads(text)
        except orjson.JSONDecodeError:
            continue  # not read: the file's slow path names the line
        if not isinstance(doc, dict) or not isinstance(doc.get("resourceLogs"), list):
            continue
        n_records = 0
        n_content = 0
        for seq, rec in enumerate(_records(doc)):
            n_records += 1
            row = _content_row(rec)
            if row is None:
                continue
            n_content += 1
            records.append((*row, seq, str(source), int(line_hash), int(line_bytes)))
        lines.append((str(source), int(line_hash), int(line_bytes), n_records, n_content))
        found.lines += 1
        found.records += n_records
        found.content += n_content
    if lines:
        con.executemany("INSERT INTO t_log_lines VALUES (?, ?, ?, ?, ?)", lines)
    if records:
        con.execute(
            "CREATE OR REPLACE TEMP TABLE t_logs (trace_id VARCHAR, span_id VARCHAR, event_name VARCHAR, kind VARCHAR, "
            'time_ns BIGINT, content STRUCT("key" VARCHAR, "value" VARCHAR)[], seq INTEGER, source_file VARCHAR, '
            "line_hash UBIGINT, line_bytes BIGINT)"
        )
        con.executemany("INSERT INTO t_logs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", records)
        # a record is stored once however often its line is read (the same file in two folders, a file that grew)
        con.execute(
            "INSERT INTO logs BY NAME SELECT * FROM t_logs AS n WHERE NOT EXISTS (SELECT 1 FROM logs AS o "
            "WHERE o.line_hash = n.line_hash AND o.line_bytes = n.line_bytes AND o.seq = n.seq) "
            "QUALIFY row_number() OVER (PARTITION BY line_hash, line_bytes, seq) = 1"
        )
        con.execute("DROP TABLE t_logs")
    return found


def _records(doc: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for rl in doc["resourceLogs"]:
        if not isinstance(rl, dict):
            continue
        for sl in rl.get("scopeLogs") or []:
            if not isinstance(sl, dict):
                continue
            for rec in sl.get("logRecords") or []:
                if isinstance(rec, dict):
                    yield rec


def _as_attribute(value: Any) -> str:
    """A content value as a span carries it: a JSON string (a log record may carry it structured)."""
    text = value if isinstance(value, str) else orjson.dumps(value).decode("utf-8")
    return orjson.dumps({"stringValue": text}).decode("utf-8")


def _hex(value: Any) -> str | None:
    return value.lower() if isinstance(value, str) and value.strip("0") else None


def _time(rec: dict[str, Any]) -> int:
    for key in ("timeUnixNano", "observedTimeUnixNano"):
        try:
            t = int(rec.get(key) or 0)
        except (TypeError, ValueError):
            t = 0
        if t:
            return t
    return 0


def _part(text: Any) -> list[dict[str, Any]]:
    return [{"type": "text", "content": text}] if isinstance(text, str) and text else []


def _tool_calls(calls: Any) -> list[dict[str, Any]]:
    out = []
    for c in calls if isinstance(calls, list) else []:
        if isinstance(c, dict):
            fn: dict[str, Any] = c["function"] if isinstance(c.get("function"), dict) else {}
            out.append(
                {"type": "tool_call", "id": c.get("id"), "name": fn.get("name"), "arguments": fn.get("arguments")}
            )
    return out


def _message(role: str, body: Any) -> dict[str, Any]:
    """An older per-message event's body as a message of ``gen_ai.input.messages``."""
    body = body if isinstance(body, dict) else {"content": body}
    parts = _part(body.get("content"))
    if role == "tool":
        parts = [{"type": "tool_call_response", "id": body.get("id"), "response": body.get("content")}]
    parts += _tool_calls(body.get("tool_calls"))
    return {"role": body.get("role") if isinstance(body.get("role"), str) else role, "parts": parts}


def _choice(body: Any) -> dict[str, Any]:
    """An older ``gen_ai.choice`` event's body as a message of ``gen_ai.output.messages``."""
    body = body if isinstance(body, dict) else {}
    message = body.get("message") if isinstance(body.get("message"), dict) else {}
    parts = _part(message.get("content")) + _tool_calls(message.get("tool_calls"))
    out: dict[str, Any] = {"role": message.get("role") or "assistant", "parts": parts}
    if body.get("finish_reason") is not None:
        out["finish_reason"] = body["finish_reason"]
    return out


def _content_row(rec: dict[str, Any]) -> tuple[Any, ...] | None:
    """(trace_id, span_id, event_name, kind, time_ns, content) for a GenAI content record, else None."""
    attrs = {str(kv.get("key")): kv.get("value") for kv in rec.get("attributes") or [] if isinstance(kv, dict)}
    name = rec.get("eventName") or plain_value(attrs.get(K.EVENT_NAME))
    name = name if isinstance(name, str) else None
    body = plain_value(rec.get("body"))
    content: list[dict[str, str]] = []
    kind = "details"
    for key in K.GENAI_LOG_CONTENT_KEYS:
        if key in attrs:
            value = plain_value(attrs[key])
        elif isinstance(body, dict) and key in body:
            value = body[key]
        else:
            continue
        if value is not None:
            content.append({"key": key, "value": _as_attribute(value)})
    if not content and name == K.GENAI_CHOICE_EVENT:
        kind = "output"
        content = [{"key": K.GENAI_OUTPUT_MESSAGES, "value": orjson.dumps(_choice(body)).decode("utf-8")}]
    elif (
        not content
        and name
        and name.startswith(K.GENAI_MESSAGE_EVENT_PREFIX)
        and name.endswith(K.GENAI_MESSAGE_EVENT_SUFFIX)
    ):
        role = name.removeprefix(K.GENAI_MESSAGE_EVENT_PREFIX).removesuffix(K.GENAI_MESSAGE_EVENT_SUFFIX)
        if role not in _ROLES_IN:
            return None
        kind = "input"
        content = [{"key": K.GENAI_INPUT_MESSAGES, "value": orjson.dumps(_message(role, body)).decode("utf-8")}]
    if not content:
        return None
    return _hex(rec.get("traceId")), _hex(rec.get("spanId")), name, kind, _time(rec), content


def orphans(con: duckdb.DuckDBPyConnection, files: list[str]) -> list[Problem]:
    """Each GenAI content record read from ``files`` that names no span of the store, with its file, line and
    what is missing. Its content reaches no span; the record is counted as skipped."""
    rows = con.execute(
        "SELECT DISTINCT r.source_file, l.line_hash, l.line_bytes, l.seq, l.trace_id, l.span_id, l.event_name "
        "FROM logs AS l JOIN t_log_lines AS r USING (line_hash, line_bytes) "
        "WHERE list_contains($files, r.source_file) AND (l.trace_id IS NULL OR l.span_id IS NULL OR NOT EXISTS "
        "(SELECT 1 FROM spans AS s WHERE s.trace_id = l.trace_id AND s.span_id = l.span_id)) "
        "ORDER BY r.source_file, l.line_hash, l.seq",
        {"files": files},
    ).fetchall()
    wanted: dict[str, set[tuple[int, int]]] = {}
    for source, line_hash, line_bytes, *_ in rows:
        wanted.setdefault(source, set()).add((int(line_hash), int(line_bytes)))
    where = {source: _line_numbers(con, source, lines) for source, lines in wanted.items()}
    out = []
    for source, line_hash, line_bytes, seq, trace_id, span_id, event in rows:
        line = where[source].get((int(line_hash), int(line_bytes)), "line ?")
        what = event or "a log record"
        if trace_id is None or span_id is None:
            missing = "trace id" if trace_id is None else "span id"
            message = f"{what} (record {seq + 1} of its line) has no {missing}: its content joins no span"
            place = line
        else:
            message = (
                f"{what} names span {span_id}, which no span of trace {trace_id} read so far is: "
                "its content joins no span (is the span's file among those given?)"
            )
            place = f"{line} (trace {trace_id} span {span_id})"
        out.append(Problem(source, place, "spanId", message + "; record skipped"))
    return out


def _line_numbers(con: duckdb.DuckDBPyConnection, path: str, lines: set[tuple[int, int]]) -> dict[tuple[int, int], str]:
    """``line N`` for each (hash, bytes) of ``lines`` in ``path``: one streamed pass, a hash only for
    lines that hold log records."""

    def key(raw: bytes) -> list[tuple[int, int]]:
        if b'"resourceLogs"' not in raw:
            return []
        text = raw.removeprefix(b"\xef\xbb\xbf").removesuffix(b"\r").decode("utf-8", "replace")
        (h,) = con.execute("SELECT hash($t)", {"t": text}).fetchall()[0]
        return [(int(h), len(text.encode("utf-8")))]

    return _streaming.line_numbers(Path(path), lines, key)


def stale_spans(con: duckdb.DuckDBPyConnection) -> list[tuple[str, str, str]]:
    """(source_file, trace_id, span_id) of stored spans that more content records name than joined them
    when they were decoded (the records came after the span: a later batch, file or ingest)."""
    rows = con.execute(
        "SELECT s.source_file, s.trace_id, s.span_id FROM spans AS s "
        "JOIN (SELECT trace_id, span_id, count(*) AS n FROM logs WHERE span_id IS NOT NULL GROUP BY ALL) AS l "
        "USING (trace_id, span_id) WHERE coalesce(s.log_records, 0) < l.n ORDER BY ALL"
    ).fetchall()
    return [(str(a), str(b), str(c)) for a, b, c in rows]
