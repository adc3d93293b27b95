"""Capture the spans of the code under test in memory, whatever ``configure()`` the app did.

:func:`capture` points the decorators at a tracer provider of its own (an
in-memory exporter, sequential trace and span ids) for the length of a
``with`` block, and takes over the app's own tracer providers for as long:
the provider ``configure()`` returned (``handle.provider``) and the global
one, when either is an SDK ``TracerProvider``. A span an instrumentor
(OpenInference, OpenTelemetry GenAI) starts on them inside the block gets
the capture's ids and ends into the capture, on whichever thread it ends and
whenever it ends (a span still open when the block ends is dropped, never
exported); a span started before the block ends where it always did. When
the block ends, each provider's processors and id generator are exactly
those it had, so the app's exporters get none of the test's spans and every
later span again. The log records the app's logger providers
(``handle.logger_provider``, the global one) are given inside the block (GenAI
content as events) are the capture's too, and kept from the app's log exporters.

With no SDK provider at all (no ``configure()``, no global provider set),
OpenTelemetry itself makes an instrumentor's spans no-ops, in a test as in
production; the capture installs no global provider of its own, because
OpenTelemetry lets the global be set once per process and that could not be
undone after the block.

Used by the pytest plugin's ``citeline`` fixture and by the perturbation
harness; one capture at a time per process (a capture inside another takes
over from it until it ends; pytest-xdist runs each worker in its own process).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from typing import Any

from opentelemetry import _logs, trace
from opentelemetry.sdk._logs import LogRecordProcessor
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.id_generator import IdGenerator

from . import _config, _guard

SERVICE = "citeline-test"


class SequentialIds(IdGenerator):
    """Trace and span ids 1, 2, 3, ... per capture: failure messages name the same span on every run."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._trace = 0
        self._span = 0

    def generate_trace_id(self) -> int:
        with self._lock:
            self._trace += 1
            return self._trace

    def generate_span_id(self) -> int:
        with self._lock:
            self._span += 1
            return self._span


@dataclass
class Captured:
    """The spans one capture holds; ``spans()`` are the finished ones, in the order they ended.

    ``providers`` are the app's tracer providers the capture took over (``handle.provider``, the
    global one): the spans instrumentors made on them are here too, with the capture's ids.
    ``log_records()`` are the records the app's logger providers (``handle.logger_provider``, the
    global one) were given meanwhile: GenAI content captured as events, part of the trace.
    """

    exporter: InMemorySpanExporter
    provider: TracerProvider
    tracer: trace.Tracer
    providers: list[Any] = field(default_factory=list)
    logs: InMemoryLogRecordExporter = field(default_factory=InMemoryLogRecordExporter)
    logger_providers: list[Any] = field(default_factory=list)

    def spans(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())

    def log_records(self) -> list[Any]:
        """The log records emitted so far (``ReadableLogRecord``s), in the order they were emitted."""
        return list(self.logs.get_finished_logs())

    def clear(self) -> None:
        self.exporter.clear()
        self.logs.clear()


class CaptureError(RuntimeError):
    """The capture could not stay in place (the code under test called ``configure()``)."""


_lock = threading.Lock()


class _Divert(SpanProcessor):
    """Stands in for an app provider's span processors while a capture is on.

    A span started now is handed to the capture (its ``on_start``) and told to end there
    (its ``_span_processor``), so it reaches the capture wherever and whenever it ends. Only
    spans started before the capture still end through here: those go to the app's own
    processors, as they would have.
    """

    def __init__(self, app: tuple[SpanProcessor, ...], into: Any) -> None:
        self.app = app
        self.into = into
        self._stuck: set[tuple[int, int]] = set()  # started in the capture, not told where to end

    def on_start(self, span: Any, parent_context: Any = None) -> None:
        try:
            span._span_processor = self.into  # an SDK span ends into the processor it holds
        except Exception as exc:  # noqa: BLE001 - a span of another make: ended through here, below
            self._stuck.add((span.context.trace_id, span.context.span_id))
            _guard.report("sending an instrumentor's span to the capture", exc)
        self.into.on_start(span, parent_context=parent_context)

    def _on_ending(self, span: Any) -> None:
        if (span.context.trace_id, span.context.span_id) in self._stuck:
            self.into._on_ending(span)
            return
        for p in self.app:
            p._on_ending(span)

    def on_end(self, span: ReadableSpan) -> None:
        key = (span.context.trace_id, span.context.span_id) if span.context is not None else None
        if key in self._stuck:
            self._stuck.discard(key)  # type: ignore[arg-type]
            self.into.on_end(span)
            return
        for p in self.app:
            p.on_end(span)

    def shutdown(self) -> None:
        for p in self.app:
            p.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        flushed = [p.force_flush(timeout_millis) for p in self.app]
        return all(flushed)


