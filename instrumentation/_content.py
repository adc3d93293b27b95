"""``record_content=False`` means no content: what citeline writes, and what other instrumentors
write through citeline's exporters.

Kept with content off: ids, versions, content hashes, uris, titles, labels, scores, the
request's question (gold cases are joined by it) and the answer (it is what the analyzer
reads). Everything else that is text someone wrote is reduced to its content hash and length:
stage inputs (queries, prompts), structured-answer quotes, exception messages and stack
traces' messages. Spans of other instrumentors (OpenInference, GenAI semantic conventions)
that reach citeline's exporters lose their content attributes the same way, in span attributes, span
events and log records' attributes and bodies (:class:`ContentFilter`, :class:`LogContentFilter`);
exporters the host app added itself are the app's own. docs/security.md lists the keys.
"""

from __future__ import annotations

import copy
import hashlib
import json
import traceback
from collections.abc import Mapping
from typing import Any

from opentelemetry.context import Context
from opentelemetry.sdk._logs import LogRecordProcessor, ReadWriteLogRecord
from opentelemetry.sdk.trace import Event, ReadableSpan, Span, SpanProcessor
from opentelemetry.trace import Status, StatusCode

from . import _guard
from . import schema as K


def withheld(text: str) -> str:
    """What stands where a text is not recorded: its length and a hash to compare it by."""
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return f"[withheld: {len(text)} characters, sha256 {digest}]"


def is_content_key(key: str) -> bool:
    """Does an attribute of this key hold content (``schema.CONTENT_*``)? Ids, roles and scores never
    do, also under a content prefix (``gen_ai.completion.0.tool_calls.0.id``)."""
    if key in K.CONTENT_KEYS:
        return True
    if key.endswith(K.CONTENT_ID_SUFFIXES):
        return False
    return key.startswith(K.CONTENT_PREFIXES) or key.endswith(K.CONTENT_SUFFIXES)


def record_error(span: Any, exc: BaseException, content: bool) -> None:
    """The user's exception on the span: whole with content on; with content off its type and the
    frames it passed, its message only as a length and hash."""
    name = type(exc).__name__
    if content:
        span.record_exception(exc)
        span.set_status(Status(StatusCode.ERROR, f"{name}: {exc}"))
        return
    frames = "".join(traceback.format_tb(exc.__traceback__))
    span.add_event(
        "exception",
        {
            "exception.type": f"{type(exc).__module__}.{type(exc).__qualname__}",
            "exception.message": withheld(str(exc)),
            "exception.stacktrace": f"Traceback (most recent call last):\n{frames}{name}: (message withheld)",
            "exception.escaped": "False",
        },
    )
    span.set_status(Status(StatusCode.ERROR, name))


def error_text(err: BaseException, content: bool) -> str:
    """An error of the app's own code (a to_chunks hook) as citeline records it on the span."""
    return f"{type(err).__name__}: {err}" if content else f"{type(err).__name__}: {withheld(str(err))}"


def _as_text(value: Any) -> str:
    """A structured value (a log record's nested attribute) as the text it would be written as."""
    return value if isinstance(value, str) else json.dumps(value, default=str, ensure_ascii=False, sort_keys=True)


def scrub_value(value: Any) -> Any:
    """A structured value (a log record's body, a message, a retrieval document) without its content:
    each content field (``_keys.CONTENT_FIELDS`` or a content key) becomes :func:`withheld`, ids,
    roles, scores and metadata stay."""
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for k, v in value.items():
            name = str(k)
            if name == K.GENAI_RETRIEVAL_DOCUMENTS:
                out[name] = _documents(v)
            elif name in K.CONTENT_FIELDS or is_content_key(name):
                out[name] = withheld(_as_text(v))
            else:
                out[name] = scrub_value(v)
        return out
    if isinstance(value, list | tuple):
        return [scrub_value(v) for v in value]
    return value


def _documents(value: Any) -> Any:
    """``gen_ai.retrieval.documents`` without the documents' content: ids and scores join gold."""
    if not isinstance(value, str):
        return scrub_value(value)
    try:
        docs = json.loads(value)
    except ValueError:
        return withheld(value)
    return json.dumps(scrub_value(docs), ensure_ascii=False)


def _scrub(attrs: Mapping[str, Any] | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in (attrs or {}).items():
        if key == K.GENAI_RETRIEVAL_DOCUMENTS:
            out[key] = _documents(value)
        elif not is_content_key(key):
            out[key] = value
        elif key != "exception.stacktrace" and value is not None:
            out[key] = withheld(_as_text(value))
    return out


class ContentFilter(SpanProcessor):
    """Hands citeline's exporter each span of another instrumentor without its content.

    citeline's own spans pass as they are: with content off they hold none. The rest get a
    copy without content attributes (strings become :func:`withheld`), event attributes
    scrubbed the same way and the status description withheld."""

    def __init__(self, inner: SpanProcessor, own_scope: str) -> None:
        self.inner = inner
        self.own_scope = own_scope

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        self.inner.on_start(span, parent_context=parent_context)

    def on_end(self, span: ReadableSpan) -> None:
        scope = span.instrumentation_scope
        if scope is not None and scope.name == self.own_scope:
            self.inner.on_end(span)
            return
        status = span.status
        if status.description:
            status = Status(status.status_code, withheld(status.description))
        events = [Event(e.name, _scrub(e.attributes), e.timestamp) for e in span.events]
        clean = ReadableSpan(
            name=span.name,
            context=span.context,
            parent=span.parent,
            resource=span.resource,
            attributes=_scrub(span.attributes),
            events=events,
            links=span.links,
            kind=span.kind,
            status=status,
            start_time=span.start_time,
            end_time=span.end_time,
            instrumentation_scope=span.instrumentation_scope,
        )
        self.inner.on_end(clean)

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self.inner.force_flush(timeout_millis)


class LogContentFilter(LogRecordProcessor):
    """Hands citeline's log exporter each log record without its content: attributes as on a span,
    the body with :func:`scrub_value` (a plain string body is withheld whole). The record the other
    processors see is left as it is: the filter hands on a copy."""

    def __init__(self, inner: LogRecordProcessor) -> None:
        self.inner = inner

    def on_emit(self, log_record: ReadWriteLogRecord) -> None:
        try:
            clean = self._clean(log_record)
        except Exception as exc:  # noqa: BLE001 - a record that cannot be cleaned is not written, the app goes on
            _guard.report("withholding a log record's content", exc)
            return
        self.inner.on_emit(clean)

    @staticmethod
    def _clean(log_record: ReadWriteLogRecord) -> ReadWriteLogRecord:
        rec = log_record.log_record
        body = rec.body
        clean = copy.copy(rec)  # the other processors keep the record as it was emitted
        clean.body = withheld(body) if isinstance(body, str) else scrub_value(body)
        clean.attributes = _scrub(rec.attributes)
        if getattr(clean, "exception", None) is not None:
            clean.exception = None  # its message is content; the attributes carry its type
        return ReadWriteLogRecord(
            clean,
            resource=log_record.resource,
            instrumentation_scope=log_record.instrumentation_scope,
            limits=log_record.limits,
        )

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self.inner.force_flush(timeout_millis)
