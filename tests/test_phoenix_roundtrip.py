"""Phoenix both ways against a real `phoenix serve`: pull, analyze, annotate, read back, open in Chromium.

The app exports each span twice, over OTLP/HTTP to Phoenix and to OTLP/JSON
files: the fan-out the compose file's collector does, done here with processes
because no container engine runs on these machines.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider

from citeline.analyzer.phoenix.annotate import claim_identifier
from citeline.analyzer.phoenix.verdicts import claim_name, trace_score
from citeline.examples.demo import SCENARIOS, gold_path, run_scenarios
from citeline.instrumentation import configure
from tests.browser import chromium, screenshot
from tests.phoenix_server import PhoenixServer, fetch_spans, running_phoenix

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[1]
CITELINE = str(Path(sys.executable).with_name("citeline"))
PROJECT = "citeline-roundtrip"
GOLD = str(gold_path())


def cli(
    *args: str, cwd: Path, check: bool = True, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run([CITELINE, *args], cwd=cwd, capture_output=True, text=True, timeout=300, check=check, env=env)


def _phoenix_span_count(url: str, project: str) -> int:
    return len(fetch_spans(url, project))


@pytest.fixture(scope="module")
def exported(phoenix: PhoenixServer, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every demo scenario, exported to Phoenix and to trace files at once."""
    work = tmp_path_factory.mktemp("roundtrip")
    provider = TracerProvider(
        resource=Resource.create({"service.name": "policy-bot", "openinference.project.name": PROJECT})
    )
    handle = configure(
        "policy-bot", otlp_endpoint=f"{phoenix.url}/v1/traces", trace_dir=work / "traces", tracer_provider=provider
    )
    try:
        run_scenarios()
    finally:
        handle.shutdown()
    expected = 6 * len(SCENARIOS)
    deadline = time.monotonic() + 120
    while _phoenix_span_count(phoenix.url, PROJECT) < expected:  # Phoenix persists asynchronously
        assert time.monotonic() < deadline, "Phoenix did not persist every exported span in 120 s"
        time.sleep(1)
    return work


def _rows(out: str) -> list[tuple[Any, ...]]:
    claims = json.loads(out)["claims"]
    return sorted(
        (
            c["trace_id"],
            c["case_id"],
            c["gold_claim_id"] or "",
            c["claim_text"] or "",
            c["bucket"],
            c["stage"] or "",
            c["span_id"] or "",
        )
        for c in claims
    )


def _annotations(url: str, span_ids: list[str], name: str = "citeline") -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i in range(0, len(span_ids), 50):
        query = "&".join(f"span_ids={s}" for s in span_ids[i : i + 50])
        with urllib.request.urlopen(f"{url}/v1/projects/{PROJECT}/span_annotations?{query}&limit=1000") as resp:
            out += json.loads(resp.read())["data"]
    return [a for a in out if a["name"] == name]


@pytest.fixture(scope="module")
def pulled(exported: Path, phoenix: PhoenixServer) -> Path:
    first = cli("pull", "--phoenix", phoenix.url, "--project", PROJECT, "--since", "24h", cwd=exported)
    assert f"pulled {6 * len(SCENARIOS)} span(s) in {len(SCENARIOS)} trace(s)" in first.stdout
    assert f"; {6 * len(SCENARIOS)} new in citeline.duckdb" in first.stdout
    second = cli("pull", "--phoenix", phoenix.url, "--project", PROJECT, cwd=exported)
    assert "; 0 new in citeline.duckdb" in second.stdout  # incremental: nothing twice
    return exported


def test_pulled_spans_classify_exactly_like_the_trace_files(pulled: Path, phoenix: PhoenixServer) -> None:
    from_phoenix = cli("analyze", "--gold", GOLD, "--format", "json", "--phoenix", phoenix.url, cwd=pulled)
    from_files = cli(
        "analyze",
        "--traces",
        str(pulled / "traces"),
        "--gold",
        GOLD,
        "--db",
        "files.duckdb",
        "--format",
        "json",
        cwd=pulled,
    )
    assert _rows(from_phoenix.stdout) == _rows(from_files.stdout)
    summary = json.loads(from_phoenix.stdout)["summary"]
    assert summary == {
        "access_violation": 3,
        "not_evaluable": 2,
        "invalid_citation": 2,
        "freshness": 2,
        "retrieval_miss": 2,
        "context_drop": 2,
        "grounding": 2,
        "uncited": 2,
        "attribution": 2,
        "resolution": 2,
        "ok": 21,
    }
    for c in json.loads(from_phoenix.stdout)["claims"]:
        if c["bucket"] != "ok":
            assert c["span_url"] == f"{phoenix.url}/redirects/spans/{c['span_id']}"
            assert c["trace_url"] == f"{phoenix.url}/redirects/traces/{c['trace_id']}"
        else:
            assert "span_url" not in c


