"""The request span: the root of one question's evidence chain.

``request(...)`` is a context manager (``with`` and ``async with``) and a
decorator. It opens the per-request state (the label map the stages share)
in a ``contextvars`` variable, so concurrent requests in threads or asyncio
tasks never see each other's labels.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
from collections.abc import Callable, Mapping
from contextvars import Token
from datetime import date, datetime
from types import TracebackType
from typing import Any, TypeVar, cast, overload

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import Span

from . import _config, _guard
from . import schema as K
from ._content import record_error
from ._stages import RequestState, current_request, first_text_arg
from ._streams import wrap_async_generator, wrap_generator

F = TypeVar("F", bound=Callable[..., Any])


def _principal(value: Any) -> tuple[str, list[str] | None]:
    """The principal's id and groups. Groups are None when the app did not name them (no principal,
    an id alone): unknown, which the analyzer never reads as a guest's empty list."""
    if value is None:
        return "", None
    if isinstance(value, str):
        return value, None
    if isinstance(value, Mapping):
        pid, groups = value.get("id"), value.get("groups")
    else:
        pid, groups = getattr(value, "id", None), getattr(value, "groups", None)
    if isinstance(groups, str):
        groups = [groups]
    return ("" if pid is None else str(pid)), (None if groups is None else [str(g) for g in groups])


def _as_of(value: Any) -> str:
    if isinstance(value, datetime):
        return value.date().isoformat()
    if isinstance(value, date):
        return value.isoformat()
    return "" if value is None else str(value)


