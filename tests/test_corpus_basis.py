"""Corpus basis: traces no gold case joins are judged against the corpus and the trace alone.

The demo's scenarios run through the real example app into real trace files and a real DuckDB
store, analyzed with the gold file's corpus and no case; then the same traces with the gold set;
then a mixed run (a few cases, most traces without) through the command line and its reports.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from opentelemetry.sdk.trace import TracerProvider  # a provider of its own: the global stays unset

from citeline.analyzer.cli.main import main
from citeline.analyzer.run.analyze import analyze
from citeline.analyzer.store import BUCKETS
from citeline.examples.demo import AS_OF, SCENARIOS, Scenario, gold_path, run_scenarios
from citeline.instrumentation import configure, content_hash, context_assembly, generation, request, retrieval
from tests.analysis_helpers import Outcome, run_and_analyze
from tests.conftest import make_tracing

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
            "reason": "factual claim without a citation, and nothing in the context supports it; "
            + NO_GOLD
            + ": add a case for this question)",
            "support_label": None,
            "cited_chunks": [],
        },
    }
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


# --- provenance and meaning from the trace alone ------------------------------------------------------

QUESTION = "Can opened electronics be returned after three weeks?"
GOLD_TEXT = "Opened electronics may be returned within 30 days of delivery with proof of purchase."
DRIFTED = "Opened electronics may be returned within 60 days of delivery with proof of purchase."
MEMO = "Gift cards can be exchanged within 90 days at any register."


@context_assembly
def build(q: str, hits: list[Any]) -> list[Any]:
    return hits


@generation
def llm(prompt: Any, said: str) -> str:  # a hosted model cannot run here: the answer is scripted
    return said


def _ask(hits: list[Any], said: str, question: str = QUESTION, *, context_step: bool = True) -> None:
    @retrieval
    def search(q: str) -> list[Any]:
        return hits

    with request(question=question, principal={"id": "bob", "groups": ["public"]}, as_of=AS_OF):
        found = search(question)
        if context_step:
            llm(build(question, found), said)
        else:  # the model's prompt holds the chunks: the context is read off it
            llm("\n".join(f"[{i}] {c['text']}" for i, c in enumerate(found, start=1)) + f"\nQuestion: {question}", said)


def test_drift_and_the_text_a_trace_served_are_read_without_a_case(tmp_path: Path) -> None:
    t = make_tracing(tmp_path)
    chunk = {"doc_id": "returns", "chunk_id": "returns-v4#eligibility-2", "version": "v4"}
    memo = {"doc_id": "memo", "chunk_id": "memo#1", "version": "1", "text": MEMO}  # in no corpus: only the trace has it
    _ask([{**chunk, "text": DRIFTED}], "Opened electronics may be returned within 60 days of delivery [1].")
    # no context step: the store keeps what retrieval served (the text the model was given)
    _ask([memo], "Gift cards can be exchanged within 90 days at any register [1].", "Gift cards?", context_step=False)
    _ask([memo], "Gift cards can be exchanged within 30 days at any register [1].", "Gift cards?", context_step=False)
    # with a context step the store keeps ids and hashes only: a chunk no trace served the text of and the
    # corpus does not hold has no text to judge against, so nothing is blamed
    other = {**memo, "chunk_id": "memo#2", "text": "Store credit never expires."}
    _ask([other], "Store credit expires after a year [1].", "Store credit?")
    retrievals, generations = t.by_stage("retrieval"), t.by_stage("generation")
    t.handle.shutdown()
    result = analyze(tmp_path / "s.duckdb", corpus=gold_path(), traces=[t.trace_dir])
    rows = {r["trace_id"]: r for r in result.claims.to_dicts()}
    drifted, served, invented, unread = (rows[f"{s.context.trace_id:032x}"] for s in retrievals)
    assert (drifted["basis"], drifted["bucket"], drifted["stage"], drifted["span_id"]) == (
        "corpus",
        "freshness",
        "retrieval",
        f"{retrievals[0].context.span_id:016x}",
    )  # the model quoted its index: the index is to blame, not the model
    assert drifted["reason"] == (
        f"content drift: the index served returns-v4#eligibility-2 with content hash {content_hash(DRIFTED)} where "
        f"the gold corpus has {content_hash(GOLD_TEXT)} (same id and version, other text)"
    )
    assert "content_drift" in drifted["flags"]
    assert (served["bucket"], served["support_label"], served["cited_chunks"]) == ("ok", "entailed", ["memo#1"])
    assert (invented["bucket"], invented["stage"], invented["span_id"]) == (
        "grounding",
        "generation",
        f"{generations[2].context.span_id:016x}",
    )
    assert (unread["bucket"], unread["stage"], unread["reason"]) == (
        "not_evaluable",
        "generation",
        "judge rules@4 could not decide: no evidence text to judge against",
    )


def _traffic(trace_dir: Path, times: int) -> None:
    """The demo's traffic, ``times`` over: every claim and cited set made by that many traces."""
    handle = configure(service_name="policy-bot", trace_dir=trace_dir, tracer_provider=TracerProvider())
    try:
        for _ in range(times):
            run_scenarios()
    finally:
        handle.shutdown()


