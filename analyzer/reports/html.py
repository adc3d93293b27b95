"""The HTML report: one self-contained file, inline SVG charts, a drill-down section per failing claim.

Reads a built :class:`~citeline.analyzer.reports.report.Report` only (no queries); docs/reports.md
says what each part shows.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from citeline.analyzer.buckets import COLORS, NOT_EVALUABLE
from citeline.analyzer.escaping import html_text
from citeline.analyzer.reports.report import Report, _key, _pct
from citeline.analyzer.store import BUCKETS
from citeline.instrumentation.labels import find_markers


def _bar_chart(rows: list[tuple[str, float, str]], *, chart_id: str, title: str, fmt: Any = str) -> str:
    width, bar_h, gap, label_w = 640, 22, 6, 150
    top = max((v for _, v, _ in rows), default=0) or 1
    h = len(rows) * (bar_h + gap) + 30
    parts = [
        f'<svg id="{chart_id}" class="chart" role="img" aria-label="{html_text(title)}" '
        f'width="{width}" height="{h}" viewBox="0 0 {width} {h}" xmlns="http://www.w3.org/2000/svg">',
        f'<text x="0" y="16" class="chart-title">{html_text(title)}</text>',
    ]
    for i, (label, value, color) in enumerate(rows):
        y = 26 + i * (bar_h + gap)
        w = (width - label_w - 70) * value / top
        parts.append(f'<text x="{label_w - 8}" y="{y + 15}" text-anchor="end">{html_text(label)}</text>')
        parts.append(
            f'<rect class="bar" data-label="{html_text(label)}" data-value="{value:g}" x="{label_w}" '
            f'y="{y}" width="{w:.1f}" height="{bar_h}" fill="{color}"/>'
        )
        parts.append(f'<text x="{label_w + w + 6:.1f}" y="{y + 15}">{html_text(fmt(value))}</text>')
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
    lx, ly = float(left), 36.0  # below the title, clear of it
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
    # the days where the judge or the gold set changed: labels may have moved with the app unchanged
    changed = {str(x["day"]): _changed_what(x) for x in getattr(r, "evaluator_changes", []) if str(x["day"]) in days}
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
        label = f"{day} · {changed[day]} (the day's last run)" if day in changed else day
        parts.append(
            f'<text x="{left + plot_w / 2:.1f}" y="{height - 8}" text-anchor="middle">{html_text(label)}</text>'
        )
        if day in changed:
            parts.append(
                f'<rect class="evaluator-mark" data-day="{html_text(day)}" x="{left}" y="{plot_top - 4:.1f}" '
                f'width="{plot_w}" height="{y(0) - plot_top + 4:.1f}" fill="none" stroke="#6b7280" '
                'stroke-dasharray="4 3"/>'
            )
    else:

        def x(i: int) -> float:
            return left + 10 + (plot_w - 20) * i / max(1, len(days) - 1)

        for i, d in enumerate(days):
            # the first and last dates end at the plot's edges, not past the chart's
            at = "start" if i == 0 else "end" if i == len(days) - 1 else "middle"
            tx = x(i) - 10 if at == "start" else x(i) + 10 if at == "end" else x(i)
            parts.append(f'<text x="{tx:.1f}" y="{height - 8}" text-anchor="{at}">{html_text(d)}</text>')
            if d in changed:  # a dashed line where the evaluator changed, named at the top of the plot (marks
                # next to each other name theirs a row apart)
                row = 12 * (sorted(changed).index(d) % 2)
                left_of = x(i) + 4 + 6.5 * len(changed[d]) > width - right  # no room right of the line
                parts.append(
                    f'<g class="evaluator-mark" data-day="{html_text(d)}"><line x1="{x(i):.1f}" x2="{x(i):.1f}" '
                    f'y1="{plot_top - 6:.1f}" y2="{y(0):.1f}" stroke="#6b7280" stroke-dasharray="4 3"/>'
                    f'<text x="{x(i) - 4 if left_of else x(i) + 4:.1f}" y="{plot_top + 4 + row:.1f}" '
                    f'text-anchor="{"end" if left_of else "start"}" class="mark-label">{html_text(changed[d])}</text></g>'
                )
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


def _changed_what(x: dict[str, Any]) -> str:
    """judge changed, gold changed, or judge and gold changed: a step of the history in three words."""
    return " and ".join(w for w, on in (("judge", x.get("judge_changed")), ("gold", x.get("gold_changed"))) if on) + (
        " changed"
    )


def _evaluator_marks(r: Report) -> str:
    """Each step of the history where the judge or the gold set changed: labels may move with the app unchanged."""
    if not r.evaluator_changes:
        return ""
    e = html_text
    items = []
    for x in r.evaluator_changes:
        what = []
        if x.get("judge_changed"):
            what.append(f"judge <code>{e(x['judge_before'])}</code> → <code>{e(x['judge'])}</code>")
        if x.get("gold_changed"):
            what.append(f"gold set <code>{e(x['gold_before'])}</code> → <code>{e(x['gold_hash'])}</code>")
        items.append(
            f"<li class='evaluator'>{e(_changed_what(x))} at run <code>{e(x['run_id'])}</code> ({e(x['day'])}): "
            f"{'; '.join(what)}</li>"
        )
    return (
        f"<div id='evaluator-changes' class='evaluator-note'><b>The evaluator changed</b><ul>{''.join(items)}</ul>"
        "<p>Labels can move with the app unchanged: what changed across such a step is listed as "
        "<i>judge changed</i> or <i>gold changed</i>, never as a regression, and no regression gate trips on it. "
        "To read the app's own changes, compare with a run of the new evaluator: "
        "<code class='cmd'>citeline report --baseline RUN</code>.</p></div>"
    )


def _metrics_note(r: Report) -> str:
    """Above the metrics: this run's evaluator is not the one of the run it is compared with."""
    mine = [x for x in r.evaluator_changes if x["run_id"] == r.run_id]
    if not mine:
        return ""
    return (
        f"<p class='evaluator-note' id='metrics-evaluator'>The {html_text(_changed_what(mine[-1]))} with this run: "
        "the figures the judge decides (aligned_precision, unsupported_answers, low_authority) may differ from "
        "the previous run's for that reason alone.</p>"
    )


