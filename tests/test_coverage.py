"""Every trace read and every gold case is accounted for; a trace joins at most one case."""

from __future__ import annotations

import html
import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags, set_span_in_context

from citeline.analyzer.claims.splitter import split_claims
from citeline.analyzer.cli.main import main
from citeline.analyzer.run.analyze import analyze
from citeline.instrumentation import context_assembly, generation, request, retrieval
from tests.conftest import Tracing, make_tracing

QUESTION = "What is the discount?"
GOLD: dict[str, list[dict[str, Any]]] = {
    "corpus": [
        {"chunk_id": "disc#staff", "doc_id": "disc", "text": "Staff get 25% off accessories."},
        {"chunk_id": "disc#public", "doc_id": "disc", "text": "Customers get 10% off accessories."},
        {"chunk_id": "disc#2025", "doc_id": "disc", "text": "Customers got 5% off accessories."},
        {"chunk_id": "ship#1", "doc_id": "ship", "text": "The seller pays return shipping."},
    ],
    "cases": [
        {
            "case_id": "c-staff",
            "question": QUESTION,
            "as_of": "2026-08-10",
            "principal": {"id": "s", "groups": ["staff"]},
            "claims": [{"claim_id": "d", "text": "Staff get 25% off accessories.", "support": [["disc#staff"]]}],
        },
        {
            "case_id": "c-public",
            "question": QUESTION,
            "as_of": "2026-08-10",
            "principal": {"id": "p", "groups": ["public"]},
            "claims": [{"claim_id": "d", "text": "Customers get 10% off accessories.", "support": [["disc#public"]]}],
        },
        {
            "case_id": "c-old",
            "question": QUESTION,
            "as_of": "2025-01-01",
            "principal": {"id": "p", "groups": ["public"]},
            "claims": [{"claim_id": "d", "text": "Customers got 5% off accessories.", "support": [["disc#2025"]]}],
        },
        {
            "case_id": "c-ship",
            "question": "Who pays return shipping?",
            "claims": [
                {"claim_id": "who", "text": "The seller pays return shipping.", "support": [["ship#1"]]},
                {"claim_id": "how", "text": "Labels are emailed.", "support": [["ship#1"]]},
            ],
        },
        {"case_id": "c-never", "question": "Is anyone there?", "expect": "abstain"},
    ],
}
CHUNKS = {c["chunk_id"]: {"doc_id": c["doc_id"], **c} for c in GOLD["corpus"]}


@retrieval
def search(q: str) -> list[dict[str, str]]:
    return list(CHUNKS.values())


@context_assembly
def build(q: str, hits: list[dict[str, str]]) -> list[dict[str, str]]:
    return hits


@generation
def llm(prompt: Any, said: str) -> str:  # a hosted model cannot run here: the answer is scripted
    return said


def ask(question: str, said: str = "Staff get 25% off accessories [1].", **kw: Any) -> None:
    with request(question=question, **kw):
        llm(build(question, search(question)), said)


def _gold(tmp_path: Path) -> Path:
    path = tmp_path / "gold.json"
    path.write_text(json.dumps(GOLD))
    return path


def _trace_ids(t: Tracing) -> list[str]:
    return [f"{s.context.trace_id:032x}" for s in t.by_stage("request")]


def test_coverage_names_every_unjoined_trace_and_every_case_never_run(tmp_path: Path) -> None:
    t = make_tracing(tmp_path)
    ask("Anything", case_id="nope")  # 0 unknown case id
    ask("A question nobody wrote down")  # 1 question not in gold
    ask(QUESTION)  # 2 three cases ask this; nothing decides: ambiguous
    ask("what  is the\u00a0DISCOUNT?", principal={"id": "s", "groups": ["staff"]})  # 3 -> c-staff (NBSP, case)
    ask(QUESTION, principal={"id": "p", "groups": ["public"]}, as_of="2026-08-10")  # 4 -> c-public
    ask(QUESTION, principal={"id": "p", "groups": ["public"]})  # 5 c-public or c-old: ambiguous
    ids = _trace_ids(t)
    # 6: spans of a trace whose root (the request) is elsewhere: no request span at all
    remote = SpanContext(0x5EED, 0xF00D, is_remote=True, trace_flags=TraceFlags(TraceFlags.SAMPLED))
    t.handle.provider.get_tracer("x").start_span("orphan", context=set_span_in_context(NonRecordingSpan(remote))).end()
    t.handle.shutdown()
    orphan_id = f"{0x5EED:032x}"

    db = tmp_path / "s.duckdb"
    assert (
        main(
            [
                "analyze",
                "--traces",
                str(t.trace_dir),
                "--gold",
                str(_gold(tmp_path)),
                "--db",
                str(db),
                "--format",
                "json",
            ]
        )
        == 0
    )
    ambiguous = ["c-old", "c-public", "c-staff"]
    expected_unmatched = sorted(
        [
            {"trace_id": ids[2], "reason": "ambiguous", "candidates": ambiguous},
            {"trace_id": ids[5], "reason": "ambiguous", "candidates": ambiguous},
            {"trace_id": orphan_id, "reason": "no_request_span", "candidates": []},
            {"trace_id": ids[1], "reason": "question_not_in_gold", "candidates": []},
            {"trace_id": ids[0], "reason": "unknown_case_id", "candidates": []},
        ],
        key=lambda u: (u["reason"], u["trace_id"]),
    )
    result = analyze(db, gold=_gold(tmp_path))  # the same store again, store-only
    assert result.coverage == {
        "traces": 7,
        "joined": 2,
        "corpus": 4,  # every trace with a request span that joined no case: judged on the corpus basis
        "unmatched": expected_unmatched,
        "cases_without_trace": ["c-never", "c-old", "c-ship"],
    }
    assert sorted((r["trace_id"], r["case_id"], r["basis"]) for r in result.cases.to_dicts()) == sorted(
        [(ids[3], "c-staff", "gold"), (ids[4], "c-public", "gold")] + [(ids[i], None, "corpus") for i in (0, 1, 2, 5)]
    )
    assert result.coverage_lines() == [
        "coverage: 2 of 7 trace(s) joined a gold case (28.6%); 4 judged on the corpus basis (no gold case); "
        "not joined: 2 ambiguous, 1 no_request_span, 1 question_not_in_gold, 1 unknown_case_id",
        "3 gold case(s) without a trace: c-never, c-old, c-ship",
    ]


