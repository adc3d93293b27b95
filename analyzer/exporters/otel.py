"""A run's verdicts as OpenTelemetry GenAI evaluation events, to any OTLP backend or a file.

One log record per verdict (``queries/evaluation_events.sql``): per claim, event
``gen_ai.evaluation.result`` named ``citeline`` on the span where the chain broke (an ok claim,
which broke nowhere, on its trace's request span); per trace, one named ``citeline.trace`` on the
request span. Each record carries the trace and span id of the span it judges, so a backend shows
it on that span. The score is 1.0 for ok, 0.0 for a failing bucket and absent for
``not_evaluable`` (nothing could be judged: docs/otel-export.md).

Sent over OTLP/HTTP protobuf by the OpenTelemetry SDK's own log exporter, configured as every
OTLP exporter is (``OTEL_EXPORTER_OTLP_ENDPOINT`` / ``..._LOGS_ENDPOINT`` / ``..._HEADERS`` /
``..._LOGS_HEADERS``, certificates, timeout, compression); or written as OTLP/JSON lines
(``resourceLogs``, the Collector file exporter's shape, one request per line). The endpoint is
shown with its credentials as ``***`` and the header values never at all.

Idempotent per run: what reached a target is recorded in the store's ``exported`` table (run,
target, verdict key), and a second export of the run to that target sends only what is not there.
A verdict is only ever written onto a span of its own trace (``analyzer/targets.py``).
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import duckdb
import orjson

from citeline.analyzer.buckets import NOT_EVALUABLE, OK
from citeline.analyzer.escaping import is_span_id, is_trace_id
from citeline.analyzer.problems import Problem
from citeline.analyzer.store import sql
from citeline.analyzer.targets import foreign_spans
from citeline.instrumentation import schema as K
from citeline.instrumentation import settings
from citeline.instrumentation.redact import redact_text, redact_url

CLAIM_EVALUATION = "citeline"
TRACE_EVALUATION = "citeline.trace"
#: the score of each label: a failing bucket 0.0, ok 1.0; not_evaluable has none (nothing was judged)
OK_SCORE = 1.0
FAILING_SCORE = 0.0
NO_SCORE = frozenset({NOT_EVALUABLE})
BATCH = 512
SCOPE = "citeline.analyzer.exporters.otel"
_TEXT_SHOWN = 160  # characters of a claim's text quoted in the explanation


class ExportError(Exception):
    """The verdicts could not be exported; the message says why and what to do (never a secret)."""


@dataclass(frozen=True)
class Verdict:
    """One evaluation event: what it judges (trace, span), its name, label, score and explanation."""

    key: str
    kind: str
    trace_id: str
    span_id: str | None
    name: str
    label: str
    score: float | None
    explanation: str
    attributes: dict[str, Any]


@dataclass
class ExportReport:
    run_id: str
    target: str
    claims: int = 0
    traces: int = 0
    #: verdicts already at this target from an earlier export: not sent again
    already: int = 0
    #: verdicts not written, each with why (no span to put it on, a span of another trace)
    problems: list[Problem] = field(default_factory=list)

    @property
    def sent(self) -> int:
        return self.claims + self.traces


def score(label: str) -> float | None:
    """The documented numeric score of a verdict label."""
    if label in NO_SCORE:
        return None
    return OK_SCORE if label == OK else FAILING_SCORE


def _claim_name(gold_claim_id: str | None, claim_text: str | None) -> str:
    text = (claim_text or "").strip()
    if len(text) > _TEXT_SHOWN:
        text = text[: _TEXT_SHOWN - 1] + "…"
    quoted = f'"{text}"' if text else ""
    if gold_claim_id:
        return f"claim {gold_claim_id}" + (f" {quoted}" if quoted else "")
    return f"claim {quoted}" if quoted else "claim (no text)"


def verdicts(con: duckdb.DuckDBPyConnection, run_id: str) -> list[Verdict]:
    """Every verdict of ``run_id`` as an evaluation event, in a stable order with stable keys."""
    run = con.execute("SELECT judge FROM runs WHERE run_id = $r", {"r": run_id}).fetchall()
    judge = str(run[0][0]) if run and run[0][0] is not None else "unknown"
    rows = con.execute(sql("evaluation_events"), {"run": run_id}).fetchall()
    out: list[Verdict] = []
    seen: dict[str, int] = {}
    for kind, trace_id, span_id, on_request, case_id, claim_id, claim_text, label, stage, reason, flags, basis in rows:
        if kind == "claim":
            claim = claim_id or "text:" + hashlib.sha1((claim_text or "").encode()).hexdigest()[:12]
            key = f"claim/{case_id or '-'}/{claim}/{trace_id}"
            explanation = f"{_claim_name(claim_id, claim_text)}: {reason or label}"
            name = CLAIM_EVALUATION
        else:
            key = f"trace/{trace_id}"
            explanation = f"trace of case {case_id or '-'}: {reason}"
            name = TRACE_EVALUATION
        n = seen.get(key, 0)
        seen[key] = n + 1
        if n:  # the same claim stated twice in one answer: each verdict its own key
            key = f"{key}#{n}"
        attrs: dict[str, Any] = {
            K.GENAI_EVALUATION_NAME: name,
            K.GENAI_EVALUATION_SCORE_LABEL: label,
            K.GENAI_EVALUATION_EXPLANATION: explanation,
            K.CL_EVAL_RUN_ID: run_id,
            K.CL_EVAL_JUDGE: judge,
            K.CL_EVAL_KEY: key,
            K.CL_EVAL_BASIS: basis or "gold",
            K.CL_EVAL_ON_REQUEST: bool(on_request),
        }
        value = score(label)
        if value is not None:
            attrs[K.GENAI_EVALUATION_SCORE_VALUE] = value
        optional = {
            K.CL_EVAL_CASE_ID: case_id,
            K.CL_EVAL_CLAIM_ID: claim_id,
            K.CL_EVAL_CLAIM_TEXT: claim_text,
            K.CL_EVAL_STAGE: stage,
            K.CL_EVAL_FLAGS: list(flags) if flags else None,
        }
        attrs.update({key_: v for key_, v in optional.items() if v})
        out.append(Verdict(key, kind, trace_id, span_id, name, label, value, explanation, attrs))
    return out


def placeable(
    con: duckdb.DuckDBPyConnection, items: Sequence[Verdict], source: str
) -> tuple[list[Verdict], list[Problem]]:
    """The verdicts that can be written onto their span; one problem per span that cannot take one:
    no span at all (a trace with no request span), ids that are not OTLP ids, a span of another trace."""
    problems: list[Problem] = []
    candidates: list[Verdict] = []
    for v in items:
        if v.span_id is None:
            problems.append(
                Problem(source, f"trace {v.trace_id}", v.key, "no span to put it on (the trace has no request span)")
            )
        elif not (is_trace_id(v.trace_id) and is_span_id(v.span_id)):
            problems.append(
                Problem(source, f"trace {v.trace_id}", f"span {v.span_id}", "not an OTLP trace and span id: not sent")
            )
        else:
            candidates.append(v)
    refused, foreign = foreign_spans(con, ((v.trace_id, str(v.span_id)) for v in candidates), source)
    problems += foreign
    return [v for v in candidates if (v.trace_id, v.span_id) not in refused], problems


# --- the OTLP records ----------------------------------------------------------------------------


def _records(items: Sequence[Verdict], when_ns: int) -> list[Any]:
    """The verdicts as the SDK's readable log records (what its OTLP exporters take)."""
    from opentelemetry._logs import LogRecord, SeverityNumber
    from opentelemetry.sdk._logs import ReadableLogRecord
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.util.instrumentation import InstrumentationScope
    from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags, set_span_in_context

    resource = Resource.create({"service.name": "citeline"})
    scope = InstrumentationScope(SCOPE, _version())
    now = dt.datetime.now(dt.UTC)
    observed = int(now.timestamp()) * 1_000_000_000 + now.microsecond * 1000
    out = []
    for v in items:
        failing = v.label not in (OK, *NO_SCORE)
        record = LogRecord(
            timestamp=when_ns,
            observed_timestamp=observed,
            # the span the verdict judges, as the context the record is emitted in (the SDK's own way)
            context=set_span_in_context(
                NonRecordingSpan(
                    SpanContext(int(v.trace_id, 16), int(str(v.span_id), 16), is_remote=True, trace_flags=TraceFlags(1))
                )
            ),
            severity_text="WARN" if failing else "INFO",
            severity_number=SeverityNumber.WARN if failing else SeverityNumber.INFO,
            attributes=v.attributes,
            event_name=K.GENAI_EVALUATION_EVENT,
        )
        out.append(ReadableLogRecord(record, resource=resource, instrumentation_scope=scope))
    return out


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("citeline")
    except PackageNotFoundError:  # pragma: no cover - a source tree without an install
        return "0"


