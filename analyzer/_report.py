"""Nightly reports: every figure comes from a ``queries/report_*.sql`` file; this renders them.

Formats: a terminal table (rich), markdown (a PR comment or a chat message), a
single self-contained HTML file with inline SVG charts (opens offline), and
JSON. ``--fail-on`` gates turn the bucket counts into an exit code for CI.
"""

from __future__ import annotations

import datetime as dt
import html
import json
import re
from dataclasses import dataclass, field
from typing import Any

import duckdb

from ._store import BUCKETS, sql


def span_url(phoenix_url: str | None, span_id: str | None) -> str | None:
    """Phoenix resolves this to the span, in whichever project holds it."""
    return f"{phoenix_url.rstrip('/')}/redirects/spans/{span_id}" if phoenix_url and span_id else None


def trace_url(phoenix_url: str | None, trace_id: str | None) -> str | None:
    """Phoenix resolves this to the trace, in whichever project holds it."""
    return f"{phoenix_url.rstrip('/')}/redirects/traces/{trace_id}" if phoenix_url and trace_id else None


COLORS = {
    "access_violation": "#b91c1c",
    "not_evaluable": "#6b7280",
    "invalid_citation": "#c2410c",
    "freshness": "#b45309",
    "retrieval_miss": "#7c3aed",
    "context_drop": "#6d28d9",
    "grounding": "#be185d",
    "uncited": "#0e7490",
    "attribution": "#0369a1",
    "resolution": "#4d7c0f",
    "ok": "#15803d",
}


@dataclass
class Report:
    run_id: str
    started_at: str
    buckets: list[dict[str, Any]]
    funnel: list[dict[str, Any]]
    metrics: list[dict[str, Any]]
    trend: list[dict[str, Any]]
    regressions: list[dict[str, Any]]
    worst_cases: list[dict[str, Any]]
    failing: list[dict[str, Any]]
    coverage: dict[str, Any] = field(default_factory=dict)
    phoenix_url: str | None = None
    gates: list[str] = field(default_factory=list)
    details: dict[tuple[Any, ...], dict[str, Any]] = field(default_factory=dict)  # failing claim -> drill-down
    chunk_texts: dict[str, str] = field(default_factory=dict)

    @property
    def coverage_line(self) -> str:
        """The run's coverage in one line for people."""
        c = self.coverage
        if c.get("traces") is None:
            return "coverage: not recorded for this run (stored by an older citeline)"
        line = f"coverage: {c['joined']} of {c['traces']} trace(s) joined a gold case ({_pct(c['coverage'])})"
        if c["unmatched_by_reason"]:
            line += "; not joined: " + ", ".join(f"{u['traces']} {u['reason']}" for u in c["unmatched_by_reason"])
        if c["missing_cases"]:
            line += f"; {c['missing_cases']} gold case(s) without a trace"
        return line

    @property
    def total_claims(self) -> int:
        return sum(int(b["claims"]) for b in self.buckets)

    def span_link(self, span_id: str | None) -> str | None:
        return span_url(self.phoenix_url, span_id)

    def trace_link(self, trace_id: str | None) -> str | None:
        return trace_url(self.phoenix_url, trace_id)

    def to_json(self) -> dict[str, Any]:
        failing = [
            {**row, "span_url": self.span_link(row["span_id"]), "trace_url": self.trace_link(row["trace_id"])}
            for row in self.failing
        ]
        return {
            "run_id": self.run_id,
            "started_at": self.started_at,
            "coverage": self.coverage,
            "buckets": self.buckets,
            "funnel": self.funnel,
            "metrics": self.metrics,
            "trend": self.trend,
            "regressions": self.regressions,
            "worst_cases": self.worst_cases,
            "failing_claims": failing,
            "gates": self.gates,
        }


class ReportError(Exception):
    """Something the user must fix (no runs, unknown run id, a bad gate)."""


def _rows(con: duckdb.DuckDBPyConnection, name: str, params: dict[str, Any]) -> list[dict[str, Any]]:
    cur = con.execute(sql(name), params)
    cols = [d[0] for d in cur.description]
    return [dict(zip(cols, row, strict=True)) for row in cur.fetchall()]