def test_an_ambiguous_trace_is_judged_once_on_the_corpus_basis_where_it_got_n_to_the_fourth(tmp_path: Path) -> None:
    t = make_tracing(tmp_path)
    ask(QUESTION)
    t.handle.shutdown()
    result = analyze(tmp_path / "s.duckdb", gold=_gold(tmp_path), traces=[t.trace_dir])
    # was 81 rows for 3 candidate cases; then none (left out); now its one claim, against what it cites
    (row,) = result.claims.to_dicts()
    assert (row["basis"], row["case_id"], row["gold_claim_id"], row["bucket"], row["cited_chunks"]) == (
        "corpus",
        None,
        None,
        "ok",
        ["disc#staff"],
    )
    assert [u["reason"] for u in result.coverage["unmatched"]] == ["ambiguous"]


ANSWERS = [
    "Staff get 25% off accessories [1].",
    "Customers get 10% off accessories [2]. The seller pays return shipping [4].",
    "Customers got 5% off accessories [3]. Shipping is free on Sundays [1].",
    "I cannot verify that.",
]
TRACE = st.fixed_dictionaries(
    {
        "question": st.sampled_from([QUESTION, "what is the discount?", "Who pays return shipping?", "Other?"]),
        "said": st.sampled_from(ANSWERS),
        "case_id": st.sampled_from([None, None, "c-staff", "c-ship", "c-never", "missing"]),
        "groups": st.sampled_from([None, ["staff"], ["public"], ["public", "staff"]]),
        "as_of": st.sampled_from([None, "2026-08-10", "2025-01-01"]),
    }
)


@pytest.mark.slow
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(traces=st.lists(TRACE, min_size=1, max_size=6))
def test_claim_rows_are_exactly_the_cases_claims_plus_unmatched_generated_ones(
    tmp_path_factory: Any, traces: list[dict[str, Any]]
) -> None:
    tmp = tmp_path_factory.mktemp("prop")
    t = make_tracing(tmp)
    for tr in traces:
        principal = {"id": "u", "groups": tr["groups"]} if tr["groups"] else None
        ask(tr["question"], tr["said"], case_id=tr["case_id"], principal=principal, as_of=tr["as_of"])
    ids = _trace_ids(t)
    t.handle.shutdown()
    result = analyze(tmp / "s.duckdb", gold=_gold(tmp), traces=[t.trace_dir])
    cov = result.coverage
    assert cov["traces"] == len(traces)
    cases = {r["trace_id"]: r["case_id"] for r in result.cases.to_dicts() if r["basis"] == "gold"}
    corpus = {r["trace_id"] for r in result.cases.to_dicts() if r["basis"] == "corpus"}
    assert len(cases) == cov["joined"]  # a trace joins at most one case
    assert len(corpus) == cov["corpus"] == result.cases.height - len(cases)
    assert set(cases) | {u["trace_id"] for u in cov["unmatched"]} == set(ids)
    assert not set(cases) & {u["trace_id"] for u in cov["unmatched"]}
    assert corpus == {u["trace_id"] for u in cov["unmatched"]}  # every trace here has a request span
    gold_claims = {c["case_id"]: [x["claim_id"] for x in c.get("claims", [])] for c in GOLD["cases"]}
    expect = {c["case_id"]: c.get("expect", "answer") for c in GOLD["cases"]}
    rows = result.claims.to_dicts()
    for tid, said in zip(ids, (tr["said"] for tr in traces), strict=True):
        mine = [r for r in rows if r["trace_id"] == tid]
        if tid not in cases:  # corpus basis: its factual claims, or one "(answer)" row; never a gold-only bucket
            assert mine and {(r["basis"], r["case_id"]) for r in mine} == {("corpus", None)}
            assert {r["gold_claim_id"] for r in mine} in ({None}, {"(answer)"})
            assert len([r for r in mine if r["gold_claim_id"] is None]) <= len(split_claims(said))
            assert not {r["bucket"] for r in mine} & {"retrieval_miss", "context_drop"}
            continue
        case = cases[tid]
        wanted = gold_claims[case] + (["(abstain)"] if expect[case] == "abstain" else [])
        assert Counter(r["gold_claim_id"] for r in mine if r["gold_claim_id"] is not None) == Counter(wanted)
        extra = [r for r in mine if r["gold_claim_id"] is None]
        assert len(extra) <= len(split_claims(said))
        assert {r["case_id"] for r in mine} == {case}
    assert len(rows) == sum(result.summary.values())


