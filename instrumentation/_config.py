"""``configure()``: where spans and log records go, and which providers carry them.

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
from typing import Any, Generic, TypeVar
from urllib.parse import urlsplit, urlunsplit

from opentelemetry import _logs, trace
from opentelemetry.sdk._logs import LoggerProvider, LogRecordProcessor, ReadWriteLogRecord
from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from . import _guard, settings
from . import schema as K
from ._content import ContentFilter, LogContentFilter
from ._files import DEFAULT_MAX_BYTES, OTLPJsonFileExporter, OTLPJsonLogExporter, TraceFileProcessor
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
    """What ``configure()`` set up; flush or shut it down when the app exits.

    Hand ``provider`` and ``logger_provider`` to instrumentors
    (``OpenAIInstrumentor().instrument(tracer_provider=handle.provider,
    logger_provider=handle.logger_provider)``): spans and the log records they emit
    (GenAI content as events) reach the same trace files and endpoint."""

    provider: Any
    trace_dir: Path | None
    otlp_endpoint: str | None = field(repr=False)  # may carry credentials: never in a repr or a log line
    record_content: bool
    owns_provider: bool
    processors: list[SpanProcessor] = field(default_factory=list)
    logger_provider: Any = None
    """The LoggerProvider whose records citeline writes (None with ``record_logs=False``)."""
    log_processors: list[LogRecordProcessor] = field(default_factory=list)
    log_exporter: OTLPJsonLogExporter | None = field(default=None, repr=False)

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Write out everything buffered so far: spans, then log records."""
        spans = all(p.force_flush(timeout_millis) for p in self.processors)
        return all(p.force_flush(timeout_millis) for p in self.log_processors) and spans

    def shutdown(self) -> None:
        """Flush and stop citeline's exporters, each within ``shutdown_timeout`` seconds.

        A stuck OTLP endpoint cannot hold the app's exit: what is not sent by
        then is given up and said so in the log.
        """
        processors: list[Any] = [*self.processors, *self.log_processors]
        for p in processors:
            try:
                p.shutdown()
            except Exception as exc:  # noqa: BLE001 - shutdown must finish
                _guard.report("shutting down an exporter", exc)
        self.processors = []
        self.log_processors = []
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

    @property
    def log_files(self) -> list[Path]:
        """The OTLP/JSON log files (``resourceLogs`` lines) written by this configuration, oldest first."""
        return self.log_exporter.paths if self.log_exporter is not None else []


_P = TypeVar("_P", SpanProcessor, LogRecordProcessor)


class _Bounded(Generic[_P]):
    """Shutdown and flush that give up after ``timeout`` seconds: what :class:`BoundedProcessor` and
    :class:`BoundedLogProcessor` share.

    The inner processor's shutdown runs in a daemon thread; when it is not done
    by the deadline the app moves on (the thread dies with the process).
    """

    def __init__(self, inner: _P, timeout: float, what: str) -> None:
        self.inner: _P = inner
        self.timeout = timeout
        self.what = what
        self._done = False

    def shutdown(self) -> None:
        if self._done:
            return
        self._done = True
        _bounded(self.what, "shutdown", self.inner.shutdown, self.timeout)

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return _bounded(self.what, "flush", lambda: self.inner.force_flush(timeout_millis), timeout_millis / 1000)


class BoundedProcessor(_Bounded[SpanProcessor], SpanProcessor):
    """A span processor whose shutdown and flush give up after ``timeout`` seconds (:class:`_Bounded`).

    The request path (``on_start``/``on_end``) is the inner processor's, untouched.
    """

    def on_start(self, span: Any, parent_context: Any = None) -> None:
        self.inner.on_start(span, parent_context=parent_context)

    def on_end(self, span: Any) -> None:
        self.inner.on_end(span)


class BoundedLogProcessor(_Bounded[LogRecordProcessor], LogRecordProcessor):
    """:class:`BoundedProcessor` for log records: shutdown and flush give up after ``timeout`` seconds."""

    def on_emit(self, log_record: ReadWriteLogRecord) -> None:
        if not self._done:
            self.inner.on_emit(log_record)


