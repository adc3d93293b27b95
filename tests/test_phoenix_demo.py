"""From the demo to Phoenix in one command, against a real `phoenix serve` (issue 35, items 2 and 3).

``citeline demo --phoenix URL`` sends the demo's spans over OTLP/HTTP (loopback) to a named project,
analyzes, waits until Phoenix holds every span, annotates and prints the links; the standard
``OTEL_EXPORTER_OTLP_ENDPOINT`` is honoured the same way; ``annotate`` against a Phoenix that holds
none of the run's spans exits 2 with the reason; README's Phoenix commands run as written; and
headless Chromium opens the Spans tab with docs/phoenix.md's bucket filter.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import duckdb
import pytest

from citeline.examples.demo import SCENARIOS, gold_path
from tests.browser import ARTIFACTS, chromium
from tests.phoenix_server import PhoenixServer, fetch_spans, wait_for_spans

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[1]
CITELINE = str(Path(sys.executable).with_name("citeline"))
SPANS = 6 * len(SCENARIOS)  # request, retrieval, context, generation, resolution, render


def run(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """A ``citeline`` command in a fresh process, with no Phoenix or OTLP setting leaking in from outside."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "CITELINE_PHOENIX", "PHOENIX_"))}
    return subprocess.run(
        [CITELINE, *args],
        check=False,
        cwd=cwd,
        env={**clean, **(env or {})},
        capture_output=True,
        text=True,
        timeout=300,
    )


