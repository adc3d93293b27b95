"""Assertions over an analysis: each claim not as expected, said with its bucket, stage, reason and span.

Used by the pytest plugin's fixture and marker; usable on any
``AnalysisResult``. Every field is made terminal-safe (``escaping.term``):
claim text and ids come from the app and the gold set.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import duckdb

from citeline.analyzer.escaping import term as t
from citeline.analyzer.run.result import AnalysisResult


def claim_key(row: Mapping[str, Any]) -> str:
    """``case/claim`` for a gold claim, ``case/(extra claim)`` for a generated claim no gold claim matched."""
    return f"{row['case_id']}/{row['gold_claim_id'] or '(extra claim)'}"


def describe(row: Mapping[str, Any], expected: str | None = None) -> list[str]:
    """The lines that say one claim: what it got (and what was expected), where, why, and what it said."""
    where = f" at {row['stage']}" if row["stage"] else ""
    span = f", span {row['span_id']}" if row["span_id"] else ""
    wanted = f" (expected {t(expected)})" if expected is not None else ""
    lines = [f"  {t(claim_key(row))}: {row['bucket']}{wanted}{where}{span}", f"    reason: {t(row['reason'] or '')}"]
    if row["claim_text"]:
        lines.append(f"    claim: {t(row['claim_text'])}")
    return lines


def _coverage(result: AnalysisResult) -> list[str]:
    cov = result.coverage
    if not cov["unmatched"]:
        return []
    return [t(line) for line in result.coverage_lines()[:1]]


def mismatches(result: AnalysisResult, expected: Mapping[str, str] | None = None) -> list[str]:
    """The message lines for every claim whose bucket is not the expected one (``ok`` unless named).

    ``expected`` maps ``case`` (every claim of the case) or ``case/claim`` to a bucket; a more
    specific key wins. Returns [] when every claim is as expected and something was classified.
    """
    expected = dict(expected or {})
    rows = result.claims.to_dicts()
    if not rows:
        return ["citeline: no claim was classified: no captured trace joined a gold case", *_coverage(result)]
    seen: set[str] = set()
    bad: list[str] = []
    for row in rows:
        key = claim_key(row)
        want = expected.get(key, expected.get(str(row["case_id"]), "ok"))
        seen.update({key, str(row["case_id"])})
        if row["bucket"] != want:
            bad += describe(row, want if want != "ok" else None)
    missing = sorted(k for k in expected if k not in seen)
    head: list[str] = []
    if bad:
        n = sum(1 for line in bad if not line.startswith("    "))
        head.append(f"citeline: {n} of {len(rows)} claim(s) not as expected:")
    if missing:
        head.append(f"citeline: no claim classified for {', '.join(t(m) for m in missing)}")
    return [*head, *bad, *_coverage(result)] if head else []


def gate_lines(result: AnalysisResult, con: duckdb.DuckDBPyConnection, fail_on: Sequence[str]) -> list[str]:
    """``citeline report --fail-on`` over this run: one line per gate that fails, then the claims not ok."""
    from citeline.analyzer.reports.gates import check_gates, gates_failed, parse_gate
    from citeline.analyzer.reports.report import build_report

    gates = [parse_gate(g) for g in fail_on]
    report = build_report(con, result.run_id)
    failed = gates_failed(report.run_id, check_gates(report, gates), len(gates))
    if not failed:
        return []
    lines = [f"citeline: {t(failed[0])}", *(t(line) for line in failed[1:])]
    not_ok = [r for r in result.claims.to_dicts() if r["bucket"] != "ok"]
    if not_ok:
        lines.append(f"citeline: {len(not_ok)} of {result.claims.height} claim(s) not ok:")
        for row in not_ok:
            lines += describe(row)
    return lines + _coverage(result)


def summary_line(counts: Mapping[str, int], order: Iterable[str]) -> str:
    total = sum(counts.values())
    parts = [f"{b} {counts[b]}" for b in order if counts.get(b)]
    return f"{total} claim(s): " + (", ".join(parts) if parts else "none")
