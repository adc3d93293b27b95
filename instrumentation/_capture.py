"""Capture the spans of the code under test in memory, whatever ``configure()`` the app did.

:func:`capture` points the decorators at a tracer provider of its own (an
in-memory exporter, sequential trace and span ids) for the length of a
``with`` block, and puts back exactly what was there before when the block
ends: the app's ``configure()`` (at import or never) is untouched and its
exporters get none of the test's spans. Used by the pytest plugin's
``citeline`` fixture and by the perturbation harness; one capture at a time
per process (pytest-xdist runs each worker in its own process).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.id_generator import IdGenerator

from . import _config

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
    """The spans one capture holds; ``spans()`` are the finished ones, in the order they ended."""

    exporter: InMemorySpanExporter
    provider: TracerProvider
    tracer: trace.Tracer

    def spans(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())

    def clear(self) -> None:
        self.exporter.clear()


class CaptureError(RuntimeError):
    """The capture could not stay in place (the code under test called ``configure()``)."""


_lock = threading.Lock()


@contextmanager
def capture(*, record_content: bool = True) -> Iterator[Captured]:
    """Send every citeline span made inside the block to memory; restore the app's setup after."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": SERVICE}), id_generator=SequentialIds())
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer(_config.SCOPE_NAME, _config.scope_version())
    captured = Captured(exporter, provider, tracer)
    settings = _config._settings
    with _lock:
        saved = (settings.tracer, settings.record_content, settings.max_attributes, settings.service_name)
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
        provider.shutdown()
    if replaced:
        raise CaptureError(
            "configure() was called while citeline captured the test's spans, so the spans after it went to "
            "the app's exporters: configure the app at import (or in a session fixture), not inside the test"
        )