class RequestScope:
    """One open request; enter it with ``with``/``async with`` or decorate a function."""

    def __init__(
        self,
        question: str | None = None,
        *,
        case_id: str | None = None,
        principal: Any = None,
        as_of: Any = None,
        name: str = "request",
    ) -> None:
        self.question = question
        self.case_id = case_id
        self.principal = principal
        self.as_of = as_of
        self.name = name
        self.span: Span | None = None
        self.state: RequestState | None = None
        self._state_token: Token[RequestState | None] | None = None
        self._ctx_token: Token[Context] | None = None

    # --- context manager -------------------------------------------------------
    def __enter__(self) -> RequestScope:
        self._open()
        self.enter()
        return self

    def __exit__(self, et: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.leave()
        self._close(exc)

    async def __aenter__(self) -> RequestScope:
        return self.__enter__()

    async def __aexit__(
        self, et: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.__exit__(et, exc, tb)

    # --- lifecycle: opened once, current only while the request's code runs ------------
    # A generator request (see _streams) is current between its resumes only, so a
    # second request in the same thread never joins its trace.
    def _open(self) -> None:
        tracer = _config.current_tracer()
        if tracer is None:
            return
        try:
            self.state = RequestState()
            pid, groups = _principal(self.principal)
            attrs: dict[str, Any] = {
                K.OI_SPAN_KIND: K.STAGE_KIND[K.Stage.REQUEST].value,
                K.CL_SCHEMA: K.SCHEMA_VERSION,
                K.CL_STAGE: K.Stage.REQUEST.value,
                K.CL_QUESTION: self.question or "",
            }
            if groups is not None:
                attrs[K.CL_PRINCIPAL_GROUPS] = groups
            service = _config.service_name()
            if service:
                attrs[K.CL_SERVICE] = service
            if self.question:
                attrs[K.OI_INPUT_VALUE] = self.question
                attrs[K.OI_INPUT_MIME] = K.MimeType.TEXT.value
            if self.case_id:
                attrs[K.CL_CASE_ID] = str(self.case_id)
            if pid:
                attrs[K.CL_PRINCIPAL_ID] = pid
                attrs[K.OI_USER_ID] = pid
            as_of = _as_of(self.as_of)
            if as_of:
                attrs[K.CL_AS_OF] = as_of
            self.span = tracer.start_span(self.name, attributes=attrs)
        except Exception as err:  # noqa: BLE001
            _guard.report("starting the request span", err)

    def enter(self) -> None:
        """Make this request current (its span and label map) in this thread or task."""
        if self.span is None or self.state is None:
            return
        try:
            self._state_token = current_request.set(self.state)
            self._ctx_token = otel_context.attach(trace.set_span_in_context(self.span))
        except Exception as err:  # noqa: BLE001
            _guard.report("entering the request span", err)

    def leave(self) -> None:
        """Undo :meth:`enter`."""
        try:
            if self._ctx_token is not None:
                otel_context.detach(self._ctx_token)
                self._ctx_token = None
            if self._state_token is not None:
                current_request.reset(self._state_token)
                self._state_token = None
        except Exception as err:  # noqa: BLE001
            _guard.report("leaving the request span", err)

    def item(self, value: Any) -> None:
        """A request's stream items are the app's business; nothing is recorded."""

    def end(self, exc: BaseException | None) -> None:
        """End of a generator request: returned, abandoned (closed or cancelled: not an error) or failed."""
        self._close(None if isinstance(exc, GeneratorExit | asyncio.CancelledError) else exc)

    def _close(self, exc: BaseException | None) -> None:
        try:
            if self.span is not None:
                if exc is not None:
                    record_error(self.span, exc, _config.record_content())
                self.span.end()
        except Exception as err:  # noqa: BLE001
            _guard.report("ending the request span", err)

    def set_output(self, answer: str) -> None:
        """Show the final answer on the request span in Phoenix (optional)."""
        try:
            if self.span is not None:
                self.span.set_attributes({K.OI_OUTPUT_VALUE: answer, K.OI_OUTPUT_MIME: K.MimeType.TEXT.value})
        except Exception as err:  # noqa: BLE001
            _guard.report("setting the request output", err)

    # --- feedback ---------------------------------------------------------------------
    def feedback(self, text: str, *, claim: str | None = None, chunk: str | None = None) -> None:
        """Record a user's report on this request's answer ("this source does not say that").

        While the request is open it is an event on its span; afterwards (the report arrives with
        the user's next click) a short span of the same trace carries it. Never raises."""
        try:
            attrs = {
                K.CL_FEEDBACK_TEXT: str(text),
                K.CL_FEEDBACK_CLAIM: "" if claim is None else str(claim),
                K.CL_FEEDBACK_CHUNK: "" if chunk is None else str(chunk),
            }
            span = self.span
            if span is None:
                return
            if span.is_recording():
                span.add_event(K.CL_FEEDBACK_EVENT, attrs)
                return
            tracer = _config.current_tracer()
            if tracer is None:
                return
            parent = trace.set_span_in_context(trace.NonRecordingSpan(span.get_span_context()))
            late = tracer.start_span(K.CL_FEEDBACK_EVENT, context=parent, attributes={K.CL_SCHEMA: K.SCHEMA_VERSION})
            late.add_event(K.CL_FEEDBACK_EVENT, attrs)
            late.end()
        except Exception as err:  # noqa: BLE001
            _guard.report("recording feedback", err)

    # --- decorator ----------------------------------------------------------------
    def _for_call(self, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> RequestScope:
        return RequestScope(
            self.question if self.question is not None else first_text_arg(args, kwargs, ("question", "query", "q")),
            case_id=self.case_id if self.case_id is not None else kwargs.get("case_id"),
            principal=self.principal if self.principal is not None else kwargs.get("principal"),
            as_of=self.as_of if self.as_of is not None else kwargs.get("as_of"),
            name=self.name,
        )

    def _hooks(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> RequestScope | None:
        scope = self._for_call(args, kwargs)
        scope._open()
        return scope if scope.span is not None else None

    def __call__(self, fn: F) -> F:
        if inspect.isasyncgenfunction(fn):
            return cast(F, wrap_async_generator(fn, self._hooks))
        if inspect.isgeneratorfunction(fn):
            return cast(F, wrap_generator(fn, self._hooks))
        if inspect.iscoroutinefunction(fn):

            @functools.wraps(fn)
            async def coro(*args: Any, **kwargs: Any) -> Any:
                async with self._for_call(args, kwargs):
                    return await fn(*args, **kwargs)

            return coro  # type: ignore[return-value]

        @functools.wraps(fn)
        def sync(*args: Any, **kwargs: Any) -> Any:
            with self._for_call(args, kwargs):
                return fn(*args, **kwargs)

        return sync  # type: ignore[return-value]


@overload
def request(question: F, /) -> F: ...
@overload
def request(
    question: str | None = None,
    *,
    case_id: str | None = None,
    principal: Any = None,
    as_of: Any = None,
    name: str = "request",
) -> RequestScope: ...


def request(
    question: Any = None,
    *,
    case_id: str | None = None,
    principal: Any = None,
    as_of: Any = None,
    name: str = "request",
) -> Any:
    """Open the root span of one request, as ``with request(question=...)`` or ``@request``.

    ``principal`` is an id string or ``{"id": ..., "groups": [...]}``;
    ``as_of`` a date (or ISO string) the answer must hold for. Used as a
    decorator without arguments, the question, ``case_id``, ``principal``
    and ``as_of`` are read from the call's arguments of those names.
    """
    if callable(question):
        return RequestScope()(question)
    return RequestScope(question, case_id=case_id, principal=principal, as_of=as_of, name=name)