class _Until(SpanProcessor):
    """The capture's exporter while the capture is on; a span that ends after it is dropped, quietly."""

    def __init__(self, inner: SpanProcessor) -> None:
        self.inner = inner
        self.open = True

    def on_start(self, span: Any, parent_context: Any = None) -> None:
        if self.open:
            self.inner.on_start(span, parent_context=parent_context)

    def on_end(self, span: ReadableSpan) -> None:
        if self.open:
            self.inner.on_end(span)

    def shutdown(self) -> None:
        self.open = False
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self.inner.force_flush(timeout_millis)


_ID_METHODS = ("generate_trace_id", "generate_span_id", "is_trace_id_random")


@contextmanager
def _take_over(provider: Any, into: Any, ids: SequentialIds) -> Iterator[None]:
    """``provider``'s spans into ``into`` with ``ids`` for the block; its processors and id generator after.

    Its processors are swapped first and put back last, so no span with the capture's ids
    ever reaches the app's processors.
    """
    multi = provider._active_span_processor
    with multi._lock:
        saved = multi._span_processors
        if not isinstance(saved, tuple):
            raise TypeError(f"{type(multi).__name__} keeps its processors in a {type(saved).__name__}")
        divert = _Divert(saved, into)
        multi._span_processors = (divert,)
    kept: tuple[type, dict[str, Any]] | None = None
    try:
        kept = _lend_ids(provider, ids)
        yield
    finally:
        if kept is not None:
            _restore_ids(provider.id_generator, kept)
        with multi._lock:
            # a processor the code under test added meanwhile stays, after the app's own
            added = tuple(p for p in multi._span_processors if p is not divert)
            multi._span_processors = saved + added


def _lend_ids(provider: Any, ids: SequentialIds) -> tuple[type, dict[str, Any]] | None:
    """Make ``provider``'s id generator draw from ``ids``; what to restore, None when it would not take them
    (its spans then keep their own ids)."""
    generator: Any = provider.id_generator
    kept: tuple[type, dict[str, Any]] | None = None
    try:
        kept = (type(generator), {name: vars(generator)[name] for name in _ID_METHODS if name in vars(generator)})
        generator.generate_trace_id = ids.generate_trace_id
        generator.generate_span_id = ids.generate_span_id
        generator.is_trace_id_random = ids.is_trace_id_random
        # a class of its own for the block: OpenInference's tracer draws ids of its own when the
        # provider's generator is exactly the SDK's RandomIdGenerator
        generator.__class__ = _stand_in_class(type(generator))
    except Exception:  # noqa: BLE001 - the app's generator takes no attributes: its spans keep their ids
        if kept is not None:
            _restore_ids(generator, kept)
        _guard.warn_once(
            f"capture-ids-{type(generator).__name__}",
            f"citeline: the tracer provider's id generator ({type(generator).__name__}) cannot lend the "
            "capture's ids: spans made on it in a test are captured with ids of its own",
        )
        return None
    return kept


def _restore_ids(generator: Any, kept: tuple[type, dict[str, Any]]) -> None:
    cls, methods = kept
    if type(generator) is not cls:
        generator.__class__ = cls
    for name in _ID_METHODS:
        if name in methods:
            setattr(generator, name, methods[name])
        elif name in vars(generator):
            delattr(generator, name)


_STAND_INS: dict[type, type] = {}


