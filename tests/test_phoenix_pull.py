"""Pulling from a real Phoenix loses nothing: late-ending root spans, nanoseconds, every page."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.trace import set_span_in_context

from citeline.analyzer.phoenix.pull import _ns, pull
from citeline.analyzer.store import connect
from tests.phoenix_server import PhoenixServer, wait_for_spans

pytestmark = pytest.mark.integration
T0 = 1_796_000_000_123_456_000  # ns, a whole microsecond (what Phoenix keeps)


def _provider(url: str, project: str) -> TracerProvider:
    provider = TracerProvider(resource=Resource.create({"openinference.project.name": project}))
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=f"{url}/v1/traces")))
    return provider


def _wait(url: str, project: str, n: int) -> None:
    assert len(wait_for_spans(url, project, n)) == n, f"Phoenix did not persist {n} spans"


def _stored(db: Path) -> dict[str, tuple[int, int]]:
    con = duckdb.connect(str(db))
    try:
        return {name: (s, e) for name, s, e in con.execute("SELECT name, start_ns, end_ns FROM spans").fetchall()}
    finally:
        con.close()


def test_a_root_still_open_at_the_first_pull_arrives_with_the_next(phoenix: PhoenixServer, tmp_path: Path) -> None:
    project = "pull-late-root"
    provider = _provider(phoenix.url, project)
    tracer = provider.get_tracer("t")
    root = tracer.start_span("request", start_time=T0)
    ctx = set_span_in_context(root)
    for i in range(3):  # children end (and reach Phoenix) while the root is still open
        tracer.start_span(f"child-{i}", context=ctx, start_time=T0 + (i + 1) * 1_000_000).end(
            end_time=T0 + (i + 2) * 1_000_000
        )
    _wait(phoenix.url, project, 3)
    db = tmp_path / "s.duckdb"
    con = connect(db)
    try:
        first = pull(con, phoenix.url, project, folder=tmp_path / "pulled")
        assert first.spans == 3
        root.end(end_time=T0 + 9_000_000)
        _wait(phoenix.url, project, 4)
        second = pull(con, phoenix.url, project, folder=tmp_path / "pulled")
        assert second.spans == 4  # the overlap fetches the children again; they are stored once
    finally:
        con.close()
        provider.shutdown()
    stored = _stored(db)
    assert sorted(stored) == ["child-0", "child-1", "child-2", "request"]  # the root was lost on main
    assert stored["request"] == (T0, T0 + 9_000_000)  # exact nanoseconds (a float lost the last digits)
    assert stored["child-2"] == (T0 + 3_000_000, T0 + 4_000_000)


def test_every_page_is_pulled(phoenix: PhoenixServer, tmp_path: Path) -> None:
    project = "pull-pages"
    provider = _provider(phoenix.url, project)
    tracer = provider.get_tracer("t")
    for i in range(12):
        tracer.start_span(f"s{i}", start_time=T0 + i * 1000).end(end_time=T0 + i * 1000 + 500)
    _wait(phoenix.url, project, 12)
    con = connect(tmp_path / "s.duckdb")
    try:
        report = pull(con, phoenix.url, project, folder=tmp_path / "pulled", page_size=5)
    finally:
        con.close()
        provider.shutdown()
    assert report.spans == 12
    assert len(_stored(tmp_path / "s.duckdb")) == 12


def test_timestamps_stay_integers() -> None:
    assert _ns("2026-11-30T21:07:54.123456789Z") == 1_796_072_874_123_456_789
    assert _ns("2026-11-30T21:07:54.123456+00:00") == 1_796_072_874_123_456_000
    assert _ns("2026-11-30T22:07:54+01:00") == 1_796_072_874_000_000_000
