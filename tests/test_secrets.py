"""Secrets never leave: a planted judge key, Phoenix URL password and OTLP api_key appear in no
output a person or another system reads.

Real components throughout: the demo app's traces go to a real ``phoenix serve`` and to trace
files; ``citeline pull / analyze / report / annotate`` run as the CLI runs them. The one stand-in
is the model endpoint (a hosted LLM cannot run here): a loopback gateway that, like some real
gateways do, answers 401 and echoes the request's headers (the key included) in its body.
"""

from __future__ import annotations

import json
import logging
import socket
import threading
import time
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import duckdb
import pytest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider

from citeline.analyzer.cli.main import main
from citeline.examples.demo import SCENARIOS, gold_path, run_scenarios
from citeline.instrumentation import configure, request
from tests.phoenix_server import PhoenixServer, fetch_spans

pytestmark = pytest.mark.integration

JUDGE_KEY = "sk-PLANTED-judge-7f3a9c1e2b4d6f80"
PHOENIX_PASSWORD = "PLANTEDphoenixPW91"
OTLP_KEY = "PLANTEDotlpKEY55x"
SECRETS = (JUDGE_KEY, PHOENIX_PASSWORD, OTLP_KEY)
PROJECT = "citeline-secrets"


@pytest.fixture
def gateway() -> Iterator[str]:
    """A chat-completions endpoint that refuses every key and echoes the headers it got."""

    class Echo(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["Content-Length"]))
            body = json.dumps({"error": "invalid api key", "received": dict(self.headers)}).encode()
            self.send_response(401)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Echo)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def black_hole() -> Iterator[int]:
    """A port that accepts connections and never answers: an OTLP endpoint that is stuck."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    try:
        yield int(sock.getsockname()[1])
    finally:
        sock.close()


def _with_password(url: str) -> str:
    scheme, rest = url.split("://", 1)
    return f"{scheme}://citeline:{PHOENIX_PASSWORD}@{rest}"


def _store_text(db: Path) -> str:
    """Every row of every table of the store, as text; and the file's bytes."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        tables = [t for (t,) in con.execute("SELECT table_name FROM information_schema.tables").fetchall()]
        parts = [repr(con.execute(f'SELECT * FROM "{t}"').fetchall()) for t in tables]
    finally:
        con.close()
    return "\n".join(parts) + db.read_bytes().decode("latin-1")


def test_no_planted_secret_reaches_any_output(
    tmp_path: Path,
    phoenix: PhoenixServer,
    gateway: str,
    black_hole: int,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    monkeypatch.setenv("OPENAI_API_KEY", JUDGE_KEY)
    monkeypatch.chdir(tmp_path)
    # the app: traces to Phoenix and to files; a second exporter to a stuck endpoint with an api_key
    provider = TracerProvider(resource=Resource.create({"service.name": "bot", "openinference.project.name": PROJECT}))
    handle = configure(
        "bot", otlp_endpoint=f"{phoenix.url}/v1/traces", trace_dir=tmp_path / "traces", tracer_provider=provider
    )
    try:
        run_scenarios()
    finally:
        handle.shutdown()
    stuck = configure(
        "bot",
        otlp_endpoint=f"http://127.0.0.1:{black_hole}/v1/traces?api_key={OTLP_KEY}",
        tracer_provider=TracerProvider(),
        shutdown_timeout=0.3,
        export_timeout=2.0,
    )
    with request(question="anything?"):
        pass
    stuck.shutdown()
    assert "did not finish within" in caplog.text  # the warning that used to carry the api_key
    deadline = time.monotonic() + 120
    while len(fetch_spans(phoenix.url, PROJECT)) < 6 * len(SCENARIOS):
        assert time.monotonic() < deadline
        time.sleep(0.5)

    db = tmp_path / "store.duckdb"
    url = _with_password(phoenix.url)
    assert main(["pull", "--phoenix", url, "--project", PROJECT, "--since", "24h", "--db", str(db)]) == 0
    pulled = capsys.readouterr()
    judge = ["--judge", "llm", "--judge-option", "model=m", "--judge-option", f"base_url={gateway}"]
    code = main(["analyze", "--gold", str(gold_path()), "--db", str(db), *judge, "--format", "json", "--phoenix", url])
    assert code == 0
    analyzed = capsys.readouterr()
    claims = json.loads(analyzed.out)["claims"]
    refused = [c for c in claims if "the endpoint refused the credentials" in (c["reason"] or "")]
    assert refused, "the judge's 401 is named in the reasons"
    assert refused[0]["reason"].endswith(
        f"could not decide: HTTP 401 from {gateway}/chat/completions: the endpoint refused the credentials "
        "(check OPENAI_API_KEY or --judge-option api_key)"
    )
    outputs = {"pull output": pulled.out + pulled.err, "analyze stdout": analyzed.out, "analyze stderr": analyzed.err}
    for fmt, name in (("markdown", "r.md"), ("html", "r.html"), ("json", "r.json")):
        assert main(["report", "--db", str(db), "--format", fmt, "--out", str(tmp_path / name), "--phoenix", url]) == 0
        outputs[name] = (tmp_path / name).read_text()
    assert f"{phoenix.url}/redirects/spans/" in outputs["r.html"]  # links still there, credentials gone
    assert main(["annotate", "--phoenix", url, "--db", str(db)]) == 0
    ran = capsys.readouterr()
    outputs["report and annotate output"] = ran.out + ran.err
    outputs["store"] = _store_text(db)
    spans = [s["context"]["span_id"] for s in fetch_spans(phoenix.url, PROJECT)]
    found: list[dict[str, Any]] = []
    for i in range(0, len(spans), 50):
        query = "&".join(f"span_ids={s}" for s in spans[i : i + 50])
        with urllib.request.urlopen(f"{phoenix.url}/v1/projects/{PROJECT}/span_annotations?{query}&limit=1000") as r:
            found += json.loads(r.read())["data"]
    assert any("refused the credentials" in (a["result"] or {}).get("explanation", "") for a in found)
    outputs["annotations in Phoenix"] = json.dumps(found)
    outputs["logs at INFO"] = "\n".join(r.getMessage() for r in caplog.records if r.levelno >= logging.INFO)
    for where, text in outputs.items():
        for secret in SECRETS:
            assert secret not in text, f"{secret} in {where}"
