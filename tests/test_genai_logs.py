"""Logs are part of the trace: GenAI content captured as log records reaches its span at ingest.

The real openai SDK, traced by the official ``opentelemetry-instrumentation-openai-v2`` with content
as events (``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=event_only``), handed
``handle.provider`` and ``handle.logger_provider``; the chat-completions server on loopback stands in
for the hosted model (its answers only are scripted: tests/openai_app.py). Ingest into a real DuckDB
file. The span then carries the content as if it had been captured on it: asserted against the same
app in ``span_only`` mode, value for value.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import duckdb
import pytest
from opentelemetry.sdk.trace import TracerProvider

from citeline.analyzer.sources.ingest import ingest
from citeline.analyzer.store import connect
from citeline.instrumentation import Citeline, configure
from tests.oi_apps import SCENARIOS
from tests.openai_app import MODEL, App, ChatServer

INPUT, OUTPUT, SYSTEM = "gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions"


@contextmanager
def genai_instrumented(handle: Citeline, content: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The official OpenAI instrumentor, latest GenAI conventions, content mode ``content``."""
    from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor

    monkeypatch.setenv("OTEL_SEMCONV_STABILITY_OPT_IN", "gen_ai_latest_experimental")
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", content)
    instrumentor = OpenAIInstrumentor()  # type: ignore[no-untyped-call]
    instrumentor.instrument(tracer_provider=handle.provider, logger_provider=handle.logger_provider)
    try:
        yield
    finally:
        instrumentor.uninstrument()


def _ask(folder: Path, content: str, monkeypatch: pytest.MonkeyPatch, scenario: str = "ok") -> Citeline:
    handle = configure("genai-app", trace_dir=folder, tracer_provider=TracerProvider())
    try:
        with ChatServer() as server, genai_instrumented(handle, content, monkeypatch):
            App(server.url, SCENARIOS[scenario], decorators=frozenset({"retrieval"})).ask()
    finally:
        handle.shutdown()
    return handle


def _lines(folder: Path, kind: str) -> list[dict[str, Any]]:
    return [
        doc
        for f in sorted(folder.glob("*.jsonl"))
        for line in f.read_bytes().split(b"\n")
        if line and kind in (doc := json.loads(line))
    ]


