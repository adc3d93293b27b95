"""The HTML report shows the citation metrics and marks every place an evaluator change shows through.

The demo app's real traces analyzed twice into one real store, the second time with one judge option
changed, then ``citeline report --format html``: the metrics table holds every metric the gates read,
a note says the judge changed with this run, the trend marks the day, the regressions are
``judge changed`` rows (styled apart from regressions) and the failing claim whose bucket moved with
the judge carries the mark, in the table and in its drill-down. The page is then looked at in
headless Chromium (test-artifacts/report-evaluator-change.png).
"""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

import duckdb
import pytest

from citeline.analyzer.cli.main import main
from citeline.analyzer.reports.gates import METRICS
from citeline.analyzer.reports.html import _trend_chart
from citeline.examples.demo import gold_path
from tests.browser import screenshot

STRICT = ["--judge", "rules", "--judge-option", "coverage=0.95"]


def _analyze(db: Path, traces: Path, *judge: str) -> str:
    args = ["analyze", "--db", str(db), "--traces", str(traces), "--gold", str(gold_path()), "--quiet", *judge]
    assert main(args) in (0, 1)
    con = duckdb.connect(str(db), read_only=True)
    try:
        return str(con.execute("SELECT run_id FROM runs ORDER BY started_at DESC, run_id DESC LIMIT 1").fetchone()[0])  # type: ignore[index]
    finally:
        con.close()


@pytest.fixture(scope="module")
def judge_changed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    """The report page of a store whose second run changed a judge option, and the two run ids."""
    tmp = tmp_path_factory.mktemp("judge-changed")
    traces = tmp / "traces"
    assert main(["demo", "--traces", str(traces), "--db", str(tmp / "d.duckdb"), "--fix", "wrong-number"]) == 0
    db = tmp / "s.duckdb"
    run1 = _analyze(db, traces)
    run2 = _analyze(db, traces, *STRICT)
    page = tmp / "report.html"
    assert main(["report", "--db", str(db), "--format", "html", "--out", str(page)]) == 0
    return page, run1, run2


def test_the_html_report_shows_the_metrics_and_marks_the_judge_change(judge_changed: tuple[Path, str, str]) -> None:
    page, run1, run2 = judge_changed
    html = page.read_text()

    metrics = re.search(r'<table id="metrics">(.*?)</table>', html, re.S).group(1)  # type: ignore[union-attr]
    shown = re.findall(r"<tr><td>(\w+)</td><td class='num'>([\d.]+%)</td><td class='num'>(\d+)/(\d+)</td>", metrics)
    assert [m[0] for m in shown] == list(METRICS)
    assert "id='metrics-evaluator'>The judge changed with this run" in html

    note = re.search(r"<div id='evaluator-changes' class='evaluator-note'>(.*?)</div>", html, re.S).group(1)  # type: ignore[union-attr]
    assert f"judge changed at run <code>{run2}</code>" in note
    assert "judge <code>rules@4</code> → <code>rules@4{&quot;coverage&quot;:0.95}</code>" in note
    assert "<code class='cmd'>citeline report --baseline RUN</code>" in note
    assert f"Since run <code>{run1}</code>" in html

    trend = re.search(r'<svg id="chart-trend".*?</svg>', html, re.S).group(0)  # type: ignore[union-attr]
    assert re.search(r'class="evaluator-mark" data-day="\d{4}-\d\d-\d\d"', trend)
    assert "judge changed (the day&#x27;s last run)" in trend  # one day: its bars are the new judge's run

    rows = re.findall(r"<tr class='([\w-]+)'><td>([\w ]+)</td>", html)
    assert rows and set(rows) == {("judge-changed", "judge changed")}  # no row reads as a regression
    marked = re.findall(
        r"<tr class='failing-claim' data-bucket='(\w+)'><td><a class='drill' href='#claim-\d+'>"
        r"([\w-]+)</a></td><td>[^<]*</td><td><span class='tag'[^>]*>\w+</span>"
        r" <span class='moved'>judge changed</span>",
        html,
    )
    assert marked == [("grounding", "refurbished-warranty")]
    assert html.count("<span class='moved'>judge changed</span>") == 2  # the table row and its drill-down


@pytest.mark.browser
def test_the_judge_changed_page_renders_in_chromium(judge_changed: tuple[Path, str, str], tmp_path: Path) -> None:
    page, _, _ = judge_changed
    shot = screenshot(tmp_path / "profile", page.as_uri(), "report-evaluator-change.png", size="1280,2600")
    assert shot.stat().st_size > 50_000


def test_a_several_day_trend_marks_the_day_the_evaluator_changed_with_a_dashed_line() -> None:
    days = ("2026-11-29", "2026-11-30", "2026-12-01")
    r = SimpleNamespace(
        trend=[{"day": d, "bucket": "grounding", "claims": n} for d, n in zip(days, (1, 3, 2), strict=True)],
        evaluator_changes=[{"day": "2026-11-30", "judge_changed": False, "gold_changed": True}],
    )
    svg = _trend_chart(r)  # type: ignore[arg-type]
    marks = re.findall(
        r'<g class="evaluator-mark" data-day="([\d-]+)"><line [^>]*stroke-dasharray[^>]*/>'
        r'<text [^>]*class="mark-label">([^<]+)</text></g>',
        svg,
    )
    assert marks == [("2026-11-30", "gold changed")]
    # a change on a day the trend does not show marks nothing
    r.evaluator_changes = [{"day": "2026-10-01", "judge_changed": True, "gold_changed": True}]
    assert "evaluator-mark" not in _trend_chart(r)  # type: ignore[arg-type]