def test_annotate_puts_each_failure_on_its_span_once(pulled: Path, phoenix: PhoenixServer) -> None:
    analysis = json.loads(cli("analyze", "--gold", GOLD, "--format", "json", cwd=pulled).stdout)
    failing = [c for c in analysis["claims"] if c["bucket"] != "ok"]
    out = cli("annotate", "--phoenix", phoenix.url, cwd=pulled)
    assert f"{len(failing)} annotation(s) named 'citeline' written" in out.stdout
    spans = sorted({c["span_id"] for c in failing})
    found = _annotations(phoenix.url, spans)
    by_key = {(a["span_id"], a["identifier"]): a for a in found}
    assert len(by_key) == len(failing)
    for c in failing:
        a = by_key[(c["span_id"], claim_identifier(c["trace_id"], c["case_id"], c["gold_claim_id"], c["claim_text"]))]
        assert a["annotator_kind"] == "CODE"
        assert a["result"]["label"] == c["bucket"]
        assert a["result"]["score"] is None  # Phoenix's chip reads the label, not "μ 0.00"
        # the claim first, then the reason (what else it names: tests/test_phoenix_latest.py)
        assert a["result"]["explanation"].startswith(
            claim_name(c["gold_claim_id"], c["claim_text"]) + ": " + c["reason"]
        )
        assert a["metadata"]["run_id"] == analysis["run_id"]
    # one summary per trace on its request span: the trace's verdict
    assert f"{len(analysis['cases'])} trace summary annotation(s) named 'citeline.trace' written" in out.stdout
    roots = _request_spans(pulled)
    summaries = {a["span_id"]: a for a in _annotations(phoenix.url, sorted(roots.values()), "citeline.trace")}
    assert len(summaries) == len(analysis["cases"])
    for case in analysis["cases"]:
        a = summaries[roots[case["trace_id"]]]
        # the score Phoenix's chart plots: ok 1, failing 0, not_evaluable none
        assert (a["result"]["label"], a["result"]["score"]) == (case["verdict"], trace_score(case["verdict"]))
        mine = [c["bucket"] for c in analysis["claims"] if c["trace_id"] == case["trace_id"]]
        assert a["result"]["explanation"] == "claims: " + ", ".join(sorted(f"{b} {mine.count(b)}" for b in set(mine)))
    # again: the same annotations are updated, none added
    cli("annotate", "--phoenix", phoenix.url, cwd=pulled)
    assert len(_annotations(phoenix.url, spans)) == len(found)


_DOCUMENTS = """
query ($filter: String!) {
  projects(first: 50) { edges { node { name
    spans(first: 1000, filterCondition: $filter) { edges { node {
      spanId
      documentEvaluations { name label score documentPosition }
      documentRetrievalMetrics(evaluationName: "citeline.gold_relevance") { hit }
    } } }
  } } }
}
"""


