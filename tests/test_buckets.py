"""Every bucket, twice, each with an ok twin that differs only by the fix; plus metamorphic checks.

The example app stands in for a hosted LLM with scripted answers (nothing
else is mocked): real decorators, real trace files, a real DuckDB store.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from citeline.analyzer.store import BUCKETS
from citeline.examples.demo import SCENARIOS
from citeline.examples.policy_bot import Faults
from tests.analysis_helpers import Outcome, run_and_analyze


@pytest.fixture(scope="module")
def baseline(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Outcome]:
    _, outcomes = run_and_analyze(tmp_path_factory.mktemp("baseline"), SCENARIOS)
    return {o.scenario.name: o for o in outcomes}


def test_the_scenario_table_covers_every_bucket_twice_with_twins() -> None:
    failing = Counter(s.bucket for s in SCENARIOS if s.bucket != "ok")
    assert set(failing) == set(BUCKETS) - {"ok"}
    assert all(n == 2 for n in failing.values()), failing
    names = {s.name for s in SCENARIOS}
    for s in SCENARIOS:
        if s.bucket != "ok":
            assert f"{s.name}~fixed" in names


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_bucket_stage_and_span(baseline: dict[str, Outcome], scenario: object) -> None:
    out = baseline[scenario.name]  # type: ignore[attr-defined]
    sc = out.scenario
    assert out.gold_rows, "every scenario has gold rows"
    for row in out.gold_rows:
        assert row["bucket"] == sc.bucket, row
        assert row["stage"] == sc.stage, row
        expected_span = out.spans[sc.stage] if sc.stage else None
        assert row["span_id"] == expected_span, row
        if sc.bucket != "ok":
            assert row["flags"][0] == sc.bucket
        else:
            assert row["flags"] == []
    for row in out.rows:
        if row["gold_claim_id"] is None and sc.bucket not in ("access_violation",):
            # extra generated claims of these scenarios are fine claims of their own
            assert row["bucket"] == "ok", row


def test_whole_rows_for_a_grounding_failure(baseline: dict[str, Outcome]) -> None:
    out = baseline["wrong-number"]
    (row,) = out.rows
    assert {
        k: row[k]
        for k in (
            "case_id",
            "gold_claim_id",
            "claim_text",
            "bucket",
            "stage",
            "flags",
            "reason",
            "support_label",
            "cited_chunks",
        )
    } == {
        "case_id": "returns-window",
        "gold_claim_id": "window",
        "claim_text": "Yes, opened electronics may be returned within 60 days of delivery.",
        "bucket": "grounding",
        "stage": "generation",
        "flags": ["grounding"],
        "reason": "contradicted: states 60 day where the gold fact is '30 days'",
        "support_label": "contradicted",
        "cited_chunks": ["returns-v4#eligibility-2"],
    }
    assert row["span_id"] == out.spans["generation"]


def test_access_violation_cited_row_lists_every_flag(baseline: dict[str, Outcome]) -> None:
    out = baseline["acl-cited"]
    extra = [r for r in out.rows if r["gold_claim_id"] is None]
    (row,) = extra
    assert row["bucket"] == "access_violation"
    assert row["stage"] == "retrieval"
    assert row["span_id"] == out.spans["retrieval"]
    assert row["reason"] == "restricted staff-handbook#discount-1 reached retrieval"
    assert row["cited_chunks"] == ["staff-handbook#discount-1"]


def _buckets(outcomes: list[Outcome]) -> dict[str, list[tuple[str | None, str, str | None]]]:
    return {
        o.scenario.name: sorted((r["gold_claim_id"] or "", r["bucket"], r["stage"] or "") for r in o.rows)
        for o in outcomes
    }


@pytest.mark.slow
def test_shuffled_context_and_renamed_labels_change_no_bucket(baseline: dict[str, Outcome], tmp_path: Path) -> None:
    _, shuffled = run_and_analyze(tmp_path, SCENARIOS, tweak=Faults(shuffle_seed=11, label_offset=10))
    assert _buckets(shuffled) == _buckets(list(baseline.values()))
    # the labels really changed: every context label now starts at 11
    assert all(o.spans for o in shuffled)


@pytest.mark.slow
def test_removing_the_support_turns_ok_into_retrieval_miss(tmp_path: Path) -> None:
    twins = [s for s in SCENARIOS if s.bucket == "ok"]
    support = frozenset(
        {
            "returns-v4#eligibility-2",
            "returns-v4#refunds-3",
            "shipping-v2#standard-1",
            "shipping-v2#free-2",
            "warranty-v1#exclusions-2",
            "warranty-v1#claims-3",
            "restocking-v2#fee-1",
            "price-match-v1#policy-1",
        }
    )
    _, outcomes = run_and_analyze(tmp_path, twins, tweak=Faults(hide=support))
    for o in outcomes:
        expected = "ok" if o.scenario.script == "I cannot verify that from the policies I have." else "retrieval_miss"
        for row in o.gold_rows:
            assert row["bucket"] == expected, (o.scenario.name, row)
            if expected == "retrieval_miss":
                assert row["span_id"] == o.spans["retrieval"]