def resolve_run(con: duckdb.DuckDBPyConnection, run: str | None) -> tuple[str, str]:
    if run in (None, "latest"):
        rows = con.execute(sql("latest_run")).fetchall()
        if not rows:
            raise ReportError("the store holds no runs yet: run `citeline analyze` (or `citeline demo`) first")
        return str(rows[0][0]), str(rows[0][1])
    rows = con.execute("SELECT run_id, started_at FROM runs WHERE run_id = $r", {"r": run}).fetchall()
    if not rows:
        raise ReportError(
            f"no run {run!r} in this store; `citeline report --run latest` or list runs in the `runs` table"
        )
    return str(rows[0][0]), str(rows[0][1])


def build_report(
    con: duckdb.DuckDBPyConnection,
    run: str | None = None,
    *,
    previous: str | None = None,
    phoenix_url: str | None = None,
    worst: int = 10,
) -> Report:
    """Run every report query for one run."""
    run_id, started = resolve_run(con, run)
    p = {"run_id": run_id}
    tables = {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
    return Report(
        run_id=run_id,
        started_at=started,
        buckets=_rows(con, "report_buckets", p),
        coverage=_rows(con, "report_coverage", p)[0],
        funnel=_rows(con, "report_funnel", p),
        metrics=_rows(con, "report_citation_metrics", p),
        trend=[{**r, "day": str(r["day"])} for r in _rows(con, "report_trend", {"since": None})],
        regressions=_rows(con, "report_regressions", {**p, "previous_run_id": previous}),
        worst_cases=_rows(con, "report_worst_cases", {**p, "limit": worst}),
        failing=_rows(con, "report_failing_claims", p),
        phoenix_url=phoenix_url,
        details=_details(con, p, tables),
        chunk_texts=_chunk_texts(con, run_id, tables),
    )


def _key(row: dict[str, Any]) -> tuple[Any, ...]:
    return (row["trace_id"], row["case_id"], row["gold_claim_id"], row["claim_text"])


def _details(
    con: duckdb.DuckDBPyConnection, p: dict[str, Any], tables: set[str]
) -> dict[tuple[Any, ...], dict[str, Any]]:
    if "run_support" not in tables:  # a store made before the drill-down: the table alone
        return {}
    if not con.execute(  # a store no analyze of this version opened yet (the report opens it read-only)
        "SELECT count(*) FROM information_schema.columns WHERE table_name = 'claim_results' "
        "AND column_name = 'generation_span'"
    ).fetchall()[0][0]:
        return {}
    return {_key(r): r for r in _rows(con, "drilldown", p)}


def _chunk_texts(con: duckdb.DuckDBPyConnection, run_id: str, tables: set[str]) -> dict[str, str]:
    if "run_chunks" not in tables:
        return {}
    rows = con.execute("SELECT chunk_id, text FROM run_chunks WHERE run_id = $r", {"r": run_id}).fetchall()
    return {str(k): str(v) for k, v in rows}


# --- gates --------------------------------------------------------------------------------

_GATE = re.compile(r"^\s*([a-z_]+)\s*(>=|<=|>|<)\s*(\d+(?:\.\d+)?)\s*(%?)\s*$")
#: gates on the run's input rather than its buckets
COVERAGE_GATES = ("unmatched", "coverage", "missing_cases")


@dataclass(frozen=True)
class Gate:
    bucket: str
    op: str
    limit: float
    percent: bool

    def __str__(self) -> str:
        return f"{self.bucket}{self.op}{self.limit:g}{'%' if self.percent else ''}"


def parse_gate(text: str) -> Gate:
    """``grounding>0``, ``retrieval_miss>5%``, ``failing>0`` (any non-ok bucket); on the input:
    ``unmatched>0`` (traces that joined no case; ``%`` of traces), ``coverage<95%`` (joined /
    traces, always a percentage), ``missing_cases>0`` (gold cases no trace answered)."""
    m = _GATE.match(text)
    if not m:
        raise ReportError(
            f"cannot read gate {text!r}: write NAME>N, NAME>N% or coverage<N% (e.g. grounding>0, "
            "retrieval_miss>5%, unmatched>0, coverage<95%)"
        )
    name = m.group(1)
    if name not in BUCKETS and name not in ("failing", *COVERAGE_GATES):
        raise ReportError(
            f"unknown name {name!r} in gate {text!r}; buckets: {', '.join(BUCKETS)}, failing; "
            f"input: {', '.join(COVERAGE_GATES)}"
        )
    return Gate(name, m.group(2), float(m.group(3)), m.group(4) == "%" or name == "coverage")


def _value(report: Report, g: Gate) -> tuple[float, str]:
    """The gated figure and how to show it."""
    cov = report.coverage
    traces = int(cov.get("traces") or 0)
    if g.bucket == "coverage":
        value = 100.0 * float(cov.get("coverage", 1.0))
        return value, f"{value:.1f}% ({cov.get('joined') or 0} of {traces} traces joined a case)"
    if g.bucket == "unmatched":
        n, total, what = int(cov.get("unmatched") or 0), traces, "traces"
    elif g.bucket == "missing_cases":
        n, total, what = int(cov.get("missing_cases") or 0), 0, "gold cases"
    else:
        counts = {b["bucket"]: int(b["claims"]) for b in report.buckets}
        counts["failing"] = sum(k for b, k in counts.items() if b != "ok")
        n, total, what = counts[g.bucket], report.total_claims, "claims"
    if g.percent and total:
        value = 100.0 * n / total
        return value, f"{value:.1f}% ({n} of {total} {what})"
    return float(n), f"{n} {what}"


def check_gates(report: Report, gates: list[Gate], *, allow_empty: bool = False) -> list[str]:
    """One line per gate that fails; a run with no claims fails every gate unless ``allow_empty``."""
    if gates and report.total_claims == 0 and not allow_empty:
        return [
            f"run {report.run_id} classified no claims, so no gate can pass on it: check --traces and the gold "
            "set's case ids/questions (coverage above), or pass --allow-empty"
        ]
    out = []
    for g in gates:
        value, shown = _value(report, g)
        hit = {">": value > g.limit, ">=": value >= g.limit, "<": value < g.limit, "<=": value <= g.limit}[g.op]
        if hit:
            out.append(f"gate {g} failed: {g.bucket} is {shown} in run {report.run_id}")
    return out


# --- renderers ----------------------------------------------------------------------------


def _pct(x: Any) -> str:
    return f"{100 * float(x):.1f}%"


def render_markdown(r: Report) -> str:
    lines = [
        f"## citeline run `{r.run_id}`",
        "",
        f"{r.total_claims} claims, started {r.started_at} UTC.",
        "",
        r.coverage_line + ".",
        "",
        "| bucket | claims | share |",
        "|---|---:|---:|",
    ]
    lines += [f"| {b['bucket']} | {b['claims']} | {_pct(b['share'])} |" for b in r.buckets]
    lines += [
        "",
        "### Stage funnel (gold evidence)",
        "",
        "| step | claims | of needed | of previous step |",
        "|---|---:|---:|---:|",
    ]
    lines += [f"| {f['step']} | {f['claims']} | {_pct(f['rate'])} | {_pct(f['step_rate'])} |" for f in r.funnel]
    lines += ["", "### Citation metrics", "", "| metric | value | | definition |", "|---|---:|---:|---|"]
    lines += [
        f"| {m['metric']} | {_pct(m['value'])} | {m['numerator']}/{m['denominator']} | {m['definition']} |"
        for m in r.metrics
    ]
    lines += ["", "### Since the previous run", ""]
    if r.regressions:
        lines += ["| change | case | claim | bucket | before | now |", "|---|---|---|---|---:|---:|"]
        lines += [
            f"| {x['change']} | {x['case_id']} | {_md(x['claim'])} | {x['bucket']} | {x['before']} | {x['now']} |"
            for x in r.regressions
        ]
    else:
        lines.append("No change in failing claims (or no previous run).")
    lines += ["", "### Failing claims", ""]
    if r.failing:
        lines += ["| case | claim | bucket | stage | reason | span |", "|---|---|---|---|---|---|"]
        for f in r.failing[:50]:
            link = r.span_link(f["span_id"])
            span = f"[{f['span_id']}]({link})" if link else (f["span_id"] or "")
            lines.append(
                f"| {f['case_id']} | {_md(f['gold_claim_id'] or f['claim_text'] or '')} | {f['bucket']} | "
                f"{f['stage'] or ''} | {_md(f['reason'] or '')} | {span} |"
            )
    else:
        lines.append("None.")
    lines += [f"- {g}" for g in r.gates]
    return "\n".join(lines) + "\n"


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_table(r: Report) -> None:
    import sys

    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    console = Console(width=None if sys.stdout.isatty() else 140)
    t = Table(title=f"citeline run {r.run_id} ({r.total_claims} claims)")
    for col in ("bucket", "claims", "share"):
        t.add_column(col, justify="right" if col != "bucket" else "left")
    for b in r.buckets:
        t.add_row(b["bucket"], str(b["claims"]), _pct(b["share"]))
    console.print(t)
    console.print(r.coverage_line, markup=False, highlight=False)
    f = Table(title="stage funnel (gold evidence)")
    for col in ("step", "claims", "of needed", "of previous"):
        f.add_column(col)
    for s in r.funnel:
        f.add_row(s["step"], str(s["claims"]), _pct(s["rate"]), _pct(s["step_rate"]))
    console.print(f)
    m = Table(title="citation metrics")
    for col in ("metric", "value", "n"):
        m.add_column(col)
    for x in r.metrics:
        m.add_row(x["metric"], _pct(x["value"]), f"{x['numerator']}/{x['denominator']}")
    console.print(m)
    g = Table(title="since the previous run")
    for col in ("change", "case", "claim", "bucket", "before", "now"):
        g.add_column(col)
    for x in r.regressions:
        g.add_row(*(Text(str(v)) for v in (x["change"], x["case_id"], x["claim"], x["bucket"], x["before"], x["now"])))
    console.print(g if r.regressions else Text("no change in failing claims since the previous run"))


def _bar_chart(rows: list[tuple[str, float, str]], *, chart_id: str, title: str, fmt: Any = str) -> str:
    width, bar_h, gap, label_w = 640, 22, 6, 150
    top = max((v for _, v, _ in rows), default=0) or 1
    h = len(rows) * (bar_h + gap) + 30
    parts = [
        f'<svg id="{chart_id}" class="chart" role="img" aria-label="{html.escape(title)}" '
        f'width="{width}" height="{h}" viewBox="0 0 {width} {h}" xmlns="http://www.w3.org/2000/svg">',
        f'<text x="0" y="16" class="chart-title">{html.escape(title)}</text>',
    ]
    for i, (label, value, color) in enumerate(rows):
        y = 26 + i * (bar_h + gap)
        w = (width - label_w - 70) * value / top
        parts.append(f'<text x="{label_w - 8}" y="{y + 15}" text-anchor="end">{html.escape(label)}</text>')
        parts.append(
            f'<rect class="bar" data-label="{html.escape(label)}" data-value="{value:g}" x="{label_w}" '
            f'y="{y}" width="{w:.1f}" height="{bar_h}" fill="{color}"/>'
        )
        parts.append(f'<text x="{label_w + w + 6:.1f}" y="{y + 15}">{html.escape(fmt(value))}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _nice_top(v: int) -> int:
    """The y axis' top: the smallest of 1, 2, 5 x 10^k at or above ``v``."""
    step = 1
    while True:
        for m in (1, 2, 5):
            if m * step >= v:
                return m * step
        step *= 10


def _trend_chart(r: Report) -> str:
    """Failing claims per bucket per day: a legend that wraps inside the chart, a y axis with counts,
    lines for several days and grouped bars when the runs span one day."""
    days = sorted({t["day"] for t in r.trend})
    series: dict[str, dict[str, int]] = {}
    for t in r.trend:
        if t["bucket"] != "ok":
            series.setdefault(t["bucket"], {})[t["day"]] = int(t["claims"])
    drawn = [b for b in BUCKETS if b in series]
    width, left, right, bottom = 640, 48, 16, 30
    # the legend: one swatch per bucket drawn, wrapping to a new row before the right edge
    legend: list[tuple[float, float, str]] = []
    lx, ly = float(left), 28.0
    for bucket in drawn:
        item_w = 14 + 7 * len(bucket) + 12
        if lx + item_w > width - right and lx > left:
            lx, ly = float(left), ly + 16
        legend.append((lx, ly, bucket))
        lx += item_w
    plot_top = ly + 22
    height = int(plot_top + 170 + bottom)
    top = _nice_top(max((v for s in series.values() for v in s.values()), default=0) or 1)
    parts = [
        f'<svg id="chart-trend" class="chart" role="img" aria-label="failing claims per bucket per day" '
        f'width="{width}" height="{height}" viewBox="0 0 {width} {height}" xmlns="http://www.w3.org/2000/svg">',
        '<text x="0" y="16" class="chart-title">failing claims per bucket, per day</text>',
    ]
    for x0, y0, bucket in legend:
        parts.append(
            f'<g class="legend-item" data-bucket="{bucket}"><rect x="{x0:.0f}" y="{y0 - 9:.0f}" width="10" '
            f'height="10" fill="{COLORS[bucket]}"/><text x="{x0 + 14:.0f}" y="{y0:.0f}">{bucket}</text></g>'
        )

    def y(v: float) -> float:
        return height - bottom - (height - bottom - plot_top) * v / top

    for tick in range(0, top + 1, top // 5 if top >= 10 else 1):  # the y axis: whole counts, light grid lines
        label = str(tick)
        parts.append(
            f'<line x1="{left}" x2="{width - right}" y1="{y(tick):.1f}" y2="{y(tick):.1f}" stroke="#ddd"/>'
            f'<text class="y-tick" x="{left - 6}" y="{y(tick) + 4:.1f}" text-anchor="end">{label}</text>'
        )
    parts.append(f'<line x1="{left}" x2="{left}" y1="{plot_top:.1f}" y2="{y(0):.1f}" stroke="#888"/>')
    plot_w = width - left - right
    if len(days) == 1:  # one day: a line would be a dot; grouped bars instead
        day = days[0]
        slot = plot_w / max(1, len(drawn))
        bar_w = min(36.0, slot * 0.7)
        for i, bucket in enumerate(drawn):
            v = series[bucket].get(day, 0)
            bx = left + i * slot + (slot - bar_w) / 2
            parts.append(
                f'<rect class="trend-bar" data-bucket="{bucket}" data-value="{v}" x="{bx:.1f}" y="{y(v):.1f}" '
                f'width="{bar_w:.1f}" height="{y(0) - y(v):.1f}" fill="{COLORS[bucket]}"/>'
            )
        parts.append(
            f'<text x="{left + plot_w / 2:.1f}" y="{height - 8}" text-anchor="middle">{html.escape(day)}</text>'
        )
    else:

        def x(i: int) -> float:
            return left + 10 + (plot_w - 20) * i / max(1, len(days) - 1)

        for i, d in enumerate(days):
            parts.append(f'<text x="{x(i):.1f}" y="{height - 8}" text-anchor="middle">{html.escape(d)}</text>')
        for bucket in drawn:
            pts = [(x(i), y(series[bucket].get(d, 0))) for i, d in enumerate(days)]
            path = " ".join(f"{px:.1f},{py:.1f}" for px, py in pts)
            parts.append(
                f'<polyline class="trend-line" data-bucket="{bucket}" points="{path}" fill="none" '
                f'stroke="{COLORS[bucket]}" stroke-width="2"/>'
            )
            parts += [f'<circle cx="{px:.1f}" cy="{py:.1f}" r="3" fill="{COLORS[bucket]}"/>' for px, py in pts]
    parts.append("</svg>")
    return "".join(parts)


def render_html(r: Report) -> str:
    """One self-contained page: inline CSS and SVG, no scripts, no network."""
    e = html.escape
    bucket_chart = _bar_chart(
        [(b["bucket"], float(b["claims"]), COLORS[b["bucket"]]) for b in r.buckets],
        chart_id="chart-buckets",
        title="claims per bucket",
        fmt=lambda v: f"{v:g}",
    )
    funnel_chart = _bar_chart(
        [(f["step"], float(f["claims"]), "#1d4ed8") for f in r.funnel],
        chart_id="chart-funnel",
        title="gold evidence along the chain",
        fmt=lambda v: f"{v:g}",
    )
    metrics = "".join(
        f"<tr><td>{e(m['metric'])}</td><td class='num'>{_pct(m['value'])}</td>"
        f"<td class='num'>{m['numerator']}/{m['denominator']}</td><td>{e(m['definition'])}</td></tr>"
        for m in r.metrics
    )
    regressions = (
        "".join(
            f"<tr class='{e(x['change'])}'><td>{e(x['change'])}</td><td>{e(x['case_id'])}</td><td>{e(str(x['claim']))}</td>"
            f"<td>{e(x['bucket'])}</td><td class='num'>{x['before']}</td><td class='num'>{x['now']}</td></tr>"
            for x in r.regressions
        )
        or "<tr><td colspan='6'>No change in failing claims (or no previous run).</td></tr>"
    )
    rows = []
    sections = []
    for n, f in enumerate(r.failing):
        link = r.span_link(f["span_id"])
        span = f"<a href='{e(link)}'>{e(f['span_id'])}</a>" if link else e(f["span_id"] or "")
        trace = r.trace_link(f["trace_id"])
        trace_cell = f"<a href='{e(trace)}'>trace</a>" if trace else e(f["trace_id"][:12])
        sections.append(_detail_section(r, n, f, span, trace_cell))
        rows.append(
            f"<tr class='failing-claim' data-bucket='{e(f['bucket'])}'>"
            f"<td><a class='drill' href='#claim-{n}'>{e(f['case_id'] or '(no case)')}</a></td>"
            f"<td>{e(f['gold_claim_id'] or f['claim_text'] or '')}</td>"
            f"<td><span class='tag' style='background:{COLORS[f['bucket']]}'>{e(f['bucket'])}</span></td>"
            f"<td>{e(f['stage'] or '')}</td><td>{e(f['reason'] or '')}</td><td>{span}</td><td>{trace_cell}</td></tr>"
        )
    gates = "".join(f"<p class='gate'>{e(g)}</p>" for g in r.gates)
    generated = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>citeline run {e(r.run_id)}</title>
<style>
body {{ font: 14px/1.45 system-ui, sans-serif; margin: 24px; color: #111827; max-width: 1200px; }}
h1 {{ font-size: 20px; }} h2 {{ font-size: 16px; margin-top: 28px; }}
table {{ border-collapse: collapse; width: 100%; }} td, th {{ border-bottom: 1px solid #e5e7eb; padding: 4px 8px;
text-align: left; vertical-align: top; }} .num {{ text-align: right; }}
.chart text {{ font: 12px system-ui, sans-serif; fill: #111827; }} .chart-title {{ font-weight: 600; }}
.tag {{ color: white; padding: 1px 6px; border-radius: 4px; font-size: 12px; }}
.grid {{ display: flex; flex-wrap: wrap; gap: 24px; }} .regressed td:first-child {{ color: #b91c1c; }}
.fixed td:first-child {{ color: #15803d; }} .gate {{ color: #b91c1c; font-weight: 600; }}
.claim-detail {{ border: 1px solid #e5e7eb; border-radius: 6px; padding: 8px 16px; margin: 16px 0; }}
.claim-detail:target {{ position: fixed; inset: 0; margin: 0; overflow: auto; background: white; z-index: 10;
border: 0; border-top: 4px solid #1d4ed8; border-radius: 0; padding: 16px 32px; }}
mark.marker {{ background: #fde68a; padding: 0 2px; border-radius: 3px; }}
.chain {{ display: flex; gap: 6px; list-style: none; padding: 0; }} .chain li {{ padding: 3px 10px;
border-radius: 12px; font-size: 12px; border: 1px solid #d1d5db; }} .chain .pass {{ background: #dcfce7; }}
.chain .fail {{ background: #fee2e2; font-weight: 600; }} .chain .na {{ color: #6b7280; }}
.chunks {{ display: grid; grid-template-columns: 1fr 1fr; gap: 16px; }} .chunk {{ margin: 6px 0; }}
.chunk code {{ font-size: 12px; }} .chunk p {{ margin: 2px 0 0; color: #374151; }}
</style></head><body>
<h1>citeline run <code>{e(r.run_id)}</code></h1>
<p>{r.total_claims} claims; run started {e(r.started_at)} UTC; page written {generated}.</p>
<p id="coverage">{e(r.coverage_line)}.</p>
{gates}
<div class="grid">{bucket_chart}{funnel_chart}</div>
<h2>Trend</h2>{_trend_chart(r)}
<h2>Citation metrics</h2>
<table id="metrics"><tr><th>metric</th><th>value</th><th>n</th><th>definition</th></tr>{metrics}</table>
<h2>Since the previous run</h2>
<table id="regressions"><tr><th>change</th><th>case</th><th>claim</th><th>bucket</th><th>before</th><th>now</th></tr>
{regressions}</table>
<h2>Failing claims ({len(r.failing)})</h2>
<table id="failing"><tr><th>case</th><th>claim</th><th>bucket</th><th>stage</th><th>reason</th><th>span</th>
<th>trace</th></tr>{"".join(rows)}</table>
<h2>Each failing claim</h2>
{"".join(sections)}
</body></html>
"""


_MARKER = re.compile(r"\[\[[^\]]+\]\]|\[\d+(?:\s*,\s*\d+)*\]")
_STEPS = ("retrieved", "in_context", "cited", "resolved", "rendered")
_STEP_OF_STAGE = {"retrieval": 0, "context": 1, "generation": 2, "resolution": 3, "render": 4}


def _highlight(answer: str) -> str:
    """The answer, escaped, with its citation markers ([1], [[chunk-id]]) marked."""
    out, at = [], 0
    for m in _MARKER.finditer(answer):
        out += [html.escape(answer[at : m.start()]), f"<mark class='marker'>{html.escape(m.group(0))}</mark>"]
        at = m.end()
    out.append(html.escape(answer[at:]))
    return "".join(out)


def _chunk_list(r: Report, ids: list[str]) -> str:
    e = html.escape
    if not ids:
        return "<p class='none'>none</p>"
    return "".join(
        f"<div class='chunk'><code>{e(c)}</code><p>{e(r.chunk_texts.get(c, '(no text recorded)'))}</p></div>"
        for c in ids
    )


def _detail_section(r: Report, n: int, f: dict[str, Any], span: str, trace: str) -> str:
    """One failing claim, explained: question, answer, the chain step by step, support against citations."""
    e = html.escape
    d = r.details.get(_key(f), {})
    if d.get("evidence_needed"):
        states = [("pass" if d.get(f"evidence_{s}") else "fail") for s in _STEPS]
    else:
        states = ["na"] * len(_STEPS)
    if f["bucket"] == "not_evaluable" and f["stage"] in _STEP_OF_STAGE:  # from the unreadable stage on: unknown
        at = _STEP_OF_STAGE[f["stage"]]
        states = states[:at] + ["na"] * (len(_STEPS) - at)
    chain = "".join(f"<li class='{st}'>{s.replace('_', ' ')}</li>" for s, st in zip(_STEPS, states, strict=True))
    claim = f["gold_claim_id"] or f["claim_text"] or ""
    return f"""<section class="claim-detail" id="claim-{n}" data-bucket="{e(f["bucket"])}">
<h3><span class='tag' style='background:{COLORS[f["bucket"]]}'>{e(f["bucket"])}</span> {e(f["case_id"] or "")} / {e(claim)}</h3>
<p><b>Question</b> {e(d.get("question") or "(not recorded)")}</p>
<p><b>Answer</b> {_highlight(d.get("answer") or "(not recorded)")}</p>
<p><b>Claim</b> {e(f["claim_text"] or "(left out of the answer)")}</p>
<ol class="chain" aria-label="gold evidence along the chain">{chain}</ol>
<p><b>Where it broke</b> {e(f["stage"] or "")}: {e(f["reason"] or "")}</p>
<p><b>Judge</b> {e(d.get("support_label") or "not asked")}{_rationale(d)}</p>
<div class="chunks"><div><h4>gold support</h4>{_chunk_list(r, list(d.get("support_chunks") or []))}</div>
<div><h4>cited</h4>{_chunk_list(r, list(d.get("cited_chunks") or []))}</div></div>
<p>span {span} · {trace} · <a href="#failing">back to the table</a></p>
</section>"""


def _rationale(d: dict[str, Any]) -> str:
    why = d.get("support_rationale")
    return f" <span class='why'>— {html.escape(why)}</span>" if why else ""


def render_json(r: Report) -> str:
    return json.dumps(r.to_json(), indent=2, default=str)
