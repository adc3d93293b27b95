"""Joining the host's tracer provider keeps every exporter it had; shutdown never hangs the app.

Each scenario runs in a subprocess: the global tracer provider can be set
once per process.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from citeline.instrumentation import configure
from tests.conftest import read_trace_files
from tests.phoenix_server import PhoenixServer, wait_for_spans

APP = """
from citeline.instrumentation import configure, retrieval, generation, request

@retrieval
def search(q):
    return [{"doc_id": "d", "chunk_id": "d#1", "text": "Thirty days."}]

@generation
def answer(prompt):
    return "Thirty days [1]."

def ask(q):
    with request(question=q):
        answer(search(q))
"""

PHOENIX_REGISTER = (
    textwrap.dedent(
        """
        import json, sys
        from phoenix.otel import register
        tracer_provider = register(project_name=sys.argv[2], endpoint=sys.argv[1] + "/v1/traces", batch=False,
                                   verbose=False)
        """
    )
    + APP
    + textwrap.dedent(
        """
    handle = configure(service_name="policy-bot", trace_dir=sys.argv[3])
    for i in range(3):
        ask(f"question {i}")
    handle.force_flush()
    tracer_provider.force_flush()
    handle.shutdown()
    """
    )
)


@pytest.mark.integration
def test_phoenix_register_keeps_sending_to_phoenix_after_configure(phoenix: PhoenixServer, tmp_path: Path) -> None:
    project = "host-keeps-phoenix"
    subprocess.run(
        [sys.executable, "-c", PHOENIX_REGISTER, phoenix.url, project, str(tmp_path / "t")],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    # every span reaches Phoenix through the host's own exporter ...
    spans = wait_for_spans(phoenix.url, project, 9)
    assert sorted(s["name"] for s in spans) == ["answer"] * 3 + ["request"] * 3 + ["search"] * 3
    # ... and the same spans land in citeline's trace files
    files = read_trace_files(tmp_path / "t")
    assert sorted(s["name"] for s in files) == sorted(s["name"] for s in spans)
    assert {s["spanId"] for s in files} == {s["context"]["span_id"] for s in spans}
    # the host's resource is kept; the name citeline was given is on each request span
    requests = [s for s in files if s["name"] == "request"]
    assert {s["attributes"]["citeline.request.service"] for s in requests} == {"policy-bot"}


PLAIN_SDK = (
    textwrap.dedent(
        """
    import json, logging, sys
    from opentelemetry import trace
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="%(message)s")
    simple, batched = InMemorySpanExporter(), InMemorySpanExporter()
    theirs = TracerProvider(resource=Resource.create({"service.name": "host-service"}))
    theirs.add_span_processor(SimpleSpanProcessor(simple))
    theirs.add_span_processor(BatchSpanProcessor(batched))
    trace.set_tracer_provider(theirs)
    """
    )
    + APP
    + textwrap.dedent(
        """
    handle = configure(service_name="policy-bot", trace_dir=sys.argv[1])
    ask("q")
    handle.force_flush()
    theirs.force_flush()
    handle.shutdown()
    print(json.dumps({
        "simple": sorted(s.name for s in simple.get_finished_spans()),
        "batched": sorted(s.name for s in batched.get_finished_spans()),
    }))
    """
    )
)


def test_plain_sdk_provider_keeps_its_processors_and_says_the_resource_was_kept(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-c", PLAIN_SDK, str(tmp_path / "t")],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert json.loads(out.stdout) == {
        "simple": ["answer", "request", "search"],
        "batched": ["answer", "request", "search"],
    }
    said = [line for line in out.stderr.splitlines() if "resource" in line]
    assert said == [
        "citeline: joined the app's tracer provider, whose resource (service.name='host-service') cannot "
        "change; service_name='policy-bot' is recorded on each request span as citeline.request.service instead"
    ]
    spans = read_trace_files(tmp_path / "t")
    (req,) = [s for s in spans if s["name"] == "request"]
    assert req["resource"]["service.name"] == "host-service"
    assert req["attributes"]["citeline.request.service"] == "policy-bot"


@pytest.fixture
def silent_endpoint() -> Iterator[str]:
    """A loopback server that accepts connections and reads requests, but never answers."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            held.append(conn)

    worker = threading.Thread(target=accept, daemon=True)
    worker.start()
    try:
        yield f"http://127.0.0.1:{server.getsockname()[1]}/v1/traces"
    finally:
        stop.set()
        worker.join(2)
        for conn in held:
            conn.close()
        server.close()


