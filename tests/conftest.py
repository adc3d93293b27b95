"""Shared fixtures: an isolated tracer provider per test, trace-file readers, Phoenix."""

from __future__ import annotations

import os

# citeline's guard re-raises its own bugs under test (user hooks are still swallowed)
os.environ["CITELINE_STRICT"] = "1"

import importlib.util
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from citeline.instrumentation import Citeline, configure

pytest_plugins = ["tests.phoenix_server", "tests.dask_cluster"]


def decode_value(v: dict[str, Any]) -> Any:
    """OTLP/JSON AnyValue -> Python value."""
    if "stringValue" in v:
        return v["stringValue"]
    if "boolValue" in v:
        return v["boolValue"]
    if "intValue" in v:
        return int(v["intValue"])
    if "doubleValue" in v:
        return float(v["doubleValue"])
    if "arrayValue" in v:
        return [decode_value(x) for x in v["arrayValue"].get("values", [])]
    raise AssertionError(f"unexpected AnyValue {v}")


def read_trace_files(directory: Path) -> list[dict[str, Any]]:
    """Every span in every OTLP/JSON line under ``directory``, attributes decoded."""
    spans = []
    for path in sorted(directory.glob("*.jsonl")):
        # split on "\n" only: U+0085 and U+2028 are legal inside JSON strings
        for line in path.read_bytes().split(b"\n"):
            if not line:
                continue
            request = json.loads(line)
            for rs in request["resourceSpans"]:
                resource = {a["key"]: decode_value(a["value"]) for a in rs["resource"]["attributes"]}
                for ss in rs["scopeSpans"]:
                    for raw in ss["spans"]:
                        span = dict(raw)
                        span["attributes"] = {a["key"]: decode_value(a["value"]) for a in raw["attributes"]}
                        span["resource"] = resource
                        spans.append(span)
    return spans


def attr_str(span: ReadableSpan, key: str) -> str:
    """A span's string attribute ``key``, asserted to be a string."""
    value = (span.attributes or {})[key]
    assert isinstance(value, str), f"{key} is {value!r}, not a string"
    return value


def attr_strs(span: ReadableSpan, key: str) -> tuple[str, ...]:
    """A span's string-array attribute ``key``, asserted to be one."""
    value = (span.attributes or {})[key]
    assert isinstance(value, tuple), f"{key} is {value!r}, not an array"
    strings = tuple(v for v in value if isinstance(v, str))
    assert len(strings) == len(value), f"{key} is {value!r}, not strings"
    return strings


@dataclass
class Tracing:
    """A configured citeline writing to memory and to a trace folder."""

    handle: Citeline
    memory: InMemorySpanExporter
    trace_dir: Path

    def spans(self) -> list[ReadableSpan]:
        return list(self.memory.get_finished_spans())

    def by_stage(self, stage: str) -> list[ReadableSpan]:
        return [s for s in self.spans() if (s.attributes or {}).get("citeline.stage") == stage]

    def file_spans(self) -> list[dict[str, Any]]:
        self.handle.force_flush()
        return read_trace_files(self.trace_dir)


def make_tracing(tmp_path: Path, **kwargs: Any) -> Tracing:
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "test-bot"}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    trace_dir = tmp_path / "traces"
    handle = configure("test-bot", trace_dir=trace_dir, tracer_provider=provider, **kwargs)
    return Tracing(handle, memory, trace_dir)


def pytest_configure(config: pytest.Config) -> None:
    """hypothesis runs the suite beside pytest (properties sit in the core modules); say so in one line."""
    if importlib.util.find_spec("hypothesis") is None:
        raise pytest.UsageError(
            "citeline's tests need hypothesis beside pytest: pip install pytest hypothesis "
            "(a test that needs more skips naming it; every test: pip install 'citeline[test]')"
        )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A test that reaches the Phoenix server carries the integration mark: make test-fast never starts one."""
    unmarked = [
        item.nodeid
        for item in items
        if "phoenix" in getattr(item, "fixturenames", ()) and item.get_closest_marker("integration") is None
    ]
    if unmarked:
        raise pytest.UsageError("mark these @pytest.mark.integration, they start Phoenix: " + ", ".join(unmarked))


@pytest.fixture(autouse=True)
def _fresh_log_once_state() -> None:
    """citeline logs each kind of problem once per process; each test starts as a fresh process would."""
    from citeline.instrumentation import _guard

    with _guard._lock:
        _guard._seen.clear()


@pytest.fixture
def tracing(tmp_path: Path) -> Iterator[Tracing]:
    t = make_tracing(tmp_path)
    yield t
    t.handle.shutdown()