def _stand_in_class(cls: type) -> type:
    """A subclass of an id generator's class that changes nothing: the instance's own methods decide."""
    if cls not in _STAND_INS:
        _STAND_INS[cls] = type(f"Captured{cls.__name__}", (cls,), {"__module__": __name__})
    return _STAND_INS[cls]


@contextmanager
def _take_over_logs(logger_provider: Any, into: LogRecordProcessor) -> Iterator[None]:
    """``logger_provider``'s records into ``into`` for the block; its own processors after (a record has no
    start and end: what is emitted inside the block is the capture's)."""
    multi = logger_provider._multi_log_record_processor
    with multi._lock:
        saved = multi._log_record_processors
        if not isinstance(saved, tuple):
            raise TypeError(f"{type(multi).__name__} keeps its processors in a {type(saved).__name__}")
        multi._log_record_processors = (into,)
    try:
        yield
    finally:
        with multi._lock:
            added = tuple(p for p in multi._log_record_processors if p is not into)
            multi._log_record_processors = saved + added


def _app_logger_providers() -> list[Any]:
    """The app's SDK logger providers: ``handle.logger_provider``, the global one."""
    handle = _config._settings.handle
    found: list[Any] = []
    for provider in (getattr(handle, "logger_provider", None), _logs.get_logger_provider()):
        multi = getattr(provider, "_multi_log_record_processor", None)
        if (
            hasattr(multi, "_log_record_processors")
            and hasattr(multi, "_lock")
            and all(provider is not p for p in found)
        ):
            found.append(provider)
    return found


def _app_providers() -> list[Any]:
    """The app's SDK tracer providers an instrumentor may have been handed: ``handle.provider``, the global."""
    handle = _config._settings.handle
    found: list[Any] = []
    for provider in (getattr(handle, "provider", None), trace.get_tracer_provider()):
        multi = getattr(provider, "_active_span_processor", None)
        if (
            isinstance(getattr(multi, "_span_processors", None), tuple)
            and hasattr(multi, "_lock")
            and all(provider is not p for p in found)
        ):
            found.append(provider)
    return found


@contextmanager
def capture(*, record_content: bool = True) -> Iterator[Captured]:
    """Send every span made inside the block to memory: citeline's, and the instrumentors' on the app's
    providers; restore the app's setup after."""
    exporter = InMemorySpanExporter()
    ids = SequentialIds()
    provider = TracerProvider(resource=Resource.create({"service.name": SERVICE}), id_generator=ids)
    provider.add_span_processor(_Until(SimpleSpanProcessor(exporter)))
    tracer = provider.get_tracer(_config.SCOPE_NAME, _config.scope_version())
    captured = Captured(exporter, provider, tracer)
    settings = _config._settings
    with ExitStack() as taken:
        with _lock:
            saved = (settings.tracer, settings.record_content, settings.max_attributes, settings.service_name)
            for app_provider in _app_providers():
                try:
                    taken.enter_context(_take_over(app_provider, provider._active_span_processor, ids))
                except Exception as exc:  # noqa: BLE001 - a provider not as the SDK makes it is left alone
                    _guard.report("capturing the spans of the app's tracer provider", exc)
                else:
                    captured.providers.append(app_provider)
            into_logs = SimpleLogRecordProcessor(captured.logs)
            for logger_provider in _app_logger_providers():
                try:
                    taken.enter_context(_take_over_logs(logger_provider, into_logs))
                except Exception as exc:  # noqa: BLE001 - a provider not as the SDK makes it is left alone
                    _guard.report("capturing the log records of the app's logger provider", exc)
                else:
                    captured.logger_providers.append(logger_provider)
            settings.tracer = tracer
            settings.record_content = record_content
            settings.max_attributes = _config.DEFAULT_SPAN_ATTRIBUTES
            settings.service_name = None
        try:
            yield captured
        finally:
            with _lock:
                replaced = settings.tracer is not tracer
                if not replaced:
                    settings.tracer, settings.record_content, settings.max_attributes, settings.service_name = saved
                taken.close()
            provider.shutdown()
    if replaced:
        raise CaptureError(
            "configure() was called while citeline captured the test's spans, so the spans after it went to "
            "the app's exporters: configure the app at import (or in a session fixture), not inside the test"
        )