SHUTDOWN = textwrap.dedent(
    """
    import json, sys, time
    from citeline.instrumentation import configure, retrieval, request
    handle = configure(service_name="bot", otlp_endpoint=sys.argv[1], **json.loads(sys.argv[2]))

    @retrieval
    def search(q):
        return [{"doc_id": "d", "chunk_id": "d#1"}]

    t0 = time.monotonic()
    for i in range(1000):
        with request(question="q"):
            search("q")
    served = time.monotonic() - t0
    t1 = time.monotonic()
    handle.shutdown()
    print(json.dumps({"served": served, "shutdown": time.monotonic() - t1}))
    """
)


@pytest.mark.slow
@pytest.mark.parametrize(("options", "bound"), [({}, 5.0), ({"shutdown_timeout": 1.0}, 1.0)])
def test_shutdown_is_bounded_when_the_endpoint_never_answers(
    silent_endpoint: str, options: dict[str, float], bound: float
) -> None:
    out = subprocess.run(
        [sys.executable, "-c", SHUTDOWN, silent_endpoint, json.dumps(options)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    timing = json.loads(out.stdout)
    assert timing["served"] < 5.0  # the request path never waits on the exporter
    assert bound - 0.5 < timing["shutdown"] < bound + 1.5
    assert f"did not finish within {bound:.1f} s" in out.stderr


@pytest.mark.parametrize(
    ("service", "project", "env", "landed"),
    [
        ("policy-bot", None, {}, {"service.name": "policy-bot", "openinference.project.name": "policy-bot"}),
        ("policy-bot", "rag-eval", {}, {"service.name": "policy-bot", "openinference.project.name": "rag-eval"}),
        (None, None, {"OTEL_SERVICE_NAME": "svc"}, {"service.name": "svc", "openinference.project.name": "svc"}),
        (
            "policy-bot",
            None,
            {"OTEL_RESOURCE_ATTRIBUTES": "openinference.project.name=from-env"},
            {"service.name": "policy-bot", "openinference.project.name": "from-env"},
        ),
        (
            "policy-bot",
            "given",
            {"OTEL_RESOURCE_ATTRIBUTES": "openinference.project.name=from-env"},
            {"service.name": "policy-bot", "openinference.project.name": "given"},
        ),
        (None, None, {}, {}),  # no project: Phoenix's default one
    ],
)
def test_the_phoenix_project_is_project_else_the_service_name(
    service: str | None,
    project: str | None,
    env: dict[str, str],
    landed: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """docs/phoenix.md "Which project spans land in": the resource of a provider configure() makes."""
    from citeline.instrumentation._config import _resource

    for name in ("OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    attrs = dict(_resource(service, project).attributes)
    named = str(attrs.pop("service.name"))
    assert named == landed.pop("service.name") if "service.name" in landed else named.startswith("unknown_service")
    assert {k: v for k, v in attrs.items() if k == "openinference.project.name"} == landed


def test_an_empty_project_is_refused_at_setup() -> None:
    with pytest.raises(ValueError, match=r"configure\(project=\.\.\.\) must be a non-empty string"):
        configure("policy-bot", project=" ")


JOINED_PROJECT = textwrap.dedent(
    """
    import sys
    from opentelemetry import trace
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from citeline.instrumentation import configure

    trace.set_tracer_provider(TracerProvider(resource=Resource.create({"openinference.project.name": "theirs"})))
    configure(trace_dir=sys.argv[1]).shutdown()  # no project named: nothing to say
    configure(project="theirs", trace_dir=sys.argv[1]).shutdown()  # the one it has: nothing to say
    configure(project="mine", trace_dir=sys.argv[1]).shutdown()
    """
)


def test_a_joined_provider_keeps_its_project_and_configure_says_so_once(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-c", JOINED_PROJECT, str(tmp_path / "t")],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert [line for line in out.stderr.splitlines() if "project" in line] == [
        "citeline: the tracer provider's resource (openinference.project.name='theirs') cannot change, so its spans "
        "do not land in project='mine'; name the project where that provider is made "
        "(phoenix.otel.register(project_name=...))"
    ]