def _bounded(what: str, action: str, fn: Any, timeout: float) -> bool:
    """``fn()`` in a daemon thread, waited for at most ``timeout`` seconds (then given up, said so)."""
    result: list[Any] = []
    worker = threading.Thread(target=lambda: result.append(fn()), name=f"citeline-{action}", daemon=True)
    worker.start()
    worker.join(timeout)
    if worker.is_alive():
        _guard.log.warning(
            "citeline: %s of the %s did not finish within %.1f s; giving up on what it still "
            "holds so the app is not kept waiting (configure(shutdown_timeout=...) sets the bound)",
            action,
            what,
            timeout,  # the bound, not the time measured: a loaded machine wakes up late
        )
        return False
    return bool(result[0]) if result else True


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


def _logs_endpoint(traces_endpoint: str) -> str | None:
    """Where log records go when spans go to ``traces_endpoint``: the standard
    ``OTEL_EXPORTER_OTLP_LOGS_ENDPOINT``, else the same collector's ``/v1/logs`` (the traces URL's
    ``/v1/traces`` path swapped, its query kept); None when neither applies."""
    env = settings.OTLP_LOGS_ENDPOINT.get()
    if env:
        return env
    parts = urlsplit(traces_endpoint)
    if not parts.path.rstrip("/").endswith("/v1/traces"):
        return None
    path = parts.path.rstrip("/").removesuffix("/v1/traces") + "/v1/logs"
    return urlunsplit((parts.scheme, parts.netloc, path, parts.query, parts.fragment))


def _logger_provider(given: Any, tracer_given: bool, provider: Any) -> tuple[Any, bool]:
    """The LoggerProvider to write from, and whether configure() made it: the one given, else the
    global SDK one (joined, as for spans), else a new one with the tracer provider's resource."""
    if given is not None:
        return given, False
    if not tracer_given:
        current = _logs.get_logger_provider()
        if isinstance(current, LoggerProvider) or hasattr(current, "add_log_record_processor"):
            return current, False
    resource = getattr(provider, "resource", None)
    return LoggerProvider(resource=resource if isinstance(resource, Resource) else Resource.create({})), True


def _resource(service_name: str | None, project: str | None) -> Resource:
    """The resource of a provider configure() makes: the service name, and the Phoenix project
    (``project``, else an ``openinference.project.name`` from ``OTEL_RESOURCE_ATTRIBUTES``, else the
    service name the resource ends up with, given or from ``OTEL_SERVICE_NAME``)."""
    resource = Resource.create({"service.name": service_name} if service_name else {})
    named = project
    if named is None and K.OI_PROJECT_NAME not in resource.attributes:
        named = service_name or settings.SERVICE_NAME.get()
    return resource.merge(Resource({K.OI_PROJECT_NAME: named})) if named else resource


def _span_attribute_limit(provider: Any) -> int:
    limits = getattr(provider, "_span_limits", None)
    value = getattr(limits, "max_span_attributes", None)
    return value if isinstance(value, int) and value > 0 else DEFAULT_SPAN_ATTRIBUTES


def configure(  # noqa: C901, PLR0912, PLR0913 - the public setup call: one keyword and one check per documented option
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
    record_logs: bool = True,
    logger_provider: LoggerProvider | None = None,
    project: str | None = None,
) -> Citeline:
    """Send citeline spans, and the log records instrumentors emit, to trace files, an OTLP endpoint, or both.

    With neither ``trace_dir`` nor ``otlp_endpoint``, the standard
    ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` / ``OTEL_EXPORTER_OTLP_ENDPOINT``
    decide; failing those, files go to ``./traces``. An SDK
    ``TracerProvider`` already installed globally (``phoenix.otel.register``,
    OpenInference auto-instrumentation) is joined, not replaced; pass
    ``tracer_provider=`` to use a specific one without touching the global.

    Log records (GenAI content captured as events, ``gen_ai.client.inference.operation.details``)
    are part of the trace: ``handle.logger_provider`` writes them beside the spans (``<name>-logs-``
    files in the same folder, ``/v1/logs`` of the same collector) under the same ``record_content``
    rule. Hand it to instrumentors as ``logger_provider=``; a global SDK ``LoggerProvider`` is joined,
    else the new one is installed globally (unless ``tracer_provider=`` was given).
    ``record_logs=False`` sets none up.

    The Phoenix project the spans land in is ``project``, else the service name (``service_name``,
    else ``OTEL_SERVICE_NAME``), written as the resource attribute ``openinference.project.name``
    (an ``openinference.project.name`` in ``OTEL_RESOURCE_ATTRIBUTES`` wins over the service name,
    not over ``project``); with neither, Phoenix's ``default`` project. A joined provider keeps
    its own resource, hence its own project.
    """
    if service_name is not None and not isinstance(service_name, str):
        raise TypeError("configure(service_name=...) must be a string such as 'policy-bot'")
    if project is not None and not (isinstance(project, str) and project.strip()):
        raise ValueError("configure(project=...) must be a non-empty string such as 'policy-bot' (the Phoenix project)")
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
    if logger_provider is not None and not hasattr(logger_provider, "add_log_record_processor"):
        raise TypeError(
            "configure(logger_provider=...) must be an OpenTelemetry SDK LoggerProvider "
            "(opentelemetry.sdk._logs.LoggerProvider), the one the app's instrumentors are given"
        )
    if trace_dir is None and otlp_endpoint is None:
        otlp_endpoint = settings.otlp_traces_endpoint()
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
            provider = TracerProvider(resource=_resource(service_name, project))
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
    if record_logs:
        _set_up_logs(
            handle,
            logger_provider,
            tracer_provider is not None,
            name,
            max_file_bytes,
            headers,
            export_timeout,
            shutdown_timeout,
        )
    if not owns:
        _say_what_a_joined_provider_keeps(provider, service_name if tracer_provider is None else None, project)

    _settings.tracer = provider.get_tracer(SCOPE_NAME, scope_version())
    _settings.record_content = record_content
    _settings.max_attributes = _span_attribute_limit(provider)
    _settings.service_name = service_name or settings.SERVICE_NAME.get()
    _settings.handle = handle
    return handle