@pytest.mark.slow
def test_one_judgment_per_claim_and_cited_set_and_the_cache_is_shared_with_gold_runs(tmp_path: Path) -> None:
    _traffic(tmp_path / "once", 1)
    _traffic(tmp_path / "twice", 2)
    once = analyze(tmp_path / "once.duckdb", corpus=gold_path(), traces=[tmp_path / "once"])
    twice = analyze(tmp_path / "twice.duckdb", corpus=gold_path(), traces=[tmp_path / "twice"])
    assert twice.claims.height == 2 * once.claims.height == 2 * len(SCENARIOS)
    cited = {(r["claim_text"], tuple(r["cited_chunks"])) for r in once.claims.to_dicts() if r["cited_chunks"]}
    # one judgment per distinct (claim, cited set); then, for the 8 claims their citation fails (or that cite
    # nothing), one per (claim, rest of the context); only the 4 the rest supports (attribution, uncited) are
    # judged chunk by chunk (9 chunks in all), to name the chunk that supports them
    assert len(cited) == 15 and once.judge["asked"] == 15 + 8 + 9
    assert twice.judge["asked"] == once.judge["asked"]  # twice the traffic, not one judgment more
    db = tmp_path / "s.duckdb"
    gold = analyze(db, gold=gold_path(), traces=[tmp_path / "once"])
    corpus = analyze(db, corpus=gold_path())  # the same store: what the gold run asked is not asked again
    assert gold.judge["asked"] > 0 and corpus.judge["cached"] > 0
    assert corpus.judge["asked"] + corpus.judge["cached"] == once.judge["asked"]
    again = analyze(db, corpus=gold_path())
    assert (again.judge["asked"], again.judge["cached"]) == (0, once.judge["asked"])


# --- a mixed run: a few gold cases, most traffic without -----------------------------------------------

SOME_CASES = ("shipping-cost", "warranty-water")


def _some_gold(tmp_path: Path) -> Path:
    data = yaml.safe_load(gold_path().read_text(encoding="utf-8"))
    data["cases"] = [c for c in data["cases"] if c["case_id"] in SOME_CASES]
    path = tmp_path / "some.json"
    path.write_text(json.dumps(data, default=str), encoding="utf-8")
    return path