def _span_attrs(folder: Path, name: str) -> dict[str, Any]:
    for doc in _lines(folder, "resourceSpans"):
        for rs in doc["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                for s in ss["spans"]:
                    if s["name"] == name:
                        return {a["key"]: a["value"] for a in s["attributes"]}
    raise AssertionError(f"no span {name}")


def _stored(db: Path) -> tuple[list[tuple[Any, ...]], dict[str, Any]]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        spans = con.execute(
            "SELECT name, log_records, log_keys FROM spans WHERE log_records IS NOT NULL ORDER BY name"
        ).fetchall()
        content = {
            kv["key"]: json.loads(json.loads(kv["value"])["stringValue"])
            for (kvs,) in con.execute("SELECT content FROM logs").fetchall()
            for kv in kvs
        }
    finally:
        con.close()
    return spans, content


def test_event_only_content_joins_the_chat_span_as_if_captured_on_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    chat = f"chat {MODEL}"
    events = _ask(tmp_path / "events", "event_only", monkeypatch)
    _ask(tmp_path / "spans", "span_only", monkeypatch)

    # the span holds no content; a log record beside it, in a log file of the same folder, holds it
    assert INPUT not in _span_attrs(tmp_path / "events", chat)
    assert [p.name.startswith("genai-app-logs-") for p in events.log_files] == [True]
    (log_doc,) = _lines(tmp_path / "events", "resourceLogs")
    (record,) = [r for rl in log_doc["resourceLogs"] for sl in rl["scopeLogs"] for r in sl["logRecords"]]
    assert record["eventName"] == "gen_ai.client.inference.operation.details"
    assert len(record["traceId"]) == 32 and len(record["spanId"]) == 16

    report = ingest(connect(tmp_path / "store.duckdb"), [tmp_path / "events"])
    assert (report.log_records, report.log_content, report.problems) == (1, 1, [])
    assert report.files == 2 and report.skipped == 0
    spans, content = _stored(tmp_path / "store.duckdb")
    assert spans == [(chat, 1, [INPUT, OUTPUT])]  # the chat span, and only it, gained the two keys
    # what joined is exactly what span_only mode writes on the span
    on_span = _span_attrs(tmp_path / "spans", chat)
    assert content == {k: json.loads(on_span[k]["stringValue"]) for k in (INPUT, OUTPUT)}
    assert content[INPUT][0]["role"] == "system" and content[OUTPUT][0]["role"] == "assistant"


def _span_line(
    trace: str, span: str, name: str = "chat m", parent: str | None = None, chat: bool = True
) -> dict[str, Any]:
    s: dict[str, Any] = {
        "traceId": trace,
        "spanId": span,
        "name": name,
        "kind": 3,
        "startTimeUnixNano": "1",
        "endTimeUnixNano": "2",
        "attributes": [{"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}}] if chat else [],
    }
    if parent:
        s["parentSpanId"] = parent
    return {"resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [{"scope": {"name": "x"}, "spans": [s]}]}]}


def _kv(key: str, value: Any) -> dict[str, Any]:
    return {"key": key, "value": value}


def _s(text: str) -> dict[str, Any]:
    return {"stringValue": text}


def _kvlist(**fields: Any) -> dict[str, Any]:
    return {"kvlistValue": {"values": [_kv(k, v) for k, v in fields.items()]}}


def _arr(*values: Any) -> dict[str, Any]:
    return {"arrayValue": {"values": list(values)}}


def _logs_line(*records: dict[str, Any]) -> dict[str, Any]:
    return {
        "resourceLogs": [
            {
                "resource": {"attributes": [_kv("service.name", _s("collector-app"))]},
                "scopeLogs": [
                    {"scope": {"name": "opentelemetry.instrumentation.openai_v2"}, "logRecords": list(records)}
                ],
            }
        ]
    }


T1, S1 = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"


def _write(path: Path, *docs: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(d) + "\n" for d in docs))
    return path


def test_a_collector_file_with_content_in_the_body_reads_the_same(tmp_path: Path) -> None:
    # as the Collector's file exporter writes one pipeline's batches: logs and spans lines in one file;
    # the event name as the older `event.name` attribute, the content structured in the body
    details = {
        "timeUnixNano": "5",
        "traceId": T1.upper(),  # hex ids are read case-blind
        "spanId": S1,
        "attributes": [_kv("event.name", _s("gen_ai.client.inference.operation.details"))],
        "body": _kvlist(
            **{
                INPUT: _arr(_kvlist(role=_s("user"), parts=_arr(_kvlist(type=_s("text"), content=_s("Q?"))))),
                OUTPUT: _arr(_kvlist(role=_s("assistant"), parts=_arr(_kvlist(type=_s("text"), content=_s("A [1]."))))),
                SYSTEM: _arr(_kvlist(type=_s("text"), content=_s("Be brief."))),
            }
        ),
    }
    app_log = {"timeUnixNano": "6", "traceId": T1, "spanId": S1, "body": _s("GET /v1/chat 200")}  # not GenAI
    f = _write(tmp_path / "otel" / "collector.json", _logs_line(details, app_log), _span_line(T1, S1))
    report = ingest(connect(tmp_path / "s.duckdb"), [tmp_path / "otel"])
    assert (report.files, report.log_records, report.log_content, report.problems) == (1, 2, 1, [])
    spans, content = _stored(tmp_path / "s.duckdb")
    assert spans == [("chat m", 1, [INPUT, OUTPUT, SYSTEM])]
    assert content == {
        INPUT: [{"role": "user", "parts": [{"type": "text", "content": "Q?"}]}],
        OUTPUT: [{"role": "assistant", "parts": [{"type": "text", "content": "A [1]."}]}],
        SYSTEM: [{"type": "text", "content": "Be brief."}],
    }
    assert f.stat().st_size > 0


def test_older_per_message_events_become_the_messages_in_time_order(tmp_path: Path) -> None:
    def event(name: str, t: int, body: dict[str, Any]) -> dict[str, Any]:
        return {"timeUnixNano": str(t), "traceId": T1, "spanId": S1, "eventName": name, "body": body}

    records = [
        event("gen_ai.user.message", 2, _kvlist(content=_s("Q?"))),
        event("gen_ai.system.message", 1, _kvlist(content=_s("Be brief."))),
        event(
            "gen_ai.choice",
            3,
            _kvlist(
                index={"intValue": "0"},
                finish_reason=_s("stop"),
                message=_kvlist(role=_s("assistant"), content=_s("A [1].")),
            ),
        ),
    ]
    _write(tmp_path / "t" / "a.jsonl", _span_line(T1, S1), _logs_line(*records))
    report = ingest(connect(tmp_path / "s.duckdb"), [tmp_path / "t"])
    assert (report.log_content, report.problems) == (3, [])
    con = duckdb.connect(str(tmp_path / "s.duckdb"))
    (keys,) = con.execute("SELECT log_keys FROM spans").fetchone() or (None,)
    assert keys == [INPUT, OUTPUT]


def test_a_log_record_with_no_span_is_a_named_problem(tmp_path: Path) -> None:
    details = {"eventName": "gen_ai.client.inference.operation.details", "attributes": [_kv(INPUT, _s("[]"))]}
    no_span = {**details, "traceId": T1}
    elsewhere = {**details, "traceId": T1, "spanId": "00000000000000aa"}
    app_log = {"body": _s("started"), "traceId": T1}  # not GenAI content: counted, never a problem
    f = _write(
        tmp_path / "t" / "a.jsonl",
        _span_line(T1, S1),
        _logs_line(app_log),
        _logs_line(no_span, elsewhere),
    )
    report = ingest(connect(tmp_path / "s.duckdb"), [tmp_path / "t"])
    assert (report.log_records, report.log_content) == (3, 2)
    got = sorted((p.source, p.place, p.field, p.message) for p in report.problems if p.field == "spanId")
    # with no content joined, the chat span is one the GenAI decoder cannot read: named on its own
    (unread,) = [p for p in report.problems if p.field != "spanId"]
    assert (unread.source, unread.skipped) == (str(f), False)
    assert f"span {S1}" in unread.place and "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT" in unread.message
    assert got == [
        (
            str(f),
            "line 3",
            "spanId",
            "gen_ai.client.inference.operation.details (record 1 of its line) has no span id: "
            "its content joins no span; record skipped",
        ),
        (
            str(f),
            f"line 3 (trace {T1} span 00000000000000aa)",
            "spanId",
            f"gen_ai.client.inference.operation.details names span 00000000000000aa, which no span of trace {T1} "
            "read so far is: its content joins no span (is the span's file among those given?); record skipped",
        ),
    ]
    assert report.skipped == 2


def test_logs_read_after_their_span_still_join_it(tmp_path: Path) -> None:
    # the span in one ingest, its log record in a later file; and in one file, logs only past its first 64 KiB
    details = {
        "eventName": "gen_ai.client.inference.operation.details",
        "traceId": T1,
        "spanId": S1,
        "attributes": [_kv(OUTPUT, _s('[{"role":"assistant","parts":[{"type":"text","content":"A [1]."}]}]'))],
    }
    db = tmp_path / "s.duckdb"
    _write(tmp_path / "t" / "a.jsonl", _span_line(T1, S1))
    # alone, the chat span holds no content: the GenAI decoder names it (a note, not a skip)
    assert [p.skipped for p in ingest(connect(db), [tmp_path / "t"]).problems] == [False]
    _write(tmp_path / "t" / "b.jsonl", _logs_line(details))
    report = ingest(connect(db), [tmp_path / "t"])
    assert (report.files, report.files_skipped_unchanged, report.problems) == (1, 1, [])
    assert _stored(db)[0] == [("chat m", 1, [OUTPUT])]

    t2 = "1" * 32
    filler = [_span_line(f"{i:032x}", f"{i:016x}", name="other", chat=False) for i in range(1, 400)]
    late = {**details, "traceId": t2}
    f = _write(tmp_path / "u" / "c.jsonl", _span_line(t2, S1), *filler, _logs_line(late))
    assert f.stat().st_size > 64 * 1024
    report = ingest(connect(tmp_path / "u.duckdb"), [tmp_path / "u"])
    assert (report.log_content, report.problems, report.skipped) == (1, [], 0)
    assert _stored(tmp_path / "u.duckdb")[0] == [("chat m", 1, [OUTPUT])]


def test_a_key_the_span_has_is_not_replaced(tmp_path: Path) -> None:
    span = _span_line(T1, S1)
    attrs = span["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["attributes"]
    attrs.append(_kv(INPUT, _s('[{"role":"user","parts":[{"type":"text","content":"on the span"}]}]')))
    details = {
        "eventName": "gen_ai.client.inference.operation.details",
        "traceId": T1,
        "spanId": S1,
        "attributes": [_kv(INPUT, _s("[]")), _kv(OUTPUT, _s("[]"))],
    }
    _write(tmp_path / "t" / "a.jsonl", _logs_line(details), span)
    ingest(connect(tmp_path / "s.duckdb"), [tmp_path / "t"])
    assert _stored(tmp_path / "s.duckdb")[0] == [("chat m", 1, [OUTPUT])]


# --- the whole chain: content as log records, decoded on its chat span (issue #33, items 1 and 2) -------
from citeline.analyzer.run.analyze import analyze  # noqa: E402
from citeline.examples.demo import gold_path  # noqa: E402
from tests.test_openai_app import CASES  # noqa: E402


def test_event_only_mode_lands_every_fault_in_its_bucket_stage_and_span(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    handle = configure("genai-app", trace_dir=tmp_path / "traces", tracer_provider=TracerProvider())
    asked: dict[str, str] = {}
    try:
        with ChatServer() as server, genai_instrumented(handle, "event_only", monkeypatch):
            for name, _bucket, _stage in CASES:
                asked[App(server.url, SCENARIOS[name], decorators=frozenset({"retrieval"})).ask()] = name
    finally:
        handle.shutdown()
    result = analyze(tmp_path / "store.duckdb", gold=gold_path(), traces=[tmp_path / "traces"])
    rows = {asked[r["trace_id"]]: r for r in result.claims.to_dicts() if r["gold_claim_id"] is not None}
    con = duckdb.connect(str(tmp_path / "store.duckdb"), read_only=True)
    names = dict(con.execute("SELECT span_id, name FROM spans").fetchall())
    con.close()
    assert {n: (rows[n]["bucket"], rows[n]["stage"]) for n, _b, _s in CASES} == {n: (b, s) for n, b, s in CASES}
    span_of = {"retrieval": "_search", "context": f"chat {MODEL}", "generation": f"chat {MODEL}"}
    assert {n: names[rows[n]["span_id"]] for n, _b, s in CASES if s} == {n: span_of[s] for n, _b, s in CASES if s}


# --- object storage: the same lines read from a bucket (a real S3 server on loopback, tests/test_lake.py) --
from tests.test_lake import s3  # noqa: E402, F401 - the fixture


def test_logs_in_object_storage_join_their_spans_and_orphans_are_named_by_url(
    s3: str,  # noqa: F811 - the fixture
    tmp_path: Path,
) -> None:
    import gzip

    import boto3  # type: ignore[import-untyped]

    details = {
        "eventName": "gen_ai.client.inference.operation.details",
        "traceId": T1,
        "spanId": S1,
        "attributes": [_kv(OUTPUT, _s('[{"role":"assistant","parts":[{"type":"text","content":"A [1]."}]}]'))],
    }
    orphan = {**details, "spanId": "00000000000000aa"}
    client = boto3.client("s3")
    client.create_bucket(Bucket="lake")
    logs_key = "otel/minute=01/logs_1.json.gz"
    body = gzip.compress((json.dumps(_logs_line(details, orphan)) + "\n").encode())
    client.put_object(Bucket="lake", Key=logs_key, Body=body)
    client.put_object(Bucket="lake", Key="otel/minute=02/traces_2.json", Body=json.dumps(_span_line(T1, S1)) + "\n")
    con = connect(tmp_path / "s.duckdb")
    report = ingest(con, ["s3://lake/otel/"])
    assert (report.files, report.log_content) == (2, 2)
    assert [(p.source, p.place) for p in report.problems] == [
        (f"s3://lake/{logs_key}", f"line 1 (trace {T1} span 00000000000000aa)")
    ]
    assert con.execute("SELECT DISTINCT source_file FROM logs").fetchall() == [(f"s3://lake/{logs_key}",)]
    con.close()
    assert _stored(tmp_path / "s.duckdb")[0] == [("chat m", 1, [OUTPUT])]


def test_log_records_go_to_the_same_collectors_logs_endpoint(tmp_path: Path) -> None:
    """A real OTLP/HTTP receiver on loopback (protobuf decoded with opentelemetry-proto)."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from opentelemetry._logs import LogRecord
    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest

    got: list[tuple[str, str | None, bytes]] = []

    class Receiver(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            return

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            got.append((self.path, self.headers.get("x-team-key"), body))
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

    server = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/v1/traces?tenant=t1"
        handle = configure("bot", otlp_endpoint=url, headers={"x-team-key": "k-123"}, tracer_provider=TracerProvider())
        with handle.provider.get_tracer("x").start_as_current_span("chat m"):
            handle.logger_provider.get_logger("x").emit(
                LogRecord(event_name="gen_ai.client.inference.operation.details", attributes={INPUT: "[]"})
            )
        handle.shutdown()
    finally:
        server.shutdown()
        server.server_close()
    logs = [(path, key, body) for path, key, body in got if path.startswith("/v1/logs")]
    assert [(path, key) for path, key, _b in logs] == [("/v1/logs?tenant=t1", "k-123")]
    request = ExportLogsServiceRequest.FromString(logs[0][2])
    (record,) = request.resource_logs[0].scope_logs[0].log_records
    assert record.event_name == "gen_ai.client.inference.operation.details" and len(record.span_id) == 8