def _say_what_a_joined_provider_keeps(provider: Any, service_name: str | None, project: str | None) -> None:
    """A joined provider's resource cannot change: log once when it names another service or project."""
    if service_name:
        kept = getattr(getattr(provider, "resource", None), "attributes", {}).get("service.name")
        if kept != service_name:
            _guard.log.warning(
                "citeline: joined the app's tracer provider, whose resource (service.name=%r) cannot change; "
                "service_name=%r is recorded on each request span as %s instead",
                kept,
                service_name,
                K.CL_SERVICE,
            )
    if project is not None:
        kept = getattr(getattr(provider, "resource", None), "attributes", {}).get(K.OI_PROJECT_NAME)
        if kept != project:
            _guard.log.warning(
                "citeline: the tracer provider's resource (%s=%r) cannot change, so its spans do not land in "
                "project=%r; name the project where that provider is made (phoenix.otel.register(project_name=...))",
                K.OI_PROJECT_NAME,
                kept,
                project,
            )


def _set_up_logs(
    handle: Citeline,
    given: LoggerProvider | None,
    tracer_given: bool,
    name: str,
    max_file_bytes: int,
    headers: dict[str, str] | None,
    export_timeout: float,
    shutdown_timeout: float,
) -> None:
    """A LoggerProvider beside the tracer provider, writing where the spans go, content as they do."""
    logger_provider, owns = _logger_provider(given, tracer_given, handle.provider)
    handle.logger_provider = logger_provider
    if handle.trace_dir is not None:
        exporter = OTLPJsonLogExporter(handle.trace_dir, prefix=name, max_bytes=max_file_bytes)
        handle.log_exporter = exporter
        batch = BatchLogRecordProcessor(exporter, schedule_delay_millis=500)
        handle.log_processors.append(BoundedLogProcessor(batch, shutdown_timeout, "log file exporter"))
    if handle.otlp_endpoint is not None:
        endpoint = _logs_endpoint(handle.otlp_endpoint)
        if endpoint is None:
            _guard.log.warning(
                "citeline: the OTLP traces endpoint %s does not end in /v1/traces, so its logs endpoint "
                "is unknown: log records are not sent over OTLP (set OTEL_EXPORTER_OTLP_LOGS_ENDPOINT)",
                redact_url(handle.otlp_endpoint),
            )
        else:
            from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter

            otlp = OTLPLogExporter(endpoint=endpoint, headers=headers, timeout=export_timeout)
            batch = BatchLogRecordProcessor(otlp, max_queue_size=65536)
            shown = f"OTLP log exporter to {redact_url(endpoint)}"
            handle.log_processors.append(BoundedLogProcessor(batch, shutdown_timeout, shown))
    for p in handle.log_processors:
        # content off covers the records other instrumentors emit through citeline's exporters too
        logger_provider.add_log_record_processor(p if handle.record_content else LogContentFilter(p))
    if owns and not tracer_given:
        _logs.set_logger_provider(logger_provider)


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