def _store(cwd: Path, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    con = duckdb.connect(str(cwd / "citeline.duckdb"), read_only=True)
    try:
        return con.execute(sql, list(params)).fetchall()
    finally:
        con.close()


def _graphql(url: str, query: str, variables: dict[str, Any]) -> dict[str, Any]:
    body = json.dumps({"query": query, "variables": variables}).encode()
    req = urllib.request.Request(f"{url}/graphql", data=body, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as resp:
        data: dict[str, Any] = json.loads(resp.read())
    assert "errors" not in data, data
    answer: dict[str, Any] = data["data"]
    return answer


def _project_id(url: str, project: str) -> str:
    with urllib.request.urlopen(f"{url}/v1/projects/{project}", timeout=30) as resp:
        return str(json.loads(resp.read())["data"]["id"])


@pytest.fixture(scope="module")
def demo(phoenix: PhoenixServer, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """``citeline demo --phoenix URL --project P`` once, in a project no other test writes to."""
    work = tmp_path_factory.mktemp("demo-phoenix")
    out = run("demo", "--phoenix", phoenix.url, "--project", "demo-35", cwd=work)
    assert out.returncode == 0, out.stderr[-3000:]
    return work, out.stdout


def test_demo_sends_to_its_project_analyzes_annotates_and_prints_the_links(
    demo: tuple[Path, str], phoenix: PhoenixServer
) -> None:
    work, stdout = demo
    [(run_id,)] = _store(work, "SELECT run_id FROM runs")
    stored = {s for (s,) in _store(work, "SELECT span_id FROM spans")}
    assert len(stored) == SPANS
    # every span the app made is in the project it named, nothing else is
    assert {s["context"]["span_id"] for s in fetch_spans(phoenix.url, "demo-35")} == stored
    failing = _store(work, "SELECT count(*) FROM claim_results WHERE run_id = ? AND bucket <> 'ok'", run_id)[0][0]
    assert failing == 21
    lines = stdout.splitlines()
    tail = lines[lines.index(next(x for x in lines if x.startswith("open a failure in Phoenix"))) :]
    assert tail[:2] == [
        f"open a failure in Phoenix: {phoenix.url}/redirects/spans/SPAN "
        f"(its trace: {phoenix.url}/redirects/traces/TRACE)",
        "a bucket's spans, after citeline annotate: Phoenix's Spans tab, filter "
        "annotations['citeline'].label == 'BUCKET' (docs/phoenix.md)",
    ]
    assert f"run {run_id}: {failing} annotation(s) named 'citeline' written in 1 batch(es)" in tail
    assert f"run {run_id}: {len(SCENARIOS)} trace summary annotation(s) named 'citeline.trace' written" in tail
    assert tail[-1] == f"Phoenix: project 'demo-35': {phoenix.url}/projects/{_project_id(phoenix.url, 'demo-35')}/spans"
    # each failing span row of the table is one of the run's spans, and Phoenix holds its annotation
    span_rows = {s for (s,) in _store(work, "SELECT span_id FROM claim_results WHERE bucket <> 'ok'")}
    query = "&".join(f"span_ids={s}" for s in sorted(span_rows))
    with urllib.request.urlopen(f"{phoenix.url}/v1/projects/demo-35/span_annotations?{query}&limit=1000") as resp:
        landed = [a for a in json.loads(resp.read())["data"] if a["name"] == "citeline"]
    assert sorted((a["span_id"], a["result"]["label"]) for a in landed) == sorted(
        _store(work, "SELECT span_id, bucket FROM claim_results WHERE bucket <> 'ok'")
    )


def test_the_standard_otlp_endpoint_is_honoured_and_annotate_without_spans_there_exits_2(
    phoenix: PhoenixServer, tmp_path: Path
) -> None:
    out = run("demo", "--project", "demo-35-env", cwd=tmp_path, env={"OTEL_EXPORTER_OTLP_ENDPOINT": phoenix.url})
    assert out.returncode == 0, out.stderr[-3000:]
    assert f"and sent to {phoenix.url}/v1/traces (project 'demo-35-env')" in out.stderr
    stored = {s for (s,) in _store(tmp_path, "SELECT span_id FROM spans")}
    assert {s["context"]["span_id"] for s in wait_for_spans(phoenix.url, "demo-35-env", SPANS)} == stored
    # a demo that sent nowhere: its spans are in no Phoenix, so annotate writes nothing and says why
    files_only = tmp_path / "files-only"
    files_only.mkdir()
    assert run("demo", "--format", "json", cwd=files_only).returncode == 0
    [(run_id,)] = _store(files_only, "SELECT run_id FROM runs")
    annotated = run("annotate", "--phoenix", phoenix.url, cwd=files_only)
    assert (annotated.returncode, annotated.stdout) == (2, "")
    assert annotated.stderr == (
        f"citeline: none of run {run_id}'s 92 span(s) to annotate is in Phoenix at {phoenix.url}, so nothing was "
        "written; send the traces there first (configure(otlp_endpoint=...) or citeline demo --phoenix URL) and "
        "wait until they show, or pass the Phoenix they went to (docs/phoenix.md)\n"
    )


def _readme_phoenix() -> tuple[str, list[str]]:
    """README's Phoenix setup: the app's configure() line and the commands of the round trip, as written."""
    text = (ROOT / "README.md").read_text()
    section = text[text.index("## Run it next to your app") :]
    section = section[: section.index("\n## ", 3)]
    [configure_line] = re.findall(r"^configure\(.*otlp_endpoint=.*6006.*$", section, re.M)
    shell = "\n".join(re.findall(r"```sh\n(.*?)```", section, re.S))
    commands = [line.split("  #")[0].strip() for line in shell.splitlines()]
    return configure_line, [c for c in commands if c.startswith("citeline ") and "--phoenix" in c]


def test_readmes_phoenix_commands_run_as_written(phoenix: PhoenixServer, tmp_path: Path) -> None:
    """The app names its service; its spans land in the Phoenix project of that name, which README's
    `citeline pull --project` then reads (before issue 35 they landed in `default` and pull failed)."""
    configure_line, commands = _readme_phoenix()
    assert configure_line.startswith('configure(service_name="policy-bot", otlp_endpoint="http://localhost:6006')
    assert [c.split()[1] for c in commands] == ["pull", "analyze", "annotate"]
    assert "--project policy-bot" in commands[0]
    local = "http://localhost:6006"
    app = (
        "from citeline.instrumentation import configure\n"
        + configure_line.replace(local, phoenix.url)
        + "\nfrom citeline.examples.demo import run_scenarios\nrun_scenarios()\n"
    )  # the provider flushes at exit
    made = subprocess.run(
        [sys.executable, "-c", app], check=False, cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert made.returncode == 0, made.stderr[-3000:]
    assert len(wait_for_spans(phoenix.url, "policy-bot", SPANS)) == SPANS
    shutil.copy(gold_path(), tmp_path / "gold.yaml")
    outs = []
    for command in commands:
        argv = shlex.split(command.replace(local, phoenix.url))[1:]
        done = run(*argv, cwd=tmp_path)
        assert done.returncode == 0, (command, done.stderr[-3000:])
        outs.append(done.stdout)
    assert outs[0].startswith(
        f"pulled {SPANS} span(s) in {len(SCENARIOS)} trace(s) from project 'policy-bot'; {SPANS} new in citeline.duckdb"
    )
    [(run_id,)] = _store(tmp_path, "SELECT run_id FROM runs")
    assert f"run {run_id}: 21 annotation(s) named 'citeline' written in 1 batch(es)" in outs[2]


def _look(profile: Path, url: str, name: str) -> tuple[str, Path]:
    """One Chromium visit: the page's DOM once its scripts ran, and its screenshot ``test-artifacts/<name>``."""
    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / name
    shot.unlink(missing_ok=True)
    dom = chromium(profile, "--dump-dom", f"--screenshot={shot}", "--window-size=1400,900", url, wait_ms=20000)
    return dom.stdout, shot


GROUNDING_FILTER = re.compile(r"^\| Spans \| grounding \| `(annotations\['citeline'\][^`]*)` \|", re.M)


@pytest.mark.browser
def test_the_documented_bucket_filter_lists_the_runs_spans_and_a_span_shows_its_chip_in_chromium(
    demo: tuple[Path, str], phoenix: PhoenixServer, tmp_path: Path
) -> None:
    """Issue 35's acceptance: demo -> Phoenix -> analyze -> annotate (one command), then the Spans tab with
    docs/phoenix.md's grounding filter lists exactly the run's grounding spans, and one opens on its chip."""
    work, printed = demo
    [condition] = GROUNDING_FILTER.findall((ROOT / "docs" / "phoenix.md").read_text())
    want = dict(_store(work, "SELECT span_id, claim_text FROM claim_results WHERE bucket = 'grounding'"))
    assert len(want) == 2
    # the deep link annotate printed for the bucket opens the Spans tab with the documented filter
    [page] = [x.split(": ", 2)[2] for x in printed.splitlines() if x.startswith("  grounding: 2 span(s): ")]
    project = _project_id(phoenix.url, "demo-35")
    assert page.startswith(f"{phoenix.url}/projects/{urllib.parse.quote(project, safe='')}/spans?")
    assert urllib.parse.parse_qs(urllib.parse.urlsplit(page).query) == {"spanFilterCondition": [condition]}
    dom, listed = _look(tmp_path / "profile", page, "phoenix-grounding-filter.png")
    assert listed.stat().st_size > 20_000
    table = dom[dom.index("<table") : dom.index("</table>")]
    rows = re.findall(r"<tr data-selected[^>]*>(.*?)</tr>", table, re.S)
    # each row links to its span by Phoenix's node id ("Span:<row>"): resolve it to the OTel span id
    nodes = [urllib.parse.unquote(m) for r in rows for m in re.findall(r"selectedSpanNodeId=([^&\"]+)", r)[:1]]
    assert len(nodes) == len(rows) and all(base64.b64decode(n).startswith(b"Span:") for n in nodes)
    shown = [
        _graphql(phoenix.url, "query($id: ID!) { node(id: $id) { ... on Span { spanId } } }", {"id": n})["node"][
            "spanId"
        ]
        for n in nodes
    ]
    assert sorted(shown) == sorted(want)  # exactly the run's grounding spans, the root preset cleared
    # open the first listed span by its link (the one citeline's reports print): it shows the citeline chip,
    # which reads the bucket
    first = next(s for s in shown if want[s])  # a stated claim (an abstention's gold claim has no text of its own)
    opened = f"{phoenix.url}/redirects/spans/{first}"
    span_dom, shot = _look(tmp_path / "profile", opened, "phoenix-grounding-span.png")
    assert shot.stat().st_size > 20_000
    assert first in span_dom
    badge = span_dom[span_dom.index('annotation-summary-badge__name">citeline<') :][:2000]
    assert "grounding" in badge, badge
    # the chip's explanation (the Annotations panel the page opens on click; headless Chromium dumps it
    # folded, so it is read as the page reads it, from Phoenix's GraphQL) starts with the claim
    node = nodes[shown.index(first)]
    held = _graphql(
        phoenix.url,
        "query($id: ID!) { node(id: $id) { ... on Span { spanAnnotations { name explanation } } } }",
        {"id": node},
    )["node"]["spanAnnotations"]
    [explanation] = [a["explanation"] for a in held if a["name"] == "citeline"]
    assert explanation.startswith(f'claim window "{want[first]}": contradicted: '), explanation