def otlp_json_line(records: Sequence[Any]) -> bytes:
    """One ``ExportLogsServiceRequest`` in the OTLP/JSON mapping (ids as hex, 64-bit integers as
    strings, enums as numbers), from the same protobuf the HTTP exporter sends."""
    from google.protobuf.json_format import MessageToDict  # type: ignore[import-untyped]
    from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs

    body = MessageToDict(encode_logs(records), use_integers_for_enums=True)
    for rl in body.get("resourceLogs", []):
        for sl in rl.get("scopeLogs", []):
            for rec in sl.get("logRecords", []):
                if rec.get("body") == {}:  # no body: the event is its attributes
                    del rec["body"]
                for id_key in ("traceId", "spanId"):
                    if id_key in rec:  # protobuf's JSON writes bytes as base64; OTLP/JSON writes hex
                        rec[id_key] = base64.b64decode(rec[id_key]).hex()
    return orjson.dumps(body) + b"\n"


# --- targets ---------------------------------------------------------------------------------------


def logs_endpoint(url: str | None) -> str:
    """The OTLP/HTTP logs endpoint: ``url`` as the base (``/v1/logs`` added unless it ends so), else
    ``OTEL_EXPORTER_OTLP_LOGS_ENDPOINT`` as is, else ``OTEL_EXPORTER_OTLP_ENDPOINT`` + ``/v1/logs``,
    else the OTLP default ``http://localhost:4318/v1/logs``."""
    if not url:
        signal = (settings.OTLP_LOGS_ENDPOINT.get() or "").strip()
        if signal:
            return signal
        url = (settings.OTLP_ENDPOINT.get() or "").strip() or "http://localhost:4318"
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ExportError(f"--otlp {redact_url(url)}: give an http(s) URL such as http://localhost:4318")
    if parts.path.rstrip("/").endswith("/v1/logs"):
        return url
    return url.rstrip("/") + "/v1/logs"


