"""``configure()``: where spans go, and which TracerProvider carries them.

Fails loudly at setup (a wrong argument raises with what to do); from then
on the decorators degrade quietly.
"""

from __future__ import annotations

import functools
import inspect
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from . import _guard, settings
from . import schema as K
from ._content import ContentFilter
from ._files import DEFAULT_MAX_BYTES, OTLPJsonFileExporter, TraceFileProcessor
from .redact import redact_url

SCOPE_NAME = "citeline"
DEFAULT_TRACE_DIR = "traces"
DEFAULT_SPAN_ATTRIBUTES = 128
DEFAULT_SHUTDOWN_TIMEOUT = 5.0


@functools.cache
def scope_version() -> str:
    """citeline's version, the instrumentation scope's: read once from the package metadata, whose one
    source is pyproject.toml; in a source checkout that was never installed, from that pyproject.toml.

    Read on the first tracer, not at import: importing ``importlib.metadata`` costs the host app's
    start-up tens of milliseconds it need not pay before ``configure()``.
    """
    import importlib.metadata

    try:
        return importlib.metadata.version(SCOPE_NAME)
    except importlib.metadata.PackageNotFoundError:
        pass
    import tomllib

    try:
        with (Path(__file__).resolve().parent.parent / "pyproject.toml").open("rb") as f:
            project = tomllib.load(f)["project"]
    except (OSError, KeyError, tomllib.TOMLDecodeError):
        return "0+unknown"
    return str(project["version"]) if project.get("name") == SCOPE_NAME and "version" in project else "0+unknown"


@dataclass
class _Settings:
    tracer: trace.Tracer | None = None
    record_content: bool = True
    max_attributes: int = DEFAULT_SPAN_ATTRIBUTES
    service_name: str | None = None
    handle: Citeline | None = None


_settings = _Settings()


@dataclass
class Citeline:
    """What ``configure()`` set up; flush or shut it down when the app exits."""

    provider: Any
    trace_dir: Path | None
    otlp_endpoint: str | None = field(repr=False)  # may carry credentials: never in a repr or a log line
    record_content: bool
    owns_provider: bool
    processors: list[SpanProcessor] = field(default_factory=list)

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Write out everything buffered so far."""
        return all(p.force_flush(timeout_millis) for p in self.processors)

    def shutdown(self) -> None:
        """Flush and stop citeline's exporters, each within ``shutdown_timeout`` seconds.

        A stuck OTLP endpoint cannot hold the app's exit: what is not sent by
        then is given up and said so in the log.
        """
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


class BoundedProcessor(SpanProcessor):
    """A span processor whose shutdown and flush give up after ``timeout`` seconds.

    The inner processor's shutdown runs in a daemon thread; when it is not done
    by the deadline the app moves on (the thread dies with the process). The
    request path (``on_start``/``on_end``) is the inner processor's, untouched.
    """

    def __init__(self, inner: SpanProcessor, timeout: float, what: str) -> None:
        self.inner = inner
        self.timeout = timeout
        self.what = what
        self._done = False

    def on_start(self, span: Any, parent_context: Any = None) -> None:
        self.inner.on_start(span, parent_context=parent_context)

    def on_end(self, span: Any) -> None:
        self.inner.on_end(span)

    def _bounded(self, action: str, fn: Any, timeout: float) -> bool:
        result: list[Any] = []
        worker = threading.Thread(target=lambda: result.append(fn()), name=f"citeline-{action}", daemon=True)
        worker.start()
        worker.join(timeout)
        if worker.is_alive():
            _guard.log.warning(
                "citeline: %s of the %s did not finish within %.1f s; giving up on what it still "
                "holds so the app is not kept waiting (configure(shutdown_timeout=...) sets the bound)",
                action,
                self.what,
                timeout,  # the bound, not the time measured: a loaded machine wakes up late
            )
            return False
        return bool(result[0]) if result else True

    def shutdown(self) -> None:
        if self._done:
            return
        self._done = True
        self._bounded("shutdown", self.inner.shutdown, self.timeout)

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self._bounded("flush", lambda: self.inner.force_flush(timeout_millis), timeout_millis / 1000)


def _add_processor(provider: Any, processor: SpanProcessor) -> None:
    """Add without replacing: Phoenix's provider swaps out its own exporter unless told not to."""
    try:
        params = inspect.signature(provider.add_span_processor).parameters
    except (TypeError, ValueError):
        params = {}  # type: ignore[assignment]
    if "replace_default_processor" in params:
        provider.add_span_processor(processor, replace_default_processor=False)
    else:
        provider.add_span_processor(processor)


def _env_endpoint() -> str | None:
    traces = settings.OTLP_TRACES_ENDPOINT.get()
    if traces:
        return traces
    base = settings.OTLP_ENDPOINT.get()
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
    shutdown_timeout: float = DEFAULT_SHUTDOWN_TIMEOUT,
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
    if not shutdown_timeout > 0:
        raise ValueError("configure(shutdown_timeout=...) must be a positive number of seconds, e.g. 5")
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
    name = service_name or settings.SERVICE_NAME.get() or "citeline"
    if directory is not None:
        exporter = OTLPJsonFileExporter(directory, prefix=name, max_bytes=max_file_bytes)
        handle.processors.append(TraceFileProcessor(exporter))
    if otlp_endpoint is not None:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        otlp = OTLPSpanExporter(endpoint=otlp_endpoint, headers=headers, timeout=export_timeout)
        batch = BatchSpanProcessor(otlp, max_queue_size=65536)
        shown = redact_url(otlp_endpoint)  # the warning a stuck endpoint gives never carries its credentials
        handle.processors.append(BoundedProcessor(batch, shutdown_timeout, f"OTLP exporter to {shown}"))
    if hasattr(provider, "add_span_processor"):
        for p in handle.processors:
            # content off covers what other instrumentors send through citeline's exporters too
            _add_processor(provider, p if record_content else ContentFilter(p, SCOPE_NAME))
    elif handle.processors:
        _guard.log.warning(
            "citeline: the tracer provider %s takes no span processors; citeline's exporters "
            "are not attached and spans go wherever that provider sends them",
            type(provider).__name__,
        )
    if owns and tracer_provider is None:
        trace.set_tracer_provider(provider)
    if not owns and service_name and tracer_provider is None:
        kept = getattr(getattr(provider, "resource", None), "attributes", {}).get("service.name")
        if kept != service_name:
            _guard.log.warning(
                "citeline: joined the app's tracer provider, whose resource (service.name=%r) cannot change; "
                "service_name=%r is recorded on each request span as %s instead",
                kept,
                service_name,
                K.CL_SERVICE,
            )

    _settings.tracer = provider.get_tracer(SCOPE_NAME, scope_version())
    _settings.record_content = record_content
    _settings.max_attributes = _span_attribute_limit(provider)
    _settings.service_name = service_name or settings.SERVICE_NAME.get()
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
    _settings.tracer = provider.get_tracer(SCOPE_NAME, scope_version())
    _settings.max_attributes = _span_attribute_limit(provider)
    return _settings.tracer


def service_name() -> str | None:
    """The service name given to configure() (or OTEL_SERVICE_NAME), for the request span."""
    return _settings.service_name


def record_content() -> bool:
    """Whether content may be written to spans: chunk text, stage inputs, quotes, error messages
    (``_content.py`` says what is kept either way)."""
    return _settings.record_content


def max_attributes() -> int:
    """The span attribute count limit of the provider in use."""
    return _settings.max_attributes