def test_each_retrieved_document_is_marked_support_or_not(pulled: Path, phoenix: PhoenixServer) -> None:
    """Phoenix's own retrieval metrics light up from the gold set: one document annotation per retrieved chunk."""
    analysis = json.loads(cli("analyze", "--gold", GOLD, "--format", "json", cwd=pulled).stdout)
    out = cli("annotate", "--phoenix", phoenix.url, cwd=pulled)
    con = duckdb.connect(str(pulled / "citeline.duckdb"), read_only=True)
    try:
        expected = {
            span_id: [("support" if c in support else "not support") for c in chunks]
            for span_id, chunks, support in con.execute(
                "SELECT s.span_id, s.chunk_id, coalesce(r.chunk_ids, []) FROM case_results c "
                "JOIN spans s ON s.trace_id = c.trace_id AND s.stage = 'retrieval' "
                "LEFT JOIN run_support r ON r.run_id = c.run_id AND r.case_id = c.case_id "
                "WHERE c.run_id = ? AND len(s.chunk_id) > 0",
                [analysis["run_id"]],
            ).fetchall()
        }
    finally:
        con.close()
    total = sum(len(v) for v in expected.values())
    assert total > 0
    assert f"{total} retrieved document(s) marked support or not" in out.stdout
    body = json.dumps({"query": _DOCUMENTS, "variables": {"filter": "span_kind == 'RETRIEVER'"}}).encode()
    req = urllib.request.Request(f"{phoenix.url}/graphql", data=body, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as resp:
        data = json.loads(resp.read())
    assert "errors" not in data, data
    project = next(e["node"] for e in data["data"]["projects"]["edges"] if e["node"]["name"] == PROJECT)
    seen = {e["node"]["spanId"]: e["node"] for e in project["spans"]["edges"]}
    for span_id, labels in expected.items():
        evals = sorted(
            (d["documentPosition"], d["label"], d["score"])
            for d in seen[span_id]["documentEvaluations"]
            if d["name"] == "citeline.gold_relevance"
        )
        assert [(p, lb) for p, lb, _ in evals] == list(enumerate(labels)), span_id
        # Phoenix computes retrieval metrics from LLM document annotations only: none from CODE ones
        assert seen[span_id]["documentRetrievalMetrics"] == []
    # with --documents-as-llm, Phoenix's own hit rate lights up from the gold set
    cli("annotate", "--phoenix", phoenix.url, "--documents-as-llm", cwd=pulled)
    with urllib.request.urlopen(req, timeout=30) as resp:
        metrics = json.loads(resp.read())
    project = next(e["node"] for e in metrics["data"]["projects"]["edges"] if e["node"]["name"] == PROJECT)
    seen = {e["node"]["spanId"]: e["node"] for e in project["spans"]["edges"]}
    for span_id, labels in expected.items():
        assert [m["hit"] for m in seen[span_id]["documentRetrievalMetrics"]] == [1.0 if "support" in labels else 0.0], (
            span_id
        )
    # again: updated, not added
    cli("annotate", "--phoenix", phoenix.url, cwd=pulled)
    with urllib.request.urlopen(req, timeout=30) as resp:
        again = json.loads(resp.read())
    project = next(e["node"] for e in again["data"]["projects"]["edges"] if e["node"]["name"] == PROJECT)
    n = sum(
        1
        for e in project["spans"]["edges"]
        for d in e["node"]["documentEvaluations"]
        if d["name"] == "citeline.gold_relevance"
    )
    assert n == total


def _request_spans(store_dir: Path) -> dict[str, str]:
    con = duckdb.connect(str(store_dir / "citeline.duckdb"), read_only=True)
    try:
        return dict(con.execute("SELECT trace_id, span_id FROM spans WHERE stage = 'request'").fetchall())
    finally:
        con.close()


def test_the_documented_filter_lists_exactly_the_failing_spans_of_each_bucket(
    pulled: Path, phoenix: PhoenixServer
) -> None:
    """docs/phoenix.md: annotations['citeline'].label == '<bucket>' in Phoenix's span filter."""
    from phoenix.client import Client
    from phoenix.client.types.spans import SpanQuery

    analysis = json.loads(cli("analyze", "--gold", GOLD, "--format", "json", cwd=pulled).stdout)
    cli("annotate", "--phoenix", phoenix.url, cwd=pulled)
    client = Client(base_url=phoenix.url)

    def spans(condition: str) -> set[str]:
        query = SpanQuery().where(condition).select("span_id")
        frame = client.spans.get_spans_dataframe(query=query, project_identifier=PROJECT, limit=1000, timeout=30)
        return set(frame.index) if "context.span_id" not in frame.columns else set(frame["context.span_id"])

    buckets = sorted({c["bucket"] for c in analysis["claims"]} - {"ok"})
    assert len(buckets) == 10
    for bucket in buckets:
        want = {c["span_id"] for c in analysis["claims"] if c["bucket"] == bucket}
        assert spans(f"annotations['citeline'].label == '{bucket}'") == want, bucket
    failing = {c["span_id"] for c in analysis["claims"] if c["bucket"] != "ok"}
    assert spans("annotations['citeline'].label is not None") == failing
    roots = _request_spans(pulled)
    grounded = {roots[c["trace_id"]] for c in analysis["cases"] if c["verdict"] == "grounding"}
    assert grounded
    assert spans("annotations['citeline.trace'].label == 'grounding'") == grounded


@pytest.mark.browser
def test_a_failing_span_link_opens_on_its_annotation_in_chromium(
    pulled: Path, phoenix: PhoenixServer, tmp_path: Path
) -> None:
    analysis = json.loads(
        cli("analyze", "--gold", GOLD, "--format", "json", "--phoenix", phoenix.url, cwd=pulled).stdout
    )
    cli("annotate", "--phoenix", phoenix.url, cwd=pulled)
    target = next(c for c in analysis["claims"] if c["bucket"] == "retrieval_miss")
    dom = chromium(tmp_path / "profile", "--dump-dom", target["span_url"], wait_ms=20000).stdout
    assert target["span_id"] in dom  # the page shows the very span that broke
    assert 'class="annotation-summary-badge__name">citeline<' in dom
    badge = dom[dom.index('annotation-summary-badge__name">citeline<') :][:2000]
    assert "retrieval_miss" in badge, badge  # the chip reads the bucket ...
    assert "0.00" not in badge  # ... not a mean score
    shot = screenshot(
        tmp_path / "profile", target["span_url"], "phoenix-failing-span.png", size="1400,900", wait_ms=20000
    )
    assert shot.stat().st_size > 20_000


def test_nightly_job_runs_the_compose_topology_with_processes(
    exported: Path, phoenix: PhoenixServer, tmp_path: Path
) -> None:
    env = {
        "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin",
        "CITELINE_TRACES": str(exported / "traces"),
        "CITELINE_GOLD": GOLD,
        "CITELINE_DB": str(tmp_path / "nightly.duckdb"),
        "CITELINE_REPORT": str(tmp_path / "report.html"),
        "CITELINE_PHOENIX_URL": phoenix.url,
        "CITELINE_PHOENIX_API": phoenix.url,
        "CITELINE_FAIL_ON": "failing>100",
        "CITELINE_BIN": CITELINE,
    }
    done = subprocess.run(
        ["bash", str(ROOT / "deploy" / "nightly.sh"), "--once"],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    page = (tmp_path / "report.html").read_text()
    assert page.count("class='failing-claim'") == 21
    assert f"{phoenix.url}/redirects/spans/" in page
    summary = json.loads((tmp_path / "report.json").read_text())["summary"]
    assert summary["ok"] == 21
    assert "annotation(s) named 'citeline' written" in done.stdout


def _store_counts(db: Path) -> tuple[int, int]:
    con = duckdb.connect(str(db))
    try:
        return con.execute("SELECT (SELECT count(*) FROM spans), (SELECT count(*) FROM runs)").fetchall()[0]
    finally:
        con.close()


@pytest.fixture(scope="module")
def locked_phoenix() -> Iterator[PhoenixServer]:
    with running_phoenix(
        {"PHOENIX_ENABLE_AUTH": "true", "PHOENIX_SECRET": "citeline-test-secret-0123456789-abcdefghij"}
    ) as server:
        yield server


def test_unreachable_wrong_project_and_auth_fail_clearly_and_keep_the_store(
    pulled: Path, phoenix: PhoenixServer, locked_phoenix: PhoenixServer
) -> None:
    db = pulled / "citeline.duckdb"
    before = _store_counts(db)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{s.getsockname()[1]}"
    cases = [
        (["pull", "--phoenix", closed, "--project", PROJECT], f"cannot reach Phoenix at {closed}"),
        (["annotate", "--phoenix", closed], f"cannot reach Phoenix at {closed}"),
        (["pull", "--phoenix", phoenix.url, "--project", "no-such-project"], "no project 'no-such-project'"),
        (["pull", "--phoenix", locked_phoenix.url, "--project", PROJECT], "requires authentication"),
        (["annotate", "--phoenix", locked_phoenix.url], "requires authentication"),
    ]
    for args, message in cases:
        done = cli(*args, cwd=pulled, check=False, env={"PATH": "/usr/bin:/bin", "HOME": str(pulled)})
        assert done.returncode == 2, (args, done.stdout, done.stderr)  # a Phoenix that cannot be used is unusable input
        assert message in done.stderr, (args, done.stderr)
        assert done.stderr.count("\n") == 1, done.stderr  # one clear line, no traceback
        assert _store_counts(db) == before