@pytest.mark.slow
def test_a_mixed_run_counts_coverage_bases_reports_and_gates_exactly(tmp_path: Path, capsys: Any) -> None:
    handle = configure(service_name="policy-bot", trace_dir=tmp_path / "traces", tracer_provider=TracerProvider())
    try:
        run_scenarios()
    finally:
        handle.shutdown()
    db = str(tmp_path / "s.duckdb")
    gold = str(_some_gold(tmp_path))
    assert main(["analyze", "--traces", str(tmp_path / "traces"), "--gold", gold, "--db", db, "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    on_gold = [s for s in SCENARIOS if s.case_id in SOME_CASES]
    assert len(on_gold) == 12 and len(SCENARIOS) == 40
    zero = dict.fromkeys(BUCKETS, 0)
    expect_gold = {**zero, "invalid_citation": 2, "freshness": 1, "uncited": 1, "attribution": 2, "ok": 6}
    expect_corpus = {
        **zero,
        "access_violation": 2,
        "not_evaluable": 2,
        "freshness": 1,
        "grounding": 5,  # the two misses and two drops (no case: nobody can blame retrieval) and the wrong number
        "uncited": 1,
        "resolution": 2,
        "ok": 15,  # 14 fixed twins and should-abstain (only its case says it should have abstained)
    }
    assert out["by_basis"] == {"gold": expect_gold, "corpus": expect_corpus}
    assert out["summary"] == {b: expect_gold[b] + expect_corpus[b] for b in BUCKETS}
    assert {k: out["coverage"][k] for k in ("traces", "joined", "corpus", "cases_without_trace")} == {
        "traces": 40,
        "joined": 12,
        "corpus": 28,
        "cases_without_trace": [],
    }
    assert {u["reason"] for u in out["coverage"]["unmatched"]} == {"unknown_case_id"}  # the app sends its case ids
    assert (
        sorted((c["basis"], c["case_id"] is None) for c in out["cases"])
        == [("corpus", True)] * 28 + [("gold", False)] * 12
    )

    assert main(["report", "--db", db, "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert {k: report["coverage"][k] for k in ("traces", "joined", "unmatched", "coverage", "corpus")} == {
        "traces": 40,
        "joined": 12,
        "unmatched": 28,
        "coverage": 0.3,
        "corpus": 28,
    }
    assert (report["coverage"]["gold_claims"], report["coverage"]["corpus_claims"]) == (12, 28)
    assert report["by_basis"] == {"gold": expect_gold, "corpus": expect_corpus}
    assert {b["bucket"]: b["claims"] for b in report["buckets"]} == out["summary"]
    assert main(["report", "--db", db, "--format", "json", "--basis", "corpus"]) == 0
    corpus_only = json.loads(capsys.readouterr().out)
    assert {b["bucket"]: b["claims"] for b in corpus_only["buckets"]} == expect_corpus
    assert corpus_only["basis"] == "corpus" and {f["basis"] for f in corpus_only["failing_claims"]} == {"corpus"}
    assert len(corpus_only["failing_claims"]) == 28 - 15
    assert main(["report", "--db", db, "--format", "markdown"]) == 0
    md = capsys.readouterr().out
    assert "basis: 12 claim(s) on gold (6 failing), 28 claim(s) on corpus (13 failing)." in md
    assert "| grounding | 5 | 12.5% | 0 | 5 |" in md

    gates = ["grounding>0@gold", "grounding>4@corpus", "failing>50%@gold", "uncited>=1@gold", "retrieval_miss>0"]
    assert main(["report", "--db", db, "--format", "json", *[x for g in gates for x in ("--fail-on", g)]]) == 1
    run = out["run_id"]
    assert capsys.readouterr().err.splitlines()[-3:] == [
        f"citeline: run {run}: 2 of 5 gates failed:",
        "  5 corpus-basis claims are grounding (gate grounding>4@corpus)",
        "  1 gold-basis claim is uncited (gate uncited>=1@gold)",
    ]
    assert main(["report", "--db", db, "--fail-on", "failing>46%@corpus"]) == 1  # 13 of 28: 46.4%
    assert capsys.readouterr().err.splitlines()[-2:] == [
        f"citeline: run {run}: 1 of 1 gate failed:",
        "  46.4% of corpus-basis claims are not ok (13 of 28; gate failing>46%@corpus)",
    ]
    assert main(["report", "--db", db, "--fail-on", "coverage<50%@corpus"]) == 2  # a basis counts claims only
    assert "only a bucket or failing is counted per basis" in capsys.readouterr().err


def test_analyze_with_a_corpus_jsonl_and_no_gold(tmp_path: Path, capsys: Any) -> None:
    data = yaml.safe_load(gold_path().read_text(encoding="utf-8"))
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(c, default=str) + "\n" for c in data["corpus"]), encoding="utf-8")
    handle = configure(service_name="policy-bot", trace_dir=tmp_path / "traces", tracer_provider=TracerProvider())
    try:
        run_scenarios(scenarios=[s for s in SCENARIOS if s.name in ("wrong-paragraph", "archived-version")])
    finally:
        handle.shutdown()
    db = str(tmp_path / "s.duckdb")
    assert (
        main(["analyze", "--traces", str(tmp_path / "traces"), "--corpus", str(corpus), "--db", db, "--format", "json"])
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert sorted((c["bucket"], c["basis"]) for c in out["claims"]) == [
        ("attribution", "corpus"),
        ("freshness", "corpus"),
    ]
    assert main(["analyze", "--traces", str(tmp_path / "traces"), "--db", db]) == 2
    assert capsys.readouterr().err.strip() == (
        "citeline: analyze needs a gold set (--gold FILE), a corpus (--corpus FILE) or both (see README.md and docs/ "
        "for more)"
    )


def test_gold_and_a_larger_corpus_together_and_rejudge_of_a_corpus_run(tmp_path: Path) -> None:
    from citeline.analyzer import judges
    from citeline.analyzer.run.rejudge import rejudge

    data = yaml.safe_load(gold_path().read_text(encoding="utf-8"))
    full = [*data["corpus"], {"chunk_id": "memo#1", "doc_id": "memo", "text": MEMO}]
    full[0] = {**full[0], "title": "Returns policy (renamed in the index)"}  # one entry differs from the gold set's
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(c, default=str) + "\n" for c in full), encoding="utf-8")
    t = make_tracing(tmp_path)
    _ask([{"doc_id": "memo", "chunk_id": "memo#1", "version": "1"}], "Gift cards can be exchanged within 30 days [1].")
    t.handle.shutdown()
    db = tmp_path / "s.duckdb"
    result = analyze(db, gold=_some_gold(tmp_path), corpus=corpus, traces=[t.trace_dir])
    # the 12 chunks both hold alike are read once; the one that differs is named, the gold set's entry kept
    assert result.problems() == [
        f"{corpus}:-: chunk_id: 'returns-v4#eligibility-2' is also in the gold set's corpus, with other fields; "
        "the gold set's entry is kept"
    ]
    (row,) = result.claims.to_dicts()  # judged against the chunk only the larger corpus holds
    assert (row["basis"], row["bucket"], row["support_label"]) == ("corpus", "grounding", "contradicted")
    done = rejudge(db, result.run_id, judges.load("rules"))  # the run's evidence read again: gold set and corpus
    assert (done.claims, done.changes) == (1, [])


