"""`citeline report`: demo twice with a fix between, gates, the HTML page in a real headless Chromium."""

from __future__ import annotations

import html
import json
import os
import pty
import re
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from citeline.analyzer.escaping import md
from citeline.analyzer.store import DEFAULT_DB
from tests.browser import ARTIFACTS, chromium, screenshot

ROOT = Path(__file__).resolve().parents[1]
CITELINE = str(Path(sys.executable).with_name("citeline"))


def cli(*args: str, cwd: Path, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run([CITELINE, *args], cwd=cwd, capture_output=True, text=True, timeout=180, check=check)


@pytest.fixture(scope="module")
def two_nights(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo run twice; between the runs the 'wrong-number' fault was fixed."""
    work = tmp_path_factory.mktemp("nights")
    cli("demo", "--format", "json", cwd=work)
    cli("demo", "--format", "json", "--fix", "wrong-number", cwd=work)
    return work


@pytest.mark.slow
def test_a_fix_between_two_demo_runs_shows_in_the_regression_report(two_nights: Path) -> None:
    out = json.loads(cli("report", "--format", "json", cwd=two_nights).stdout)
    assert [
        (r["change"], r["case_id"], r["claim"], r["bucket"], r["before"], r["now"]) for r in out["regressions"]
    ] == [("fixed", "returns-window", "window", "grounding", 1, 0)]
    md = cli("report", "--format", "markdown", cwd=two_nights).stdout
    assert "| fixed | returns-window | window | grounding | 1 | 0 |" in md


@pytest.mark.slow
def test_gates_exit_non_zero_with_a_one_line_reason(two_nights: Path) -> None:
    ok = cli(
        "report",
        "--format",
        "json",
        "--fail-on",
        "grounding>1",
        "--fail-on",
        "retrieval_miss>10%",
        cwd=two_nights,
    )
    assert ok.returncode == 0
    bad = cli(
        "report",
        "--format",
        "json",
        "--fail-on",
        "access_violation>0",
        "--fail-on",
        "uncited>4%",
        cwd=two_nights,
        check=False,
    )
    assert bad.returncode == 1
    head, *lines = bad.stderr.splitlines()[-3:]
    assert re.fullmatch(r"citeline: run \S+: 2 of 2 gates failed:", head)
    assert lines == [
        "  3 claims are access_violation (gate access_violation>0)",
        "  4.8% of claims are uncited (2 of 42; gate uncited>4%)",
    ]
    wrong = cli("report", "--fail-on", "groundingg>0", cwd=two_nights, check=False)
    assert wrong.returncode == 2
    assert "unknown name 'groundingg' in gate 'groundingg>0'" in wrong.stderr


def test_report_without_a_store_or_run_is_a_clear_error(tmp_path: Path) -> None:
    missing = cli("report", cwd=tmp_path, check=False)
    assert missing.returncode == 2
    assert "no store at citeline.duckdb" in missing.stderr
    unknown = cli("report", "--db", str(tmp_path / "x.duckdb"), "--run", "nope", cwd=tmp_path, check=False)
    assert unknown.returncode == 2


@pytest.mark.browser
def test_html_report_renders_charts_and_failing_rows_in_chromium(two_nights: Path, tmp_path: Path) -> None:
    page = two_nights / "report.html"
    cli("report", "--format", "html", "--out", str(page), "--phoenix", "http://127.0.0.1:6006", cwd=two_nights)
    failing = json.loads(cli("report", "--format", "json", cwd=two_nights).stdout)["failing_claims"]
    dom = chromium(tmp_path / "profile", "--dump-dom", page.as_uri()).stdout
    assert dom.count('class="bar"') == 11 + 5  # eleven buckets, five funnel steps
    for chart in ("chart-buckets", "chart-funnel", "chart-trend"):
        assert f'id="{chart}"' in dom
    # both runs are on one day: grouped bars, one per failing bucket, and every legend entry inside the chart
    assert dom.count('class="trend-bar"') == 10
    assert dom.count('class="legend-item"') == 10
    assert dom.count('class="failing-claim"') == len(failing) == 20
    first = failing[0]
    assert f'href="http://127.0.0.1:6006/redirects/spans/{first["span_id"]}"' in dom
    assert "returns-window" in dom and "window" in dom
    shot = screenshot(tmp_path / "profile", page.as_uri(), "report.png")
    assert shot.stat().st_size > 20_000
    shutil.copy(page, ARTIFACTS / "report.html")


@pytest.mark.browser
def test_every_failing_claim_drills_down_to_its_own_section(two_nights: Path, tmp_path: Path) -> None:
    from html.parser import HTMLParser

    page = two_nights / "drill.html"
    cli("report", "--format", "html", "--out", str(page), "--phoenix", "http://127.0.0.1:6006", cwd=two_nights)
    failing = json.loads(cli("report", "--format", "json", cwd=two_nights).stdout)["failing_claims"]

    class Links(HTMLParser):
        def __init__(self) -> None:
            super().__init__()
            self.ids: set[str] = set()
            self.row_links: list[list[str]] = []
            self.in_row = False

        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            a = dict(attrs)
            if a.get("id"):
                self.ids.add(str(a["id"]))
            if tag == "tr":
                self.in_row = a.get("class") == "failing-claim"
                if self.in_row:
                    self.row_links.append([])
            if tag == "a" and self.in_row and str(a.get("href", "")).startswith("#"):
                self.row_links[-1].append(str(a["href"])[1:])

        def handle_endtag(self, tag: str) -> None:
            if tag == "tr":
                self.in_row = False

    parsed = Links()
    parsed.feed(page.read_text())
    assert len(parsed.row_links) == len(failing) == 20
    for links in parsed.row_links:  # every row links to a section that is in the file
        assert len(links) == 1 and links[0] in parsed.ids, links
    dom = chromium(tmp_path / "p", "--dump-dom", page.as_uri()).stdout
    assert dom.count('class="claim-detail"') == 20
    # an attribution claim: question, answer with its marker, the chain (retrieved and in context, not the
    # right citation), the gold support and the chunk it cites instead, each with its gold text
    n = next(i for i, f in enumerate(failing) if f["bucket"] == "attribution")
    section = dom[dom.index(f'id="claim-{n}"') :].split("</section>")[0]
    assert "<b>Question</b> (not recorded)" not in section and '<mark class="marker">' in section
    steps = re.findall(r'<li class="(\w+)">([a-z ]+)</li>', section)
    assert steps[:3] == [("pass", "retrieved"), ("pass", "in context"), ("fail", "cited")]
    support, cited = section.split("<h4>cited</h4>")
    assert "<code>" in support and "<code>" in cited and "(no text recorded)" not in section
    # the judge's label and its own rationale, as the run stored them (the attribution claim was entailed)
    con = duckdb.connect(str(two_nights / DEFAULT_DB), read_only=True)
    try:
        [(label, why)] = con.execute(
            "SELECT support_label, support_rationale FROM claim_results WHERE run_id = ? AND trace_id = ? "
            "AND bucket = 'attribution'",
            [json.loads(cli("report", "--format", "json", cwd=two_nights).stdout)["run_id"], failing[n]["trace_id"]],
        ).fetchall()
    finally:
        con.close()
    assert label == "entailed" and why
    assert f'<b>Judge</b> entailed <span class="why">— {html.escape(why, quote=False)}</span>' in section
    # a stage that could not be read: it and what follows are unknown, never shown as passed
    for k, f in enumerate(failing):
        if f["bucket"] == "not_evaluable" and f["stage"] == "context":
            part = dom[dom.index(f'id="claim-{k}"') :].split("</section>")[0]
            steps = re.findall(r'<li class="(\w+)">([a-z ]+)</li>', part)
            assert [s for s, _ in steps[1:]] == ["na"] * 4, steps
    for bucket in sorted({f["bucket"] for f in failing}):  # one look per bucket
        k = next(i for i, f in enumerate(failing) if f["bucket"] == bucket)
        shot = screenshot(
            tmp_path / "p", f"{page.as_uri()}#claim-{k}", f"drilldown-{bucket}.png", size="1280,900", wait_ms=3000
        )
        assert shot.stat().st_size > 20_000


@pytest.mark.slow
def test_progress_shows_on_a_terminal_and_stays_quiet_otherwise(two_nights: Path, tmp_path: Path) -> None:
    from citeline.examples.demo import gold_path

    traces = next((two_nights / "citeline-demo-traces").iterdir())
    args = [CITELINE, "analyze", "--traces", str(traces), "--gold", str(gold_path()), "--format", "json"]
    piped = subprocess.run(
        [*args, "--db", str(tmp_path / "a.duckdb")], capture_output=True, text=True, timeout=120, check=True
    )
    assert "ingesting" not in piped.stderr and "..." not in piped.stderr and "classified" not in piped.stderr
    # a real terminal on stderr: the progress line appears, unless --quiet
    for quiet, expect in ((False, True), (True, False)):
        master, slave = pty.openpty()
        extra = ["--quiet"] if quiet else []
        proc = subprocess.run(
            [*args, "--db", str(tmp_path / f"b{quiet}.duckdb"), *extra],
            stdout=subprocess.PIPE,
            stderr=slave,
            timeout=120,
            check=True,
        )
        os.close(slave)
        seen = b""
        try:
            while chunk := os.read(master, 4096):
                seen += chunk
        except OSError:
            pass
        os.close(master)
        assert (b"ingesting" in seen) is expect
        for step in (
            b"joining traces to cases...",
            b"splitting answers into claims...",
            b"judging support...",
            b"classifying...",
            b"classified traces: 40 / 40",
            b"storing the run...",
        ):
            assert (step in seen) is expect, seen
        assert json.loads(proc.stdout)["summary"]


def _trend(rows: list[tuple[str, str, int]]) -> str:
    from types import SimpleNamespace

    from citeline.analyzer.reports.html import _trend_chart

    return _trend_chart(SimpleNamespace(trend=[{"day": d, "bucket": b, "claims": n} for d, b, n in rows]))  # type: ignore[arg-type]


def test_the_trend_legend_wraps_inside_the_chart_and_the_y_axis_counts() -> None:
    from citeline.analyzer.store import BUCKETS

    failing = [b for b in BUCKETS if b != "ok"]
    svg = _trend([(day, b, 3 + i) for i, b in enumerate(failing) for day in ("2026-11-29", "2026-11-30")])
    width = int(re.search(r'width="(\d+)"', svg).group(1))  # type: ignore[union-attr]
    items = re.findall(r'<g class="legend-item" data-bucket="(\w+)"><rect x="(\d+)" y="(\d+)".*?<text x="(\d+)"', svg)
    assert [i[0] for i in items] == failing  # all ten named, in repair order
    for bucket, _, _, text_x in items:
        assert int(text_x) + 7 * len(bucket) <= width, bucket  # none clipped at the right edge
    assert len({row for _, _, row, _ in items}) >= 2  # it wrapped
    ticks = re.findall(r'<text class="y-tick"[^>]*>([\d.]+)</text>', svg)
    assert ticks == ["0", "4", "8", "12", "16", "20"]  # the highest day has 12: the axis goes to 20
    assert svg.count('class="trend-line"') == 10 and 'class="trend-bar"' not in svg


def test_a_one_day_trend_is_drawn_as_bars() -> None:
    svg = _trend([("2026-11-30", "grounding", 2), ("2026-11-30", "uncited", 5), ("2026-11-30", "ok", 9)])
    bars = re.findall(r'<rect class="trend-bar" data-bucket="(\w+)" data-value="(\d+)"', svg)
    assert bars == [("grounding", "2"), ("uncited", "5")]
    assert "trend-line" not in svg
    assert re.findall(r'<text class="y-tick"[^>]*>([\d.]+)</text>', svg) == ["0", "1", "2", "3", "4", "5"]


@pytest.mark.slow
def test_every_format_links_each_failing_claim_to_its_span_and_trace(two_nights: Path) -> None:
    """Issue 35: the table (a span column and a footer with the link base and the filter), Markdown
    (span and trace links), JSON; each checked as whole rows against the run's failing claims."""
    url = "http://127.0.0.1:6006"
    failing = json.loads(cli("report", "--format", "json", "--phoenix", url, cwd=two_nights).stdout)["failing_claims"]
    assert len(failing) == 20  # the second night: wrong-number fixed
    for f in failing:
        assert (f["span_url"], f["trace_url"]) == (
            f"{url}/redirects/spans/{f['span_id']}",
            f"{url}/redirects/traces/{f['trace_id']}",
        )
    page = cli("report", "--format", "markdown", "--phoenix", url, cwd=two_nights).stdout
    rows = page[page.index("### Failing claims") :].split("\n")[2:]
    assert rows[:2] == [
        "| case | claim | bucket | basis | stage | reason | span | trace |",
        "|---|---|---|---|---|---|---|---|",
    ]
    assert rows[2 : 2 + len(failing)] == [
        "| "
        + " | ".join(md(v) for v in (f["case_id"], f["gold_claim_id"] or f["claim_text"], f["bucket"], f["basis"]))
        + f" | {md(f['stage'])} | {md(f['reason'])} | [{f['span_id']}]({f['span_url']}) | "
        f"[{f['trace_id']}]({f['trace_url']}) |"
        for f in failing
    ]
    table = cli("report", "--phoenix", url, cwd=two_nights).stdout
    body = table[table.index("failing claims (20 of 20)") : table.index("since the previous run")].split("\n")
    cells = [[c.strip() for c in line.strip("│").split("│")] for line in body if line.startswith("│")]
    assert cells == [
        [f["case_id"], f["gold_claim_id"] or f["claim_text"], f["bucket"], f["stage"], f["span_id"]] for f in failing
    ]
    footer = body[body.index(next(line for line in body if line.startswith("└"))) + 1 :][:2]
    assert footer == [
        f"open a failure in Phoenix: {url}/redirects/spans/SPAN (its trace: {url}/redirects/traces/TRACE)",
        "a bucket's spans, after citeline annotate: Phoenix's Spans tab, filter "
        "annotations['citeline'].label == 'BUCKET' (docs/phoenix.md)",
    ]
    plain = cli("report", cwd=two_nights).stdout  # no Phoenix named: the span ids, no footer
    assert "failing claims (20 of 20)" in plain and "open a failure in Phoenix" not in plain
