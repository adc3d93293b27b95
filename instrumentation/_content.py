"""``record_content=False`` means no content: what citeline writes, and what other instrumentors
write through citeline's exporters.

Kept with content off: ids, versions, content hashes, uris, titles, labels, scores, the
request's question (gold cases are joined by it) and the answer (it is what the analyzer
reads). Everything else that is text someone wrote is reduced to its content hash and length:
stage inputs (queries, prompts), structured-answer quotes, exception messages and stack
traces' messages. Spans of other instrumentors (OpenInference, GenAI semantic conventions)
that reach citeline's exporters lose their content attributes the same way
(:class:`ContentFilter`); exporters the host app added itself are the app's own.
"""

from __future__ import annotations

import hashlib
import traceback
from collections.abc import Mapping
from typing import Any

from opentelemetry.context import Context
from opentelemetry.sdk.trace import Event, ReadableSpan, Span, SpanProcessor
from opentelemetry.trace import Status, StatusCode

from . import schema as K


def withheld(text: str) -> str:
    """What stands where a text is not recorded: its length and a hash to compare it by."""
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return f"[withheld: {len(text)} characters, sha256 {digest}]"


def is_content_key(key: str) -> bool:
    """Does an attribute of this key hold content (``schema.CONTENT_*``)?"""
    return key in K.CONTENT_KEYS or key.startswith(K.CONTENT_PREFIXES) or key.endswith(K.CONTENT_SUFFIXES)


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


def _scrub(attrs: Mapping[str, Any] | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in (attrs or {}).items():
        if not is_content_key(key):
            out[key] = value
        elif isinstance(value, str) and key != "exception.stacktrace":
            out[key] = withheld(value)
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
