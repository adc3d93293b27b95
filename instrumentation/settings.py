"""Every environment variable citeline reads, declared once: its name, what it means, its default.

A supported, public module of ``citeline.instrumentation``. Both halves read the environment only
through it: the instrumentation (``configure()``, the error guard) and the analyzer (the judges,
Phoenix, the command line), which may import the instrumentation but never the other way round,
so the declarations live here. ``tests/test_settings.py`` fails when ``os.environ`` or ``getenv``
appears anywhere else in ``analyzer/`` or ``instrumentation/``, and when the table in
``docs/design.md`` ("Environment variables") differs from :data:`VARIABLES`.

A variable is read when it is used, never cached at import: an app or a test that sets one later
is seen. An empty value counts as unset. Arguments and options always win over the environment.
The OpenTelemetry SDK reads its own ``OTEL_*`` variables (span limits, exporter timeouts, ...)
itself; those are not citeline's.

Standard library only: this module runs inside the host app.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Final, Generic, TypeVar

D = TypeVar("D", str, None)


@dataclass(frozen=True)
class Variable(Generic[D]):
    """One environment variable citeline reads."""

    name: str
    """The variable's name, e.g. ``OTEL_SERVICE_NAME``."""
    read_by: str
    """Which part of citeline reads it."""
    meaning: str
    """What it sets, for the docs table."""
    default: D
    """What :meth:`get` gives when the variable is unset or empty (``None``: nothing)."""
    secret: bool = False
    """Its value is a credential: never shown, logged or stored."""

    def get(self) -> str | D:
        """The variable's value now, or :attr:`default` when it is unset or empty."""
        return os.environ.get(self.name) or self.default


# --- read by citeline.instrumentation ------------------------------------------------------
OTLP_TRACES_ENDPOINT: Final = Variable(
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "configure(), citeline demo",
    "the OTLP/HTTP traces URL spans go to when configure() is given neither trace_dir nor otlp_endpoint "
    "(citeline demo: beside its files, when no Phoenix URL is given)",
    None,
)
OTLP_ENDPOINT: Final = Variable(
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "configure(), citeline demo",
    "the OTLP/HTTP base URL (/v1/traces is appended) when OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is unset; "
    "with neither, spans go to files in ./traces",
    None,
)
SERVICE_NAME: Final = Variable(
    "OTEL_SERVICE_NAME",
    "configure()",
    "the service name when configure() is given none: the trace files' prefix (else 'citeline'), "
    "citeline.request.service and the Phoenix project when configure() names none",
    None,
)
STRICT: Final = Variable(
    "CITELINE_STRICT",
    "the error guard",
    "'1': citeline's own instrumentation errors raise instead of being logged once (citeline's test suite)",
    None,
)

# --- read by citeline.analyzer -----------------------------------------------------------
NLI_MODEL: Final = Variable(
    "CITELINE_NLI_MODEL",
    "the nli judge",
    "the ONNX model (an .onnx file or its folder) when --judge-option model= is not given",
    None,
)
JUDGE_MODEL: Final = Variable(
    "CITELINE_JUDGE_MODEL",
    "the llm judge",
    "the model name when --judge-option model= is not given",
    None,
)
OPENAI_MODEL: Final = Variable(
    "OPENAI_MODEL",
    "the llm judge",
    "the model name when neither --judge-option model= nor CITELINE_JUDGE_MODEL is given",
    None,
)
OPENAI_BASE_URL: Final = Variable(
    "OPENAI_BASE_URL",
    "the llm judge",
    "the OpenAI-compatible endpoint when --judge-option base_url= is not given",
    "https://api.openai.com/v1",
)
OPENAI_API_KEY: Final = Variable(
    "OPENAI_API_KEY",
    "the llm judge",
    "the endpoint's API key when --judge-option api_key= is not given (prefer the variable: the shell "
    "history keeps a flag)",
    None,
    secret=True,
)
PHOENIX_API_KEY: Final = Variable(
    "PHOENIX_API_KEY",
    "Phoenix pull, annotate, dataset import",
    "the bearer key for a Phoenix that requires authentication",
    None,
    secret=True,
)
OTLP_LOGS_ENDPOINT: Final = Variable(
    "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT",
    "configure(), citeline export",
    "the OTLP/HTTP logs URL: configure()'s log records go there (else the traces collector's /v1/logs), "
    "and citeline export's evaluation events when --otlp names none",
    None,
)
OTLP_HEADERS: Final = Variable(
    "OTEL_EXPORTER_OTLP_HEADERS",
    "citeline export (through the OpenTelemetry SDK)",
    "headers (credentials) sent with every OTLP request, key=value pairs separated by commas",
    None,
    secret=True,
)
OTLP_LOGS_HEADERS: Final = Variable(
    "OTEL_EXPORTER_OTLP_LOGS_HEADERS",
    "citeline export (through the OpenTelemetry SDK)",
    "headers sent with OTLP log requests only, as OTEL_EXPORTER_OTLP_HEADERS",
    None,
    secret=True,
)
PHOENIX_URL: Final = Variable(
    "CITELINE_PHOENIX_URL",
    "the command line",
    "the Phoenix URL analyze and report link each failing claim to, and citeline demo sends its spans to "
    "and annotates, when --phoenix is not given",
    None,
)


def otlp_traces_endpoint() -> str | None:
    """Where OTLP/HTTP spans go by the standard variables: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, else
    OTEL_EXPORTER_OTLP_ENDPOINT with /v1/traces appended; None with neither."""
    traces = OTLP_TRACES_ENDPOINT.get()
    if traces:
        return traces
    base = OTLP_ENDPOINT.get()
    return base.rstrip("/") + "/v1/traces" if base else None


VARIABLES: Final[tuple[Variable[str] | Variable[None], ...]] = (
    OTLP_TRACES_ENDPOINT,
    OTLP_ENDPOINT,
    SERVICE_NAME,
    STRICT,
    NLI_MODEL,
    JUDGE_MODEL,
    OPENAI_MODEL,
    OPENAI_BASE_URL,
    OPENAI_API_KEY,
    PHOENIX_API_KEY,
    OTLP_LOGS_ENDPOINT,
    OTLP_HEADERS,
    OTLP_LOGS_HEADERS,
    PHOENIX_URL,
)
"""Every variable citeline reads, in the order of the docs table."""