def _header_secrets() -> list[str]:
    """The values of the OTLP header settings (and their URL-decoded forms): never printed."""
    out: list[str] = []
    for variable in (settings.OTLP_HEADERS, settings.OTLP_LOGS_HEADERS):
        for pair in (variable.get() or "").split(","):
            _key, sep, value = pair.partition("=")
            if sep and value.strip():
                out += [value.strip(), unquote(value.strip())]
                out += unquote(value.strip()).split()  # "Bearer s3cret": the token alone too
    return out


def _done(con: duckdb.DuckDBPyConnection, run_id: str, target: str) -> set[str]:
    rows = con.execute(
        "SELECT verdict FROM exported WHERE run_id = $r AND target = $t", {"r": run_id, "t": target}
    ).fetchall()
    return {str(r[0]) for r in rows}


def _mark(con: duckdb.DuckDBPyConnection, run_id: str, target: str, items: Sequence[Verdict]) -> None:
    now = dt.datetime.now(dt.UTC).replace(tzinfo=None)
    con.executemany(
        "INSERT OR IGNORE INTO exported VALUES (?, ?, ?, ?, ?, ?)",
        [(run_id, target, v.key, v.trace_id, v.span_id, now) for v in items],
    )


def _run_time_ns(con: duckdb.DuckDBPyConnection, run_id: str) -> int:
    """When the run judged (its finish, else its start): the records' timestamp, the same on every export."""
    rows = con.execute("SELECT coalesce(finished_at, started_at) FROM runs WHERE run_id = $r", {"r": run_id}).fetchall()
    when = rows[0][0] if rows and rows[0][0] is not None else dt.datetime.now(dt.UTC)
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    return int(when.timestamp()) * 1_000_000_000 + when.microsecond * 1000


