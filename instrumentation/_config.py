"""``configure()``: where spans go, and which TracerProvider carries them.

Fails loudly at setup (a wrong argument raises with what to do); from then
on the decorators degrade quietly.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from . import _guard
from ._files import DEFAULT_MAX_BYTES, OTLPJsonFileExporter, TraceFileProcessor

SCOPE_NAME = "citeline"
SCOPE_VERSION = "0.1.0"
DEFAULT_TRACE_DIR = "traces"
DEFAULT_SPAN_ATTRIBUTES = 128


@dataclass
class _Settings:
    tracer: trace.Tracer | None = None
    record_content: bool = True
    max_attributes: int = DEFAULT_SPAN_ATTRIBUTES
    handle: Citeline | None = None


_settings = _Settings()


@dataclass
class Citeline:
    """What ``configure()`` set up; flush or shut it down when the app exits."""

    provider: Any
    trace_dir: Path | None
    otlp_endpoint: str | None
    record_content: bool
    owns_provider: bool
    processors: list[SpanProcessor] = field(default_factory=list)

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Write out everything buffered so far."""
        return all(p.force_flush(timeout_millis) for p in self.processors)

    def shutdown(self) -> None:
        """Flush and stop citeline's exporters (and the provider, if citeline made it)."""
        for p in self.processors:
            try:
                p.shutdown()
            except Exception as exc:  # noqa: BLE001 - shutdown must finish
                _guard.report("shutting down an exporter", exc)
        self.processors = []
        if _settings.handle is self:
            _settings.tracer = None
            _settings.handle = None

    @property
    def trace_files(self) -> list[Path]:
        """The OTLP/JSON files written by this configuration, oldest first."""
        for p in self.processors:
            if isinstance(p, TraceFileProcessor):
                return p.exporter.paths
        return []


def _env_endpoint() -> str | None:
    traces = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    if traces:
        return traces
    base = os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
    if base:
        return base.rstrip("/") + "/v1/traces"
    return None


def _span_attribute_limit(provider: Any) -> int:
    limits = getattr(provider, "_span_limits", None)
    value = getattr(limits, "max_span_attributes", None)
    return value if isinstance(value, int) and value > 0 else DEFAULT_SPAN_ATTRIBUTES


def configure(
    service_name: str | None = None,
    *,
    trace_dir: str | os.PathLike[str] | None = None,
    otlp_endpoint: str | None = None,
    record_content: bool = True,
    headers: dict[str, str] | None = None,
    tracer_provider: TracerProvider | None = None,
    max_file_bytes: int = DEFAULT_MAX_BYTES,
    export_timeout: float = 5.0,
) -> Citeline:
    """Send citeline spans to trace files, an OTLP endpoint, or both.

    With neither ``trace_dir`` nor ``otlp_endpoint``, the standard
    ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` / ``OTEL_EXPORTER_OTLP_ENDPOINT``
    decide; failing those, files go to ``./traces``. An SDK
    ``TracerProvider`` already installed globally (``phoenix.otel.register``,
    OpenInference auto-instrumentation) is joined, not replaced; pass
    ``tracer_provider=`` to use a specific one without touching the global.
    """
    if service_name is not None and not isinstance(service_name, str):
        raise TypeError("configure(service_name=...) must be a string such as 'policy-bot'")
    if otlp_endpoint is not None and not (
        isinstance(otlp_endpoint, str) and otlp_endpoint.startswith(("http://", "https://"))
    ):
        raise ValueError(
            f"configure(otlp_endpoint={otlp_endpoint!r}): give a full OTLP/HTTP traces URL, "
            "e.g. 'http://localhost:6006/v1/traces'"
        )
    if max_file_bytes <= 0:
        raise ValueError("configure(max_file_bytes=...) must be a positive number of bytes")
    if trace_dir is None and otlp_endpoint is None:
        otlp_endpoint = _env_endpoint()
        if otlp_endpoint is None:
            trace_dir = DEFAULT_TRACE_DIR
    directory = Path(trace_dir) if trace_dir is not None else None
    if directory is not None and directory.exists() and not directory.is_dir():
        raise ValueError(f"configure(trace_dir={str(directory)!r}): that path is a file, not a folder")

    if _settings.handle is not None:
        _guard.log.warning("citeline: configure() called again; the earlier exporters are shut down")
        _settings.handle.shutdown()

    owns = False
    provider: Any = tracer_provider
    if provider is None:
        current = trace.get_tracer_provider()
        if isinstance(current, TracerProvider) or hasattr(current, "add_span_processor"):
            provider = current  # join, do not replace
        else:
            attrs = {"service.name": service_name} if service_name else {}
            provider = TracerProvider(resource=Resource.create(attrs))
            owns = True

    handle = Citeline(
        provider=provider,
        trace_dir=directory,
        otlp_endpoint=otlp_endpoint,
        record_content=record_content,
        owns_provider=owns,
    )
    name = service_name or os.environ.get("OTEL_SERVICE_NAME") or "citeline"
    if directory is not None:
        exporter = OTLPJsonFileExporter(directory, prefix=name, max_bytes=max_file_bytes)
        handle.processors.append(TraceFileProcessor(exporter))
    if otlp_endpoint is not None:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        otlp = OTLPSpanExporter(endpoint=otlp_endpoint, headers=headers, timeout=export_timeout)
        handle.processors.append(BatchSpanProcessor(otlp, max_queue_size=65536))
    if hasattr(provider, "add_span_processor"):
        for p in handle.processors:
            provider.add_span_processor(p)
    elif handle.processors:
        _guard.log.warning(
            "citeline: the tracer provider %s takes no span processors; citeline's exporters "
            "are not attached and spans go wherever that provider sends them",
            type(provider).__name__,
        )
    if owns and tracer_provider is None:
        trace.set_tracer_provider(provider)

    _settings.tracer = provider.get_tracer(SCOPE_NAME, SCOPE_VERSION)
    _settings.record_content = record_content
    _settings.max_attributes = _span_attribute_limit(provider)
    _settings.handle = handle
    return handle


def current_tracer() -> trace.Tracer | None:
    """The tracer decorators use, or None when nothing would record spans."""
    tracer = _settings.tracer
    if tracer is not None:
        return tracer
    provider = trace.get_tracer_provider()
    if isinstance(provider, trace.ProxyTracerProvider | trace.NoOpTracerProvider):
        return None
    # somebody installed a real provider without calling configure(): join it
    _settings.tracer = provider.get_tracer(SCOPE_NAME, SCOPE_VERSION)
    _settings.max_attributes = _span_attribute_limit(provider)
    return _settings.tracer


def record_content() -> bool:
    """Whether chunk text may be written to spans."""
    return _settings.record_content


def max_attributes() -> int:
    """The span attribute count limit of the provider in use."""
    return _settings.max_attributes