@pytest.mark.slow
def test_reports_show_coverage_and_gates_read_it(tmp_path: Path, capsys: Any) -> None:
    t = make_tracing(tmp_path)
    ask("Anything", case_id="nope")
    ask(QUESTION, principal={"id": "s", "groups": ["staff"]})
    t.handle.shutdown()
    db = str(tmp_path / "s.duckdb")
    assert (
        main(["analyze", "--traces", str(t.trace_dir), "--gold", str(_gold(tmp_path)), "--db", db, "--format", "json"])
        == 0
    )
    capsys.readouterr()
    assert main(["report", "--db", db, "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["coverage"] == {
        "traces": 2,
        "joined": 1,
        "unmatched": 1,
        "coverage": 0.5,
        "unmatched_by_reason": [{"reason": "unknown_case_id", "traces": 1}],
        "missing_cases": 4,
        "missing_case_ids": ["c-never", "c-old", "c-public", "c-ship"],
        "corpus": 1,  # the unknown case id's trace, judged on the corpus basis
        "gold_claims": 1,
        "corpus_claims": 1,
    }
    gates = ["unmatched>0", "coverage<95%", "missing_cases>3", "unmatched>60%", "coverage<40%", "missing_cases>=5"]
    args = [x for g in gates for x in ("--fail-on", g)]
    assert main(["report", "--db", db, "--format", "markdown", *args]) == 1
    captured = capsys.readouterr()
    assert (
        "coverage: 1 of 2 trace(s) joined a gold case (50.0%); 1 judged on the corpus basis (no gold case); "
        "not joined: 1 unknown_case_id; 4 gold case(s)" in captured.out
    )
    run = report["run_id"]
    failed = [
        "1 trace joins no gold case (gate unmatched>0)",
        "coverage is 50.0%: 1 of 2 traces join a gold case (gate coverage<95%)",
        "4 gold cases have no trace (gate missing_cases>3)",
    ]
    assert captured.err.splitlines()[-4:] == [f"citeline: run {run}: 3 of 6 gates failed:", *(f"  {x}" for x in failed)]
    shown = [x.replace(">", "&gt;").replace("<", "&lt;") for x in failed]  # Markdown-escaped
    assert captured.out.endswith("\n".join(["### Gates failed", "", *(f"- {x}" for x in shown)]) + "\n")
    page = tmp_path / "r.html"
    assert main(["report", "--db", db, "--format", "html", "--out", str(page), *args]) == 1
    assert [ln for ln in page.read_text().splitlines() if "class='gate'" in ln] == [
        "".join(f"<p class='gate'>gate failed: {html.escape(x)}</p>" for x in failed)
    ]


@pytest.mark.slow
def test_a_gate_never_passes_on_a_run_with_no_claims(tmp_path: Path, capsys: Any) -> None:
    t = make_tracing(tmp_path)  # a trace whose root (the request) is elsewhere: nothing to judge, on any basis
    remote = SpanContext(0x5EED, 0xF00D, is_remote=True, trace_flags=TraceFlags(TraceFlags.SAMPLED))
    t.handle.provider.get_tracer("x").start_span("orphan", context=set_span_in_context(NonRecordingSpan(remote))).end()
    t.handle.shutdown()
    db = str(tmp_path / "s.duckdb")
    assert main(["analyze", "--traces", str(t.trace_dir), "--gold", str(_gold(tmp_path)), "--db", db]) == 1
    capsys.readouterr()
    assert main(["report", "--db", db, "--fail-on", "grounding>0"]) == 1
    head, line = capsys.readouterr().err.splitlines()[-2:]
    assert re.fullmatch(r"citeline: run \S+: 1 of 1 gate failed:", head)
    assert line == (
        "  no claim was classified, so no gate can pass on this run: check --traces and the gold set's case "
        "ids/questions (coverage above), or pass --allow-empty"
    )
    assert main(["report", "--db", db, "--fail-on", "grounding>0", "--allow-empty"]) == 0