def _pending(
    con: duckdb.DuckDBPyConnection, run_id: str, target: str, source: str, report: ExportReport
) -> list[Verdict]:
    kept, problems = placeable(con, verdicts(con, run_id), source)
    report.problems += problems
    done = _done(con, run_id, target)
    report.already = sum(1 for v in kept if v.key in done)
    return [v for v in kept if v.key not in done]


def _count(report: ExportReport, items: Sequence[Verdict]) -> None:
    report.claims += sum(1 for v in items if v.kind == "claim")
    report.traces += sum(1 for v in items if v.kind == "trace")


def export_file(con: duckdb.DuckDBPyConnection, run_id: str, path: Path) -> ExportReport:
    """Append the run's verdicts not yet written to ``path`` as OTLP/JSON lines (``resourceLogs``)."""
    target = f"file:{path.resolve()}"
    report = ExportReport(run_id, target)
    items = _pending(con, run_id, target, "export", report)
    when = _run_time_ns(con, run_id)
    with open(path, "ab") as f:
        for i in range(0, len(items), BATCH):
            batch = items[i : i + BATCH]
            f.write(otlp_json_line(_records(batch, when)))
            _mark(con, run_id, target, batch)
            _count(report, batch)
    return report


class _Collect(logging.Handler):
    """The exporter's own log lines during one export, kept to explain a failure (redacted) and not
    printed as they are: they may quote the endpoint with its credentials."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.lines.append(record.getMessage())
        except Exception:  # noqa: BLE001 - a log line that cannot be formatted explains nothing
            self.lines.append(str(record.msg))


@contextmanager
def _quiet_exporter() -> Iterator[_Collect]:
    names = ("opentelemetry.exporter.otlp.proto.http", "opentelemetry.exporter.otlp.proto.common")
    collect = _Collect()
    saved = []
    for name in names:
        log = logging.getLogger(name)
        saved.append((log, log.propagate))
        log.addHandler(collect)
        log.propagate = False
    try:
        yield collect
    finally:
        for log, propagate in saved:
            log.removeHandler(collect)
            log.propagate = propagate


def export_otlp(
    con: duckdb.DuckDBPyConnection, run_id: str, url: str | None = None, *, timeout: float | None = None
) -> ExportReport:
    """Send the run's verdicts not yet at the endpoint, batch by batch, over OTLP/HTTP protobuf.

    Raises :class:`ExportError` (endpoint shown redacted, header values never) when a batch is refused
    or the endpoint cannot be reached; the batches sent before it stay recorded as exported."""
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
    from opentelemetry.sdk._logs.export import LogRecordExportResult

    endpoint = logs_endpoint(url)
    shown = redact_url(endpoint)
    report = ExportReport(run_id, shown)
    items = _pending(con, run_id, shown, "otlp", report)
    if not items:
        return report
    when = _run_time_ns(con, run_id)
    secrets = _header_secrets()
    with _quiet_exporter() as logs:
        exporter = OTLPLogExporter(endpoint=endpoint, timeout=timeout)
        try:
            for i in range(0, len(items), BATCH):
                batch = items[i : i + BATCH]
                result = exporter.export(_records(batch, when))
                if result is not LogRecordExportResult.SUCCESS:
                    why = "; ".join(logs.lines[-2:]) or "no reason given"
                    why = redact_text(why, [*secrets, urlsplit(endpoint).password])
                    raise ExportError(
                        f"the OTLP endpoint {shown} did not take the verdicts ({why}); {report.sent} sent before "
                        "it are recorded and will not be sent again. Check that a collector listens there and "
                        "OTEL_EXPORTER_OTLP_HEADERS holds what it expects"
                    )
                _mark(con, run_id, shown, batch)
                _count(report, batch)
        finally:
            exporter.shutdown()  # type: ignore[no-untyped-call]
    return report
