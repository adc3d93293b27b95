"""What Phoenix shows after `citeline annotate` is the latest run's verdicts, found with the filters
docs/phoenix.md gives, against a real `phoenix serve` (the session's server, a project of its own).

Two runs over the same demo traces with a changed gold set (run 2 expects an answer where run 1
expected an abstention, so run 1's grounding verdict on that answer is gone in run 2): after each
annotate, every documented filter lists exactly that run's spans on the tab the docs name (the
Spans tab's and the Traces tab's GraphQL queries, as the Phoenix UI sends them); the stale verdict
is removed; annotating run 1 again afterwards changes nothing (an older run never overwrites a
newer one).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import io
import json
import re
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider

from citeline.analyzer.buckets import BUCKETS
from citeline.analyzer.cli.main import main
from citeline.analyzer.phoenix.annotate import claim_identifier
from citeline.examples.demo import SCENARIOS, gold_path, run_scenarios
from citeline.instrumentation import configure
from tests.browser import chromium
from tests.phoenix_server import PhoenixServer, wait_for_spans

pytestmark = pytest.mark.integration
PROJECT = "citeline-latest"
DOCS = Path(__file__).resolve().parents[1] / "docs" / "phoenix.md"


def cli(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(list(args))
    return code, out.getvalue()


def graphql(url: str, query: str, variables: dict[str, Any]) -> dict[str, Any]:
    body = json.dumps({"query": query, "variables": variables}).encode()
    req = urllib.request.Request(f"{url}/graphql", data=body, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as resp:
        data = json.loads(resp.read())
    assert "errors" not in data, data
    return dict(data["data"])


# the Spans tab's and the Traces tab's queries (Phoenix 20.26's UI: SpansTable, TracesTable rootSpans)
_SPANS_TAB = """query ($name: String!, $filter: String) { getProjectByName(name: $name) {
  spans(first: 1000, filterCondition: $filter) { edges { node { spanId } } } } }"""
_TRACES_TAB = """query ($name: String!, $filter: String) { getProjectByName(name: $name) {
  spans(first: 1000, filterCondition: "parent_span is None", traceFilterCondition: $filter)
  { edges { node { spanId } } } } }"""


def spans_tab(url: str, condition: str) -> set[str]:
    data = graphql(url, _SPANS_TAB, {"name": PROJECT, "filter": condition})
    return {e["node"]["spanId"] for e in data["getProjectByName"]["spans"]["edges"]}


def traces_tab(url: str, condition: str) -> set[str]:
    """The request (root) spans of the traces the Traces tab lists for that trace filter."""
    data = graphql(url, _TRACES_TAB, {"name": PROJECT, "filter": condition})
    return {e["node"]["spanId"] for e in data["getProjectByName"]["spans"]["edges"]}


def held_annotations(url: str, span_ids: set[str]) -> list[dict[str, Any]]:
    query = "&".join(f"span_ids={s}" for s in sorted(span_ids))
    with urllib.request.urlopen(f"{url}/v1/projects/{PROJECT}/span_annotations?{query}&limit=1000") as resp:
        return list(json.loads(resp.read())["data"])


@dataclass
class Run:
    run_id: str
    analysis: dict[str, Any]
    annotate_out: str

    def spans(self, bucket: str) -> set[str]:
        return {c["span_id"] for c in self.analysis["claims"] if c["bucket"] == bucket}

    def failing(self) -> set[str]:
        return {c["span_id"] for c in self.analysis["claims"] if c["bucket"] != "ok"}

    def roots(self, verdict: str, root: dict[str, str]) -> set[str]:
        return {root[c["trace_id"]] for c in self.analysis["cases"] if c["verdict"] == verdict}


@dataclass
class Runs:
    work: Path
    first: Run
    second: Run
    again_first: str  # annotate --run <first> after the second
    root: dict[str, str]  # trace id -> request span id
    spans: list[dict[str, Any]]  # every span of the project, as Phoenix holds it


def _changed_gold(path: Path) -> None:
    """The demo's gold set, with the refurbished-warranty case expecting an answer instead of an abstention."""
    text = gold_path().read_text()
    at = text.index("case_id: refurbished-warranty")
    text = text[:at] + text[at:].replace("expect: abstain", "expect: answer", 1)
    path.write_text(text)


