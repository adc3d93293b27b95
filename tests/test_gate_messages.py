"""What a failed gate says, in every form: the figure in plain words (one claim, two claims), the gate
after it, and the run named once, in the head of the list (``citeline report --fail-on``, the pytest
marker and ``citeline.check`` print the same lines)."""

from __future__ import annotations

from typing import Any

from citeline.analyzer.reports.gates import NO_CLAIMS, check_gates, gates_failed, parse_gate
from citeline.analyzer.reports.report import Report


def _report(**over: Any) -> Report:
    """A report of 4 claims: 1 grounding, 2 uncited, 1 ok; 3 traces, 2 joined, 1 unmatched, 1 missing case."""
    base: dict[str, Any] = {
        "run_id": "run-1",
        "started_at": "2026-01-01 00:00",
        "buckets": [
            {"bucket": "grounding", "claims": 1},
            {"bucket": "uncited", "claims": 2},
            {"bucket": "ok", "claims": 1},
        ],
        "funnel": [],
        "metrics": [
            {"metric": "aligned_precision", "value": 0.5, "numerator": 1, "denominator": 2},
            {"metric": "validity", "value": 0.75, "numerator": 3, "denominator": 4},
        ],
        "trend": [],
        "regressions": [{"change": "regressed"}, {"change": "judge changed"}],
        "worst_cases": [],
        "failing": [],
        "coverage": {"traces": 3, "joined": 2, "unmatched": 1, "missing_cases": 1, "coverage": 2 / 3},
        "compared_with": "run-0",
        "by_basis": {"gold": {"grounding": 1, "ok": 1}, "corpus": {"uncited": 2}},
    }
    return Report(**{**base, **over})


def _says(report: Report, *gates: str) -> list[str]:
    return check_gates(report, [parse_gate(g) for g in gates])


def test_every_gate_form_says_its_figure_in_words_with_the_gate_after_it() -> None:
    r = _report()
    assert _says(
        r,
        "grounding>0",
        "uncited>0",
        "failing>2",
        "ok<2",
        "uncited>25%",
        "failing>=75%",
        "grounding>0@gold",
        "uncited>1@corpus",
        "failing>50%@corpus",
        "unmatched>0",
        "unmatched>10%",
        "coverage<95%",
        "missing_cases>0",
        "aligned_precision<0.9",
        "validity<95%",
        "regressions>0",
        "access_violation>=0",
    ) == [
        "1 claim is grounding (gate grounding>0)",
        "2 claims are uncited (gate uncited>0)",
        "3 claims are not ok (gate failing>2)",
        "1 claim is ok (gate ok<2)",
        "50.0% of claims are uncited (2 of 4; gate uncited>25%)",
        "75.0% of claims are not ok (3 of 4; gate failing>=75%)",
        "1 gold-basis claim is grounding (gate grounding>0@gold)",
        "2 corpus-basis claims are uncited (gate uncited>1@corpus)",
        "100.0% of corpus-basis claims are not ok (2 of 2; gate failing>50%@corpus)",
        "1 trace joins no gold case (gate unmatched>0)",
        "33.3% of traces join no gold case (1 of 3; gate unmatched>10%)",
        "coverage is 66.7%: 2 of 3 traces join a gold case (gate coverage<95%)",
        "1 gold case has no trace (gate missing_cases>0)",
        "aligned_precision is 0.5 (1/2; gate aligned_precision<0.9)",
        "validity is 75.0% (3/4; gate validity<95%)",
        "1 regression since run run-0 (gate regressions>0)",
        "0 claims are access_violation (gate access_violation>=0)",
    ]
    assert _says(r, "grounding>1", "unmatched>1", "coverage<60%", "regressions>1") == []  # the gates that pass


def test_the_plural_and_the_singular_forms_of_the_input_gates() -> None:
    r = _report(
        coverage={"traces": 1, "joined": 1, "unmatched": 2, "missing_cases": 2, "coverage": 1.0},
        regressions=[{"change": "regressed"}, {"change": "regressed"}],
        compared_with=None,
    )
    assert _says(r, "unmatched>0", "missing_cases>0", "coverage<101%", "regressions>0") == [
        "2 traces join no gold case (gate unmatched>0)",
        "2 gold cases have no trace (gate missing_cases>0)",
        "coverage is 100.0%: 1 of 1 trace joins a gold case (gate coverage<101%)",
        "2 regressions (no earlier run to compare with; gate regressions>0)",
    ]


def test_the_run_is_named_once_in_the_head_of_the_list() -> None:
    r = _report()
    gates = ["grounding>0", "uncited>0", "coverage<50%"]
    assert gates_failed(r.run_id, _says(r, *gates), len(gates)) == [
        "run run-1: 2 of 3 gates failed:",
        "  1 claim is grounding (gate grounding>0)",
        "  2 claims are uncited (gate uncited>0)",
    ]
    assert gates_failed(r.run_id, _says(r, "grounding>0"), 1) == [
        "run run-1: 1 of 1 gate failed:",
        "  1 claim is grounding (gate grounding>0)",
    ]
    assert gates_failed(r.run_id, _says(r, "grounding>5"), 1) == []
    empty = _report(buckets=[])
    assert gates_failed(empty.run_id, _says(empty, *gates), len(gates)) == [
        "run run-1: 3 of 3 gates failed:",
        f"  {NO_CLAIMS}",
    ]