def _agreement(r: Report) -> str:
    if not r.agreement:
        return ""
    rows = "".join(
        f"<tr><td>{html_text(a['bucket'])}</td><td class='num'>{a['labelled']}</td>"
        f"<td class='num'>{a['agreeing']}</td><td class='num'>{_pct(a['agreement'])}</td></tr>"
        for a in r.agreement
    )
    return (
        "<h2>People and the judge (labelled samples)</h2><table id='agreement'><tr><th>bucket</th>"
        f"<th>labelled</th><th>agree</th><th>agreement</th></tr>{rows}</table>"
    )


def render_html(r: Report) -> str:
    """One self-contained page: inline CSS and SVG, no scripts, no network."""
    e = html_text
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
            f"<tr class='{e(x['change'].replace(' ', '-'))}'><td>{e(x['change'])}</td><td>{e(x['case_id'])}</td><td>{e(str(x['claim']))}</td>"
            f"<td>{e(x['bucket'])}</td><td class='num'>{x['before']}</td><td class='num'>{x['now']}</td></tr>"
            for x in r.regressions
        )
        or "<tr><td colspan='6'>No change in failing claims (or no previous run).</td></tr>"
    )
    rows = []
    sections = []
    # claims whose bucket moved across an evaluator change: marked so, never read as the app's doing
    moved = {
        (x["case_id"], str(x["claim"]), x["bucket"]): x["change"]
        for x in r.regressions
        if x["change"] not in ("regressed", "fixed")
    }
    for n, f in enumerate(r.failing):
        mark = moved.get((f["case_id"], str(f["gold_claim_id"] or f["claim_text"]), f["bucket"]))
        moved_tag = f" <span class='moved'>{e(mark)}</span>" if mark else ""
        link = r.span_link(f["span_id"])
        span = f"<a href='{e(link)}'>{e(f['span_id'])}</a>" if link else e(f["span_id"] or "")
        trace = r.trace_link(f["trace_id"])
        trace_cell = f"<a href='{e(trace)}'>trace</a>" if trace else e(f["trace_id"][:12])
        sections.append(_detail_section(r, n, f, span, trace_cell, moved_tag))
        rows.append(
            f"<tr class='failing-claim' data-bucket='{e(f['bucket'])}'>"
            f"<td><a class='drill' href='#claim-{n}'>{e(f['case_id'] or '(no case)')}</a></td>"
            f"<td>{e(f['gold_claim_id'] or f['claim_text'] or '')}</td>"
            f"<td><span class='tag' style='background:{COLORS[f['bucket']]}'>{e(f['bucket'])}</span>{moved_tag}</td>"
            f"<td>{e(f.get('basis') or 'gold')}</td><td>{e(f['stage'] or '')}</td><td>{e(f['reason'] or '')}</td><td>{span}</td><td>{trace_cell}</td></tr>"
        )
    gates = "".join(f"<p class='gate'>gate failed: {e(g)}</p>" for g in r.gates)
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
.judge-changed td, .gold-changed td, .judge-and-gold-changed td {{ color: #6b7280; }}
.judge-changed td:first-child, .gold-changed td:first-child, .judge-and-gold-changed td:first-child {{
font-style: italic; }}
.evaluator-note {{ background: #fffbeb; border: 1px solid #f59e0b; border-radius: 6px; padding: 8px 12px;
margin: 8px 0 12px; }} .evaluator-note ul {{ margin: 4px 0; }} .evaluator-note p {{ margin: 4px 0 0; }}
.cmd {{ white-space: nowrap; }} .drill {{ white-space: nowrap; }}
.moved {{ display: inline-block; margin-top: 2px; font-size: 11px; color: #92400e; background: #fffbeb;
border: 1px solid #f59e0b; border-radius: 4px; padding: 0 4px; white-space: nowrap; }} .chart .mark-label {{ font-size: 11px; fill: #4b5563; }}
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
{f'<p id="skipped-text">{e(r.skipped_line)}.</p>' if r.skipped_line else ""}
{f'<p id="basis">{e(r.basis_line)}.</p>' if r.basis_line else ""}
{gates}
<div class="grid">{bucket_chart}{funnel_chart}</div>
<h2>Trend</h2>{_trend_chart(r)}
<h2>Citation metrics</h2>
{_metrics_note(r)}
<table id="metrics"><tr><th>metric</th><th>value</th><th>n</th><th>definition</th></tr>{metrics}</table>
{_agreement(r)}
<h2>Since {"the previous run" if not r.compared_with else "run <code>" + e(r.compared_with) + "</code>"}</h2>
{_evaluator_marks(r)}
<table id="regressions"><tr><th>change</th><th>case</th><th>claim</th><th>bucket</th><th>before</th><th>now</th></tr>
{regressions}</table>
<h2>Failing claims ({len(r.failing)})</h2>
<table id="failing"><tr><th>case</th><th>claim</th><th>bucket</th><th>basis</th><th>stage</th><th>reason</th><th>span</th>
<th>trace</th></tr>{"".join(rows)}</table>
<h2>Each failing claim</h2>
{"".join(sections)}
</body></html>
"""


_STEPS = ("retrieved", "in_context", "cited", "resolved", "rendered")
_STEP_OF_STAGE = {"retrieval": 0, "context": 1, "generation": 2, "resolution": 3, "render": 4}


def _highlight(answer: str) -> str:
    """The answer, escaped, with its citations marked as the analyzer reads them (the label grammar)."""
    out, at = [], 0
    for m in find_markers(answer):
        out += [html_text(answer[at : m.start]), f"<mark class='marker'>{html_text(answer[m.start : m.end])}</mark>"]
        at = m.end
    out.append(html_text(answer[at:]))
    return "".join(out)


def _chunk_list(r: Report, ids: list[str]) -> str:
    e = html_text
    if not ids:
        return "<p class='none'>none</p>"
    return "".join(
        f"<div class='chunk'><code>{e(c)}</code><p>{e(r.chunk_texts.get(c, '(no text recorded)'))}</p></div>"
        for c in ids
    )


def _detail_section(r: Report, n: int, f: dict[str, Any], span: str, trace: str, moved: str = "") -> str:
    """One failing claim, explained: question, answer, the chain step by step, support against citations."""
    e = html_text
    d = r.details.get(_key(f), {})
    if d.get("evidence_needed"):
        states = [("pass" if d.get(f"evidence_{s}") else "fail") for s in _STEPS]
    else:
        states = ["na"] * len(_STEPS)
    if f["bucket"] == NOT_EVALUABLE and f["stage"] in _STEP_OF_STAGE:  # from the unreadable stage on: unknown
        at = _STEP_OF_STAGE[f["stage"]]
        states = states[:at] + ["na"] * (len(_STEPS) - at)
    chain = "".join(f"<li class='{st}'>{s.replace('_', ' ')}</li>" for s, st in zip(_STEPS, states, strict=True))
    claim = f["gold_claim_id"] or f["claim_text"] or ""
    return f"""<section class="claim-detail" id="claim-{n}" data-bucket="{e(f["bucket"])}">
<h3><span class='tag' style='background:{COLORS[f["bucket"]]}'>{e(f["bucket"])}</span>{moved} {e(f["case_id"] or "")} / {e(claim)}</h3>
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
    return f" <span class='why'>— {html_text(why)}</span>" if why else ""