@pytest.fixture(scope="module")
def runs(phoenix: PhoenixServer, tmp_path_factory: pytest.TempPathFactory) -> Runs:
    work = tmp_path_factory.mktemp("latest")
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
    spans = wait_for_spans(phoenix.url, PROJECT, 6 * len(SCENARIOS))
    assert len(spans) == 6 * len(SCENARIOS)
    root = {s["context"]["trace_id"]: s["context"]["span_id"] for s in spans if not s.get("parent_id")}
    _changed_gold(work / "gold-2.yaml")
    db = str(work / "citeline.duckdb")
    done = []
    for gold in (str(gold_path()), str(work / "gold-2.yaml")):
        code, out = cli("analyze", "--traces", str(work / "traces"), "--gold", gold, "--db", db, "--format", "json")
        analysis = json.loads(out)
        code, annotated = cli("annotate", "--phoenix", phoenix.url, "--db", db)
        assert code == 0, annotated
        done.append(Run(analysis["run_id"], analysis, annotated))
        if len(done) == 1:  # what the first annotate made Phoenix show
            for bucket in BUCKETS[:-1]:
                assert spans_tab(phoenix.url, f"annotations['citeline'].label == '{bucket}'") == done[0].spans(bucket)
    _code, again = cli("annotate", "--phoenix", phoenix.url, "--db", db, "--run", done[0].run_id)
    return Runs(work, done[0], done[1], again, root, spans)


def test_the_gold_change_leaves_one_grounding_verdict_fewer(runs: Runs) -> None:
    gone = runs.first.spans("grounding") - runs.second.spans("grounding")
    assert len(gone) == 1 and runs.second.spans("grounding") < runs.first.spans("grounding")
    assert runs.first.analysis["summary"]["grounding"] == runs.second.analysis["summary"]["grounding"] + 1


def test_after_annotate_every_bucket_filter_lists_the_latest_runs_spans(runs: Runs, phoenix: PhoenixServer) -> None:
    for bucket in BUCKETS[:-1]:
        assert spans_tab(phoenix.url, f"annotations['citeline'].label == '{bucket}'") == runs.second.spans(bucket)
    assert spans_tab(phoenix.url, "annotations['citeline'].label is not None") == runs.second.failing()
    # the span whose verdict is gone holds no citeline annotation any more; its trace now reads ok
    [gone] = runs.first.spans("grounding") - runs.second.spans("grounding")
    assert [a for a in held_annotations(phoenix.url, {gone}) if a["name"] == "citeline"] == []
    assert (
        "run " + runs.second.run_id + ": 1 citeline annotation(s) of earlier runs removed" in runs.second.annotate_out
    )
    [trace] = [t for t, s in runs.root.items() if s in _roots_of(runs, gone)]
    [summary] = [a for a in held_annotations(phoenix.url, {runs.root[trace]}) if a["name"] == "citeline.trace"]
    assert (summary["result"]["label"], summary["result"]["score"]) == ("ok", 1.0)
    assert summary["metadata"]["run_id"] == runs.second.run_id


def _roots_of(runs: Runs, span_id: str) -> set[str]:
    traces = {c["trace_id"] for c in runs.first.analysis["claims"] if c["span_id"] == span_id}
    return {runs.root[t] for t in traces}


def test_annotating_an_older_run_never_overwrites_the_newer(runs: Runs, phoenix: PhoenixServer) -> None:
    n = len(runs.second.analysis["cases"])
    assert f"{n} trace(s) hold the verdicts of a newer run ({runs.second.run_id})" in runs.again_first
    assert f"run {runs.first.run_id}: 0 annotation(s) named 'citeline' written" in runs.again_first
    assert f"run {runs.first.run_id}: 0 retrieved document(s) marked" in runs.again_first  # documents too
    assert spans_tab(phoenix.url, "annotations['citeline'].label == 'grounding'") == runs.second.spans("grounding")
    found = held_annotations(phoenix.url, runs.second.failing() | set(runs.root.values()))
    assert {a["metadata"]["run_id"] for a in found if a["name"].startswith("citeline")} == {runs.second.run_id}


def _documented_filters() -> list[tuple[str, str, str]]:
    """(tab, what, filter) of every row of docs/phoenix.md's filter table."""
    rows = re.findall(r"^\| (Spans|Traces) \| ([^|]+) \| `([^`]+)` \|$", DOCS.read_text(), re.MULTILINE)
    assert len(rows) >= 13, rows
    return [(tab, what.strip(), condition) for tab, what, condition in rows]