def test_a_rest_of_context_the_judge_cannot_read_blames_nobody(tmp_path: Path) -> None:
    t = make_tracing(tmp_path)
    eligibility = {"doc_id": "returns", "chunk_id": "returns-v4#eligibility-2", "version": "v4", "text": GOLD_TEXT}
    unknown = {"doc_id": "memo", "chunk_id": "memo#9", "version": "1"}  # in no corpus, its text not kept
    older = {"doc_id": "returns", "chunk_id": "returns-v3#eligibility-2", "version": "v3", "text": "14 days."}
    _ask([eligibility, unknown, older], "Opened electronics may be returned within 60 days of delivery [1].")
    generation_span = f"{t.by_stage('generation')[0].context.span_id:016x}"
    t.handle.shutdown()
    (row,) = analyze(tmp_path / "s.duckdb", corpus=gold_path(), traces=[t.trace_dir]).claims.to_dicts()
    # contradicted by what it cites, but memo#9 might have said 60 days: not grounding, not ok
    assert (row["bucket"], row["stage"], row["span_id"], row["support_label"], row["reason"]) == (
        "not_evaluable",
        "generation",
        generation_span,
        "contradicted",
        "judge rules@4 could not decide: no evidence text for memo#9 (neither the corpus nor the trace has it)",
    )
