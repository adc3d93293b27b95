"""Nightly reports: every figure comes from a ``queries/report_*.sql`` file; this renders them.

Formats: a terminal table (rich), markdown (a PR comment or a chat message), a
single self-contained HTML file with inline SVG charts (opens offline), and
JSON. ``--fail-on`` gates turn the bucket counts into an exit code for CI. The HTML
page (charts, drill-down sections) is drawn by ``html.py``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import duckdb

from citeline.analyzer.claims.policy import SKIP_KINDS
from citeline.analyzer.escaping import is_span_id, is_trace_id, md, term
from citeline.analyzer.store import BASES, sql
from citeline.instrumentation.redact import public_url


def span_url(phoenix_url: str | None, span_id: str | None) -> str | None:
    """Phoenix resolves this to the span, in whichever project holds it. No link for an id that is
    not a span id (16 hex digits: a hostile trace file names anything), none with credentials in it."""
    if not phoenix_url or not is_span_id(span_id):
        return None
    return f"{public_url(phoenix_url).rstrip('/')}/redirects/spans/{span_id}"


def trace_url(phoenix_url: str | None, trace_id: str | None) -> str | None:
    """Phoenix resolves this to the trace, in whichever project holds it (32 hex digits, else no link)."""
    if not phoenix_url or not is_trace_id(trace_id):
        return None
    return f"{public_url(phoenix_url).rstrip('/')}/redirects/traces/{trace_id}"


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
    agreement: list[dict[str, Any]] = field(default_factory=list)  # people vs the judge, per bucket (samples)
    evaluator_changes: list[dict[str, Any]] = field(default_factory=list)  # runs whose judge or gold changed
    compared_with: str | None = None  # the run the regressions compare with (previous, or --baseline)
    skipped_text: dict[str, int] = field(default_factory=dict)  # text that was no claim, per kind
    basis: str | None = None  # the basis the report is filtered to (--basis), None for every row
    by_basis: dict[str, dict[str, int]] = field(default_factory=dict)  # basis -> bucket -> claims (report_basis)

    @property
    def regression_count(self) -> int:
        """App regressions: failing buckets that went up with the same evaluator (never a judge change)."""
        return sum(1 for x in self.regressions if x["change"] == "regressed")

    @property
    def skipped_line(self) -> str | None:
        """The text that was no claim, per kind, in one line for people (None when there was none)."""
        if not self.skipped_text:
            return None
        return "not claims (counted, never judged): " + ", ".join(f"{n} {k}" for k, n in self.skipped_text.items())

    @property
    def coverage_line(self) -> str:
        """The run's coverage in one line for people."""
        c = self.coverage
        if c.get("traces") is None:
            return "coverage: not recorded for this run (stored by an older citeline)"
        line = f"coverage: {c['joined']} of {c['traces']} trace(s) joined a gold case ({_pct(c['coverage'])})"
        if c.get("corpus"):
            line += f"; {c['corpus']} judged on the corpus basis (no gold case)"
        if c["unmatched_by_reason"]:
            line += "; not joined: " + ", ".join(f"{u['traces']} {u['reason']}" for u in c["unmatched_by_reason"])
        if c["missing_cases"]:
            line += f"; {c['missing_cases']} gold case(s) without a trace"
        return line

    @property
    def total_claims(self) -> int:
        return sum(int(b["claims"]) for b in self.buckets)

    @property
    def basis_line(self) -> str | None:
        """Claims on each basis, in one line (None for a run with no corpus-basis rows and no filter)."""
        totals = {b: sum(n.values()) for b, n in self.by_basis.items()}
        if not totals.get("corpus") and self.basis is None:
            return None
        failing = {b: sum(k for bucket, k in n.items() if bucket != "ok") for b, n in self.by_basis.items()}
        line = "basis: " + ", ".join(f"{totals[b]} claim(s) on {b} ({failing[b]} failing)" for b in totals)
        return line + (f"; this report shows {self.basis} only" if self.basis else "")

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
            "skipped_text": self.skipped_text,
            "gates": self.gates,
            "basis": self.basis,
            "by_basis": self.by_basis,
            "agreement": self.agreement,
            "compared_with": self.compared_with,
            "evaluator_changes": self.evaluator_changes,
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
    basis: str | None = None,
) -> Report:
    """Run every report query for one run; with ``basis`` ('gold' | 'corpus') only that basis's rows count
    (coverage always counts both)."""
    if basis not in (None, *BASES):
        raise ReportError(f"unknown basis {basis!r}: write gold or corpus (docs/reports.md)")
    run_id, started = resolve_run(con, run)
    if previous is not None:
        previous = resolve_run(con, previous)[0]  # a --baseline that names no run is an error, not silence
    p = {"run_id": run_id}
    f = {**p, "basis": basis}
    tables = {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
    return Report(
        run_id=run_id,
        started_at=started,
        buckets=_rows(con, "report_buckets", f),
        coverage=_rows(con, "report_coverage", p)[0],
        funnel=_rows(con, "report_funnel", p),
        metrics=_rows(con, "report_citation_metrics", f),
        trend=[{**r, "day": str(r["day"])} for r in _rows(con, "report_trend", {"since": None, "basis": basis})],
        regressions=(regressions := _rows(con, "report_regressions", {**f, "previous_run_id": previous})),
        compared_with=previous or (regressions[0]["previous_run_id"] if regressions else _previous(con, run_id)),
        worst_cases=_rows(con, "report_worst_cases", {**f, "limit": worst}),
        failing=_rows(con, "report_failing_claims", f),
        phoenix_url=phoenix_url,
        details=_details(con, p, tables),
        chunk_texts=_chunk_texts(con, run_id, tables),
        agreement=_agreement(con, p),
        evaluator_changes=[{**x, "day": str(x["day"])} for x in _rows(con, "report_evaluator_changes", {})]
        if _has_column(con, "runs", "gold_hash")
        else [],
        skipped_text=_skipped_text(con, p, tables),
        basis=basis,
        by_basis=_by_basis(con, p),
    )


def _by_basis(con: duckdb.DuckDBPyConnection, p: dict[str, Any]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for r in _rows(con, "report_basis", p):
        out.setdefault(str(r["basis"]), {})[str(r["bucket"])] = int(r["claims"])
    return out


def _previous(con: duckdb.DuckDBPyConnection, run_id: str) -> str | None:
    rows = con.execute(
        "SELECT run_id FROM runs WHERE started_at < (SELECT started_at FROM runs WHERE run_id = $r) "
        "ORDER BY started_at DESC, run_id DESC LIMIT 1",
        {"r": run_id},
    ).fetchall()
    return str(rows[0][0]) if rows else None


def _has_column(con: duckdb.DuckDBPyConnection, table: str, column: str) -> bool:
    return bool(
        con.execute(
            "SELECT count(*) FROM information_schema.columns WHERE table_name = $t AND column_name = $c",
            {"t": table, "c": column},
        ).fetchall()[0][0]
    )


def _agreement(con: duckdb.DuckDBPyConnection, p: dict[str, Any]) -> list[dict[str, Any]]:
    has = con.execute(
        "SELECT count(*) FROM information_schema.columns WHERE table_name = 'human_labelled' "
        "AND column_name = 'judge_bucket'"
    ).fetchall()[0][0]
    return _rows(con, "report_agreement", p) if has else []  # a store no analyze of this version opened


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


def _skipped_text(con: duckdb.DuckDBPyConnection, p: dict[str, Any], tables: set[str]) -> dict[str, int]:
    """The run's text that was no claim, per kind, in the order _policy lists the kinds (a store made before
    the count: none)."""
    if "run_skipped_text" not in tables:
        return {}
    found = {str(r["kind"]): int(r["units"]) for r in _rows(con, "report_skipped_text", p)}
    return {k: found[k] for k in SKIP_KINDS if k in found} | {k: n for k, n in found.items() if k not in SKIP_KINDS}


def _chunk_texts(con: duckdb.DuckDBPyConnection, run_id: str, tables: set[str]) -> dict[str, str]:
    if "run_chunks" not in tables:
        return {}
    rows = con.execute("SELECT chunk_id, text FROM run_chunks WHERE run_id = $r", {"r": run_id}).fetchall()
    return {str(k): str(v) for k, v in rows}


# --- renderers ----------------------------------------------------------------------------


def _evaluator_change(x: dict[str, Any]) -> str:
    """What changed in the evaluator between two runs, in words."""
    parts = []
    if x.get("judge_changed"):
        parts.append(f"judge {x['judge_before']} -> {x['judge']}")
    if x.get("gold_changed"):
        parts.append(f"gold set {x['gold_before']} -> {x['gold_hash']}")
    return "; ".join(parts) + " (labels may move with the app unchanged: re-baseline with report --baseline RUN)"


def _pct(x: Any) -> str:
    return f"{100 * float(x):.1f}%"


def _on(r: Report, basis: str, bucket: str) -> str:
    """A bucket's claims on one basis, or '-' when the report is filtered to the other one."""
    if r.basis is not None and r.basis != basis:
        return "-"
    return str(r.by_basis.get(basis, {}).get(bucket, 0))


def render_markdown(r: Report) -> str:
    """Every field read from the store goes through ``md``: trace text, ids and reasons are someone
    else's, and a Markdown reader renders HTML, links and images (docs/security.md)."""
    lines = [
        f"## citeline run {md(r.run_id)}",
        "",
        f"{r.total_claims} claims, started {md(r.started_at)} UTC.",
        "",
        md(r.coverage_line) + ".",
        "",
        *([md(r.skipped_line) + ".", ""] if r.skipped_line else []),
        *([md(r.basis_line) + ".", ""] if r.basis_line else []),
        "| bucket | claims | share | gold | corpus |",
        "|---|---:|---:|---:|---:|",
    ]
    lines += [
        f"| {md(b['bucket'])} | {b['claims']} | {_pct(b['share'])} | {_on(r, 'gold', b['bucket'])} | "
        f"{_on(r, 'corpus', b['bucket'])} |"
        for b in r.buckets
    ]
    lines += [
        "",
        "### Stage funnel (gold evidence)",
        "",
        "| step | claims | of needed | of previous step |",
        "|---|---:|---:|---:|",
    ]
    lines += [f"| {md(f['step'])} | {f['claims']} | {_pct(f['rate'])} | {_pct(f['step_rate'])} |" for f in r.funnel]
    lines += ["", "### Citation metrics", "", "| metric | value | | definition |", "|---|---:|---:|---|"]
    lines += [
        f"| {md(m['metric'])} | {_pct(m['value'])} | {m['numerator']}/{m['denominator']} | {md(m['definition'])} |"
        for m in r.metrics
    ]
    lines += ["", "### Since the previous run" if not r.compared_with else f"### Since run {md(r.compared_with)}", ""]
    for x in r.evaluator_changes:
        lines.append(f"- evaluator changed at run {md(x['run_id'])} ({md(x['day'])}): " + md(_evaluator_change(x)))
    if r.evaluator_changes:
        lines.append("")
    if r.regressions:
        lines += ["| change | case | claim | bucket | before | now |", "|---|---|---|---|---:|---:|"]
        lines += [
            f"| {md(x['change'])} | {md(x['case_id'] or '')} | {md(x['claim'] or '')} | {md(x['bucket'])} | "
            f"{md(x['before'])} | {md(x['now'])} |"
            for x in r.regressions
        ]
    else:
        lines.append("No change in failing claims (or no previous run).")
    lines += ["", "### Failing claims", ""]
    if r.failing:
        lines += [
            "| case | claim | bucket | basis | stage | reason | span | trace |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for f in r.failing[:50]:
            # a link only for a well-formed id (it is the link's text too), never with credentials
            span_link, trace_link = r.span_link(f["span_id"]), r.trace_link(f["trace_id"])
            span = f"[{f['span_id']}]({span_link})" if span_link else md(f["span_id"] or "")
            trace = f"[{f['trace_id']}]({trace_link})" if trace_link else md(f["trace_id"] or "")
            lines.append(
                f"| {md(f['case_id'] or '')} | {md(f['gold_claim_id'] or f['claim_text'] or '')} | {md(f['bucket'])} | "
                f"{md(f['basis'])} | {md(f['stage'] or '')} | {md(f['reason'] or '')} | {span} | {trace} |"
            )
        if len(r.failing) > 50:
            lines += ["", f"First 50 of {len(r.failing)} failing claims; `citeline report --format json` lists all."]
    else:
        lines.append("None.")
    if r.agreement:
        lines += ["", "### People and the judge (labelled samples)", ""]
        lines += ["| bucket | labelled | agree | agreement |", "|---|---:|---:|---:|"]
        lines += [
            f"| {md(a['bucket'])} | {a['labelled']} | {a['agreeing']} | {_pct(a['agreement'])} |" for a in r.agreement
        ]
    if r.gates:
        lines += ["", "### Gates failed", "", *(f"- {md(g)}" for g in r.gates)]
    return "\n".join(lines) + "\n"


def render_table(r: Report) -> None:
    import sys

    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    console = Console(width=None if sys.stdout.isatty() else 140)
    t = Table(title=term(f"citeline run {r.run_id} ({r.total_claims} claims)"))
    for col in ("bucket", "claims", "share", "gold", "corpus"):
        t.add_column(col, justify="right" if col != "bucket" else "left")
    for b in r.buckets:
        t.add_row(
            Text(term(b["bucket"])),
            str(b["claims"]),
            _pct(b["share"]),
            _on(r, "gold", b["bucket"]),
            _on(r, "corpus", b["bucket"]),
        )
    console.print(t)
    console.print(term(r.coverage_line), markup=False, highlight=False)
    if r.basis_line:
        console.print(term(r.basis_line), markup=False, highlight=False)
    if r.skipped_line:
        console.print(term(r.skipped_line), markup=False, highlight=False)
    f = Table(title="stage funnel (gold evidence)")
    for col in ("step", "claims", "of needed", "of previous"):
        f.add_column(col)
    for s in r.funnel:
        f.add_row(Text(term(s["step"])), str(s["claims"]), _pct(s["rate"]), _pct(s["step_rate"]))
    console.print(f)
    m = Table(title="citation metrics")
    for col in ("metric", "value", "n"):
        m.add_column(col)
    for x in r.metrics:
        m.add_row(Text(term(x["metric"])), _pct(x["value"]), f"{x['numerator']}/{x['denominator']}")
    console.print(m)
    _failing_table(console, r)
    g = Table(title="since the previous run")
    for col in ("change", "case", "claim", "bucket", "before", "now"):
        g.add_column(col)
    for x in r.regressions:
        g.add_row(*(Text(term(v)) for v in (x["change"], x["case_id"], x["claim"], x["bucket"], x["before"], x["now"])))
    console.print(g if r.regressions else Text("no change in failing claims since the previous run"))
    for x in r.evaluator_changes:
        console.print(
            term(f"evaluator changed at run {x['run_id']} ({x['day']}): {_evaluator_change(x)}"), markup=False
        )
    if r.agreement:
        a = Table(title="people and the judge (labelled samples)")
        for col in ("bucket", "labelled", "agree", "agreement"):
            a.add_column(col)
        for x in r.agreement:
            a.add_row(Text(term(x["bucket"])), str(x["labelled"]), str(x["agreeing"]), _pct(x["agreement"]))
        console.print(a)


TABLE_FAILING = 40
"""Failing claims the terminal table lists; the other formats say where the rest are."""


def _failing_table(console: Any, r: Report) -> None:
    """The failing claims, each with its span id, and where to open them: the span and trace links'
    base (with ``--phoenix``) and the Phoenix filter that lists a bucket's spans after ``citeline annotate``."""
    from rich.table import Table
    from rich.text import Text

    if not r.failing:
        console.print(Text("no failing claims"))
        return
    shown = r.failing[:TABLE_FAILING]
    t = Table(title=f"failing claims ({len(shown)} of {len(r.failing)})")
    for col in ("case", "claim", "bucket", "stage", "span"):
        t.add_column(col, overflow="fold")
    for f in shown:
        cells = (f["case_id"] or "", f["gold_claim_id"] or f["claim_text"] or "", f["bucket"], f["stage"] or "")
        t.add_row(*(Text(term(c)) for c in cells), Text(term(f["span_id"] or "")))
    console.print(t)
    if len(r.failing) > len(shown):
        console.print(Text(f"{len(r.failing) - len(shown)} more: citeline report --format json lists every one"))
    for line in phoenix_footer(r.phoenix_url):
        console.print(Text(term(line)))


def phoenix_footer(phoenix_url: str | None) -> list[str]:
    """Under a terminal table of failing claims: how to open each one in Phoenix (none without a URL)."""
    if not phoenix_url:
        return []
    base = public_url(phoenix_url).rstrip("/")
    return [
        f"open a failure in Phoenix: {base}/redirects/spans/SPAN (its trace: {base}/redirects/traces/TRACE)",
        "a bucket's spans, after citeline annotate: Phoenix's Spans tab, filter "
        "annotations['citeline'].label == 'BUCKET' (docs/phoenix.md)",
    ]


def render_json(r: Report) -> str:
    return json.dumps(r.to_json(), indent=2, default=str)