def test_every_filter_the_docs_give_lists_the_latest_runs_rows_on_its_tab(runs: Runs, phoenix: PhoenixServer) -> None:
    latest = runs.second
    for tab, what, condition in _documented_filters():
        if tab == "Spans":
            got = spans_tab(phoenix.url, condition)
            if what == "any failure":
                assert got == latest.failing(), condition
            else:
                bucket = re.fullmatch(r"annotations\['citeline'\]\.label == '(\w+)'", condition)
                assert bucket is not None, condition
                assert got == latest.spans(bucket.group(1)), condition
        else:  # a request's verdict, on the Traces tab: its root span's row
            verdict = re.search(r"label == '(\w+)'", condition)
            assert verdict is not None, condition
            assert traces_tab(phoenix.url, condition) == latest.roots(verdict.group(1), runs.root), condition
            assert latest.roots(verdict.group(1), runs.root)
    # the Traces tab refuses the Spans tab's syntax (what the docs warn about)
    body = json.dumps(
        {"query": _TRACES_TAB, "variables": {"name": PROJECT, "filter": "annotations['citeline'].label == 'x'"}}
    ).encode()
    req = urllib.request.Request(f"{phoenix.url}/graphql", data=body, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as resp:
        assert "is not available in the trace filter" in resp.read().decode()


def test_annotate_prints_the_project_and_a_filtered_link_per_bucket(runs: Runs, phoenix: PhoenixServer) -> None:
    project_id = graphql(phoenix.url, "query ($n: String!) { getProjectByName(name: $n) { id } }", {"n": PROJECT})
    base = f"{phoenix.url}/projects/{urllib.parse.quote(project_id['getProjectByName']['id'], safe='')}"
    out = runs.second.annotate_out
    assert f"Phoenix project '{PROJECT}': {base}\n" in out
    links = re.findall(r"^  (\w+): (\d+) span\(s\): (\S+)$", out, re.MULTILINE)
    assert [b for b, _n, _u in links] == [b for b in BUCKETS[:-1] if runs.second.spans(b)]
    for bucket, n, link in links:
        assert link.startswith(f"{base}/spans?spanFilterCondition=")
        condition = urllib.parse.parse_qs(urllib.parse.urlsplit(link).query)["spanFilterCondition"][0]
        assert condition == f"annotations['citeline'].label == '{bucket}'"
        assert spans_tab(phoenix.url, condition) == runs.second.spans(bucket)
        assert int(n) == len(runs.second.spans(bucket))


def test_each_explanation_starts_with_its_claim_and_names_what_to_look_at(runs: Runs, phoenix: PhoenixServer) -> None:
    claims = [c for c in runs.second.analysis["claims"] if c["bucket"] != "ok"]
    found = {(a["span_id"], a["identifier"]): a for a in held_annotations(phoenix.url, runs.second.failing())}
    for c in claims:
        a = found[(c["span_id"], claim_identifier(c["trace_id"], c["case_id"], c["gold_claim_id"], c["claim_text"]))]
        explanation = a["result"]["explanation"]
        name = f"claim {c['gold_claim_id']}" if c["gold_claim_id"] else "claim"
        assert explanation.startswith(name), explanation
        if c["claim_text"]:
            assert f'"{c["claim_text"]}": {c["reason"]}' in explanation
        assert a["result"]["score"] is None  # the chip reads the bucket
        assert a["metadata"]["run_id"] == runs.second.run_id
        assert a["metadata"]["judge"].startswith("rules")
    grounding = next(c for c in claims if c["bucket"] == "grounding" and c["claim_text"])
    a = found[(grounding["span_id"], _ident(grounding))]
    # the cited label, chunk and gold passage
    assert a["result"]["explanation"] == (
        'claim window "Yes, opened electronics may be returned within 60 days of delivery.": '
        "contradicted: states 60 day where the gold fact is '30 days'; cites [3] returns-v4#eligibility-2 "
        '"Opened electronics may be returned within 30 days of delivery with proof of purchase."'
    )
    drops = [found[(c["span_id"], _ident(c))]["result"]["explanation"] for c in claims if c["bucket"] == "context_drop"]
    assert drops and all("; retrieved but not given to the model: " in e for e in drops), drops


def _ident(c: dict[str, Any]) -> str:
    return claim_identifier(c["trace_id"], c["case_id"], c["gold_claim_id"], c["claim_text"])


def test_reviewers_get_a_dropdown_and_the_score_chart_a_series(runs: Runs, phoenix: PhoenixServer) -> None:
    for name, scores in (("citeline", [None] * len(BUCKETS)), ("citeline.trace", None)):
        with urllib.request.urlopen(f"{phoenix.url}/v1/annotation_configs/{name}") as resp:
            config = json.loads(resp.read())["data"]
        assert config["type"] == "CATEGORICAL"
        assert [v["label"] for v in config["values"]] == list(BUCKETS)
        if scores is not None:
            assert [v["score"] for v in config["values"]] == scores
    assert "annotation config 'citeline' created" in runs.first.annotate_out
    assert "annotation config" not in runs.second.annotate_out  # created once
    with urllib.request.urlopen(f"{phoenix.url}/v1/projects/{PROJECT}/annotation_configs") as resp:
        assigned = {c["name"] for c in json.loads(resp.read())["data"]}
    assert {"citeline", "citeline.trace"} <= assigned
    now = dt.datetime.now(dt.UTC)
    series = graphql(
        phoenix.url,
        """query ($n: String!, $t: TimeRange!) { getProjectByName(name: $n) {
             spanAnnotationScoreTimeSeries(timeRange: $t) { names data { scoresWithLabels { label score } } } } }""",
        {
            "n": PROJECT,
            "t": {"start": (now - dt.timedelta(days=1)).isoformat(), "end": (now + dt.timedelta(hours=1)).isoformat()},
        },
    )["getProjectByName"]["spanAnnotationScoreTimeSeries"]
    assert "citeline.trace" in series["names"]
    cases = runs.second.analysis["cases"]
    judged = [c for c in cases if c["verdict"] != "not_evaluable"]
    points = [p["score"] for d in series["data"] for p in d["scoresWithLabels"] if p["label"] == "citeline.trace"]
    assert points and all(0.0 <= p <= 1.0 for p in points)
    share = sum(1 for c in judged if c["verdict"] == "ok") / len(judged)
    if len(points) == 1:  # every trace in one time bin: the share of requests that pass
        assert points[0] == pytest.approx(share)


def test_the_generation_span_shows_what_the_model_was_given(runs: Runs) -> None:
    """Where grounding, uncited and attribution land, Phoenix's Input shows the prompt (the demo's
    generation is a method: its first argument is the bot, not the prompt)."""
    generations = [s for s in runs.spans if s["attributes"].get("citeline.stage") == "generation"]
    assert len(generations) == len(SCENARIOS)
    for s in generations:
        assert s["attributes"]["input.mime_type"] == "text/plain"
        prompt = s["attributes"]["input.value"]
        assert prompt.startswith("Answer with citations.\n") and "\nQuestion: " in prompt, prompt
    assert sum(1 for s in generations if "\n[1] " in s["attributes"]["input.value"]) >= len(SCENARIOS) - 2


@pytest.mark.browser
def test_a_bucket_link_opens_the_spans_tab_already_filtered_in_chromium(
    runs: Runs, phoenix: PhoenixServer, tmp_path: Path
) -> None:
    [link] = [
        u
        for b, _n, u in re.findall(r"^  (\w+): (\d+) span\(s\): (\S+)$", runs.second.annotate_out, re.M)
        if b == "grounding"
    ]
    dom = chromium(tmp_path / "profile", "--dump-dom", link, wait_ms=10000).stdout
    box = dom[dom.index('aria-label="Filter spans"') :][:3000]
    assert "grounding" in re.sub(r"<[^>]+>", "", box)  # the filter bar holds the bucket's filter ...
    assert "parent_id is None" not in dom  # ... in place of the root-span preset
    rows = dom[dom.index("<tbody") : dom.index("</tbody>")]
    assert rows.count("<tr") == len(runs.second.spans("grounding"))  # exactly the latest run's spans
    assert "retrieval_miss" not in rows and "grounding" in rows


def test_a_reviewers_annotation_under_the_same_name_is_never_removed(runs: Runs, phoenix: PhoenixServer) -> None:
    """Only citeline's own (CODE, with a run id) annotations are stale-checked; a HUMAN one stays."""
    [gone] = runs.first.spans("grounding") - runs.second.spans("grounding")
    review = {
        "span_id": gone,
        "name": "citeline",
        "annotator_kind": "HUMAN",
        "identifier": "",
        "result": {"label": "grounding", "explanation": "a reviewer still calls it ungrounded"},
    }
    req = urllib.request.Request(
        f"{phoenix.url}/v1/span_annotations?sync=true",
        data=json.dumps({"data": [review]}).encode(),
        headers={"Content-Type": "application/json"},
    )
    urllib.request.urlopen(req, timeout=30).close()
    code, out = cli("annotate", "--phoenix", phoenix.url, "--db", str(runs.work / "citeline.duckdb"))
    assert code == 0 and "removed" not in out, out
    kept = [a for a in held_annotations(phoenix.url, {gone}) if a["name"] == "citeline"]
    assert [(a["annotator_kind"], a["result"]["label"]) for a in kept] == [("HUMAN", "grounding")]
