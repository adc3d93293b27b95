"""``--fail-on`` gates: a bucket, a coverage figure or a citation metric against a limit (``grounding>0``,
``coverage<90%``, ``validity<0.9@gold``), read from a built report; what failed, as CI prints it."""

from __future__ import annotations

import re
from dataclasses import dataclass

from citeline.analyzer.reports.report import Report, ReportError
from citeline.analyzer.store import BASES, BUCKETS

_GATE = re.compile(r"^\s*([a-z_]+)\s*(>=|<=|>|<)\s*(\d+(?:\.\d+)?)\s*(%?)\s*(?:@\s*([a-z_]+)\s*)?$")
#: gates on the run's input rather than its buckets
COVERAGE_GATES = ("unmatched", "coverage", "missing_cases")
#: the citation metrics (report_citation_metrics.sql), gated as a fraction (0.9) or a percentage (90%)
METRICS = (
    "validity",
    "completeness",
    "aligned_precision",
    "unsupported_answers",
    "abstention_rate",
    "answer_coverage",
    "low_authority",
)
#: other figures the report shows
OTHER_GATES = ("regressions",)


@dataclass(frozen=True)
class Gate:
    bucket: str
    op: str
    limit: float
    percent: bool
    basis: str | None = None  # only the claims of this basis ('gold' | 'corpus'); None: the report's claims

    def __str__(self) -> str:
        at = f"@{self.basis}" if self.basis else ""
        return f"{self.bucket}{self.op}{self.limit:g}{'%' if self.percent else ''}{at}"


def parse_gate(text: str) -> Gate:
    """``grounding>0``, ``retrieval_miss>5%``, ``failing>0`` (any non-ok bucket); on the input:
    ``unmatched>0`` (traces that joined no case; ``%`` of traces), ``coverage<95%`` (joined /
    traces, always a percentage), ``missing_cases>0`` (gold cases no trace answered). A bucket gate (or
    ``failing``) may name a basis: ``grounding>0@corpus`` counts only the corpus-basis claims (``%`` of
    them)."""
    m = _GATE.match(text)
    if not m:
        raise ReportError(
            f"cannot read gate {text!r}: write NAME>N, NAME>N%, NAME>N@BASIS or coverage<N% (e.g. grounding>0, "
            "retrieval_miss>5%, grounding>0@corpus, unmatched>0, coverage<95%)"
        )
    name = m.group(1)
    if name.startswith("aligned_citation_precision"):  # the seed articles' name for it
        name = "aligned_precision"
    if name not in BUCKETS and name not in ("failing", *COVERAGE_GATES, *METRICS, *OTHER_GATES):
        raise ReportError(
            f"unknown name {name!r} in gate {text!r}; buckets: {', '.join(BUCKETS)}, failing; "
            f"input: {', '.join(COVERAGE_GATES)}; metrics: {', '.join(METRICS)}; {', '.join(OTHER_GATES)}"
        )
    basis = m.group(5)
    if basis is not None and basis not in BASES:
        raise ReportError(f"unknown basis {basis!r} in gate {text!r}; write @gold or @corpus")
    if basis is not None and name not in BUCKETS and name != "failing":
        raise ReportError(
            f"gate {text!r}: only a bucket or failing is counted per basis (e.g. grounding>0@corpus); "
            "to read other figures on one basis, run `citeline report --basis corpus`"
        )
    return Gate(name, m.group(2), float(m.group(3)), m.group(4) == "%" or name == "coverage", basis)


def _n(n: int, one: str, many: str) -> str:
    """``1 claim``, ``2 claims``: a count and its noun."""
    return f"{n} {one if n == 1 else many}"


def _value(report: Report, g: Gate) -> tuple[float, str]:
    """The gated figure, and the sentence that says it (the gate itself is added by ``check_gates``)."""
    cov = report.coverage
    traces = int(cov.get("traces") or 0)
    if g.bucket == "coverage":
        value, joined = 100.0 * float(cov.get("coverage", 1.0)), int(cov.get("joined") or 0)
        verb = "joins" if joined == 1 and traces == 1 else "join"
        return value, f"coverage is {value:.1f}%: {joined} of {_n(traces, 'trace', 'traces')} {verb} a gold case"
    if g.bucket in METRICS:
        [metric] = [x for x in report.metrics if x["metric"] == g.bucket]
        value = float(metric["value"]) * (100.0 if g.percent else 1.0)
        shown = f"{100 * float(metric['value']):.1f}%" if g.percent else f"{float(metric['value']):.4g}"
        return value, f"{g.bucket} is {shown} ({metric['numerator']}/{metric['denominator']})"
    if g.bucket == "regressions":
        n = report.regression_count
        since = f"since run {report.compared_with}" if report.compared_with else "(no earlier run to compare with)"
        return float(n), f"{_n(n, 'regression', 'regressions')} {since}"
    if g.bucket == "unmatched":
        n, total = int(cov.get("unmatched") or 0), traces
        if g.percent and total:
            value = 100.0 * n / total
            return value, f"{value:.1f}% of traces join no gold case ({n} of {total})"
        return float(n), f"{_n(n, 'trace joins', 'traces join')} no gold case"
    if g.bucket == "missing_cases":
        n = int(cov.get("missing_cases") or 0)
        return float(n), f"{_n(n, 'gold case has', 'gold cases have')} no trace"
    if g.basis is None:
        counts = {b["bucket"]: int(b["claims"]) for b in report.buckets}
    else:
        counts = dict(report.by_basis.get(g.basis, {}))
    total = sum(counts.values())
    counts["failing"] = sum(k for b, k in counts.items() if b != "ok")
    n = counts.get(g.bucket, 0)
    what = "not ok" if g.bucket == "failing" else g.bucket
    claims = "claim" if g.basis is None else f"{g.basis}-basis claim"
    if g.percent and total:
        value = 100.0 * n / total
        return value, f"{value:.1f}% of {claims}s are {what} ({n} of {total})"
    return float(n), f"{_n(n, claims, claims + 's')} {'is' if n == 1 else 'are'} {what}"


#: what every gate says of a run that classified no claim
NO_CLAIMS = (
    "no claim was classified, so no gate can pass on this run: check --traces and the gold set's case "
    "ids/questions (coverage above), or pass --allow-empty"
)


def check_gates(report: Report, gates: list[Gate], *, allow_empty: bool = False) -> list[str]:
    """One sentence per gate that fails, ending with the gate (``1 claim is grounding (gate grounding>0)``);
    a run with no claims fails every gate unless ``allow_empty``. ``gates_failed`` heads the list with the
    run."""
    if gates and report.total_claims == 0 and not allow_empty:
        return [NO_CLAIMS]
    out = []
    for g in gates:
        value, shown = _value(report, g)
        hit = {">": value > g.limit, ">=": value >= g.limit, "<": value < g.limit, "<=": value <= g.limit}[g.op]
        if hit:
            out.append(f"{shown[:-1]}; gate {g})" if shown.endswith(")") else f"{shown} (gate {g})")
    return out


def gates_failed(run_id: str, failed: list[str], gates: int) -> list[str]:
    """The head naming the run once, then each failed gate's sentence indented: what every front end
    (``report --fail-on``, the pytest marker, ``citeline.check``) prints. [] when nothing failed."""
    if not failed:
        return []
    n = gates if failed == [NO_CLAIMS] else len(failed)
    return [f"run {run_id}: {n} of {gates} gate{'' if gates == 1 else 's'} failed:", *(f"  {x}" for x in failed)]
