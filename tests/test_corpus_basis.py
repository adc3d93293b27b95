"""Corpus basis: traces no gold case joins are judged against the corpus and the trace alone.

The demo's scenarios run through the real example app into real trace files and a real DuckDB
store, analyzed with the gold file's corpus and no case; then the same traces with the gold set;
then a mixed run (a few cases, most traces without) through the command line and its reports.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from citeline.analyzer._analyze import analyze
from citeline.examples.demo import SCENARIOS, Scenario, gold_path
from tests.analysis_helpers import Outcome, run_and_analyze

#: buckets only a gold case can show (its support bundles): on the corpus basis never given
GOLD_ONLY = {"retrieval_miss", "context_drop"}
#: scenarios whose failure needs the gold case to be seen at all: the case expects an abstention
NEEDS_THE_CASE = {"should-abstain"}
NO_GOLD = "no gold case, so retrieval cannot be blamed (a retrieval_miss or context_drop needs one"


def corpus_expectation(sc: Scenario) -> tuple[str, str | None]:
    """The bucket and stage a scenario gets on the corpus basis: its own where the corpus and the trace
    show it; grounding at generation for a miss or a drop; ok where only the case could tell."""
    if sc.bucket in GOLD_ONLY:
        return "grounding", "generation"
    if sc.name in NEEDS_THE_CASE:
        return "ok", None
    return sc.bucket, sc.stage


@pytest.fixture(scope="module")
def demo_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("corpus")


@pytest.fixture(scope="module")
def corpus_run(demo_dir: Path) -> dict[str, Outcome]:
    """One trace per scenario (in demo_dir/traces), analyzed with the demo's corpus and no case."""
    _, outcomes = run_and_analyze(demo_dir, SCENARIOS, corpus_only=True)
    return {o.scenario.name: o for o in outcomes}


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_demo_with_the_corpus_and_no_case_lands_each_visible_failure(
    corpus_run: dict[str, Outcome], scenario: Scenario
) -> None:
    out = corpus_run[scenario.name]
    bucket, stage = corpus_expectation(scenario)
    (row,) = out.rows  # each demo answer is one claim, or (no factual claim) one "(answer)" row
    assert (row["basis"], row["case_id"], row["bucket"], row["stage"]) == ("corpus", None, bucket, stage)
    assert row["span_id"] == (out.spans[stage] if stage else None)
    assert row["flags"][:1] == ([bucket] if bucket != "ok" else [])
    if scenario.bucket in GOLD_ONLY:  # never another component's bucket: grounding, saying why not retrieval
        assert NO_GOLD in row["reason"]


def test_whole_rows_of_the_corpus_only_meaning_checks(corpus_run: dict[str, Outcome]) -> None:
    keys = ("gold_claim_id", "claim_text", "bucket", "stage", "flags", "reason", "support_label", "cited_chunks")
    got = {name: {k: corpus_run[name].rows[0][k] for k in keys} for name in ("wrong-paragraph", "index-lost-refunds")}
    assert got == {
        "wrong-paragraph": {  # cites the free-shipping paragraph; the standard-shipping one was in the context
            "gold_claim_id": None,
            "claim_text": "Standard shipping costs $4.99.",
            "bucket": "attribution",
            "stage": "generation",
            "flags": ["attribution"],
            "reason": "cites shipping-v2#free-2, which does not support it (insufficient); shipping-v1#standard-1, "
            "shipping-v2#standard-1 in the context does",
            "support_label": "insufficient",
            "cited_chunks": ["shipping-v2#free-2"],
        },
        "index-lost-refunds": {  # the index lost the chunk: nothing in the context says it, and nobody can tell why
            "gold_claim_id": None,
            "claim_text": "Refunds are issued to the original payment method within 5 business days.",
            "bucket": "grounding",
            "stage": "generation",
            "flags": ["grounding"],
            "reason": "factual claim without a citation, and nothing in the context supports it; " + NO_GOLD
            + ": add a case for this question)",
            "support_label": None,
            "cited_chunks": [],
        },
    }  # fmt: skip
    (answer,) = corpus_run["acl-filter-off~fixed"].rows  # an abstention: no claim, its trace still checked
    assert (answer["gold_claim_id"], answer["claim_text"], answer["bucket"], answer["reason"]) == (
        "(answer)",
        None,
        "ok",
        "no factual claim to judge; access and every stage checked (corpus basis: no gold case)",
    )


def test_the_same_traces_with_the_gold_set_give_the_gold_buckets(
    corpus_run: dict[str, Outcome], demo_dir: Path, tmp_path: Path
) -> None:
    result = analyze(tmp_path / "gold.duckdb", gold=gold_path(), traces=[demo_dir / "traces"])
    rows = result.claims.to_dicts()
    assert {r["basis"] for r in rows} == {"gold"}
    for out in corpus_run.values():
        mine = [r for r in rows if r["trace_id"] == out.trace_id and r["gold_claim_id"] is not None]
        sc = out.scenario
        assert mine and {(r["bucket"], r["stage"]) for r in mine} == {(sc.bucket, sc.stage)}, sc.name
    assert result.coverage["corpus"] == 0 and result.coverage["joined"] == len(SCENARIOS)
