"""The llm judge against a real chat-completions server on loopback.

Mocked: only the model's answers (no model weights or hosted LLM can be reached here); they come from
a table in tests/chat_server.py, which stands in for the hosted model. HTTP, JSON, retries, timeouts,
concurrency and the prompt the judge builds are real; the server checks that prompt 2 carries each field.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from citeline.analyzer.cli.main import main
from citeline.analyzer.judges import Judge, JudgeItem, Source, judge_all, load
from citeline.analyzer.run.analyze import analyze
from citeline.examples.demo import SCENARIOS, gold_path
from tests.analysis_helpers import run_and_analyze
from tests.chat_server import chat_server, parse_prompt

EVIDENCE = ["Opened electronics may be returned within 30 days of delivery."]


def _judge(url: str, **options: str) -> Judge:
    return load("llm", model="table-model", base_url=url, backoff="0.01", **options)


SOURCE = Source("returns-v4#eligibility-2", "returns", "v4", "Returns policy", "2026-01-01", "", "active")


def test_verdicts_come_from_the_endpoint_with_the_prompt_version_in_the_cache_key() -> None:
    with chat_server({"30 days": {"label": "entailed"}, "60 days": {"label": "contradicted"}}) as srv:
        judge = _judge(srv.url)
        ok, wrong = judge_all(judge, [JudgeItem("Returns take 30 days.", EVIDENCE), JudgeItem("60 days.", EVIDENCE)])
    assert (ok.label, ok.rationale, ok.error) == ("entailed", "scripted entailed", False)
    assert (wrong.label, wrong.error) == ("contradicted", False)
    assert judge.settings == {"model": "table-model", "prompt": "3", "temperature": 0.0}
    assert (judge.version, judge.reads_context) == ("3", True)  # type: ignore[attr-defined]
    # the two requests run concurrently: find this claim's, whatever order they arrived in
    body = next(b for b in srv.seen if parse_prompt(b["messages"])["claim"] == "Returns take 30 days.")
    assert body["model"] == "table-model"


def test_prompt_2_carries_the_question_each_chunk_with_its_metadata_and_the_rubric() -> None:
    """Issue #24: the question, the claim, each evidence text with its document metadata, the four labels
    with a rationale grounded in the evidence, and no outside knowledge; the server refuses a prompt
    lacking any of them (422), so a judge that dropped one would get no verdict here."""
    question = "Can opened electronics be returned after three weeks?"
    other = Source("returns-v3#eligibility-2", "returns", "v3", "Returns policy (2025)", "2025-01-01", "2026-01-01")
    item = JudgeItem(
        "Returns take 30 days.",
        [EVIDENCE[0], "Opened electronics may be returned within 14 days."],
        question=question,
        sources=[SOURCE, other],
    )
    with chat_server({}, default={"label": "entailed"}, require_context=True) as srv:
        (j,) = judge_all(_judge(srv.url, prompt="2"), [item])
    assert (j.label, srv.missing) == ("entailed", [])
    (body,) = srv.seen
    prompt = parse_prompt(body["messages"])
    assert (prompt["question"], prompt["claim"]) == (question, "Returns take 30 days.")
    assert prompt["evidence"] == [
        {
            "n": 1,
            "metadata": {
                "document": "returns",
                "chunk": "returns-v4#eligibility-2",
                "version": "v4",
                "title": "Returns policy",
                "effective": "2026-01-01 to open",
                "status": "active",
            },
            "text": EVIDENCE[0],
        },
        {
            "n": 2,
            "metadata": {
                "document": "returns",
                "chunk": "returns-v3#eligibility-2",
                "version": "v3",
                "title": "Returns policy (2025)",
                "effective": "2025-01-01 to 2026-01-01",
                "status": "not recorded",
            },
            "text": "Opened electronics may be returned within 14 days.",
        },
    ]
    system = prompt["system"]
    assert "do not use outside knowledge" in system
    assert '{"label": "<entailed|contradicted|insufficient|not_applicable>", "rationale": "<one sentence>"}' in system
    assert "The rationale must rest on the evidence alone" in system
    # a judge that knows no question or source still sends every field, saying so
    with chat_server({}, default={"label": "insufficient"}, require_context=True) as srv:
        (bare,) = judge_all(_judge(srv.url, prompt="2"), [JudgeItem("Returns take 30 days.", EVIDENCE)])
    assert (bare.label, srv.missing) == ("insufficient", [])
    prompt = parse_prompt(srv.seen[0]["messages"])
    assert prompt["question"] == "(not recorded)"
    assert prompt["evidence"][0]["metadata"] == dict.fromkeys(
        ("document", "chunk", "version", "title", "effective", "status"), "not recorded"
    )


# seed 004's FEE-2: the text a value is bound to, and the claim that binds it to another subject
FEE_2 = "FEE-2: domestic transfer fee is ₦150; international fee is ₦500."


def test_prompt_3_asks_for_bindings_the_unsupported_part_and_the_period_and_reports_each() -> None:
    """Issue #36: prompt 3 is prompt 2 (the server still finds every field of it) with the structure rules v4
    reads; the reply's three fields, read one by one, end up in the rationale after the model's sentence."""
    replies = {
        "international transfer fee": {
            "label": "contradicted",
            "fields": {
                "bindings": [
                    {"value": "₦150", "claim_subject": "international transfer fee", "evidence_subject": "domestic fee"}
                ]
            },
        },
        "store credit": {"label": "insufficient", "fields": {"unsupported": "a 10% store credit is added"}},
        "Before 2024": {"label": "contradicted", "fields": {"period": "since March 2024"}},
        "domestic transfer fee": {  # a binding the evidence agrees with, and fields of the wrong shape: nothing said
            "label": "entailed",
            "fields": {
                "bindings": [{"value": "₦150", "claim_subject": "domestic fee", "evidence_subject": "Domestic fee"}, 7],
                "unsupported": "",
                "period": ["since"],
            },
        },
    }
    items = [
        JudgeItem("The international transfer fee is ₦150.", [FEE_2], question="What is the international fee?"),
        JudgeItem("Refunds take 5 days and a 10% store credit is added.", ["Refunds take 5 days."]),
        JudgeItem("Before 2024 the transfer fee was waived.", ["Since March 2024 the transfer fee is waived."]),
        JudgeItem("The domestic transfer fee is ₦150.", [FEE_2]),
    ]
    with chat_server(replies, require_context=True) as srv:
        judge = _judge(srv.url)
        got = judge_all(judge, items)
    assert (judge.version, srv.missing) == ("3", [])
    assert [(j.label, j.rationale) for j in got] == [
        (
            "contradicted",
            "scripted contradicted; the claim binds ₦150 to 'international transfer fee', "
            "the evidence to 'domestic fee'",
        ),
        ("insufficient", "scripted insufficient; unsupported part: 'a 10% store credit is added'"),
        ("contradicted", "scripted contradicted; the evidence covers 'since March 2024'"),
        ("entailed", "scripted entailed"),
    ]
    system = parse_prompt(srv.seen[0]["messages"])["system"]
    for asked in ('"bindings": [{"value"', '"claim_subject"', '"evidence_subject"', '"unsupported"', '"period"'):
        assert asked in system
    assert "judged part by part" in system and "compared with the period the evidence covers" in system
    assert system.count('"label"') == 1  # one answer format, prompt 3's


def test_prompt_1_stays_loadable_and_the_server_sees_what_it_lacks() -> None:
    """Prompt 1 (claim and evidence only) is kept for comparison; it is the prompt the server's check exists
    to refuse: no question, no metadata, no fourth label, nothing about outside knowledge."""
    with chat_server({}, default={"label": "entailed"}, require_context=True) as srv:
        judge = _judge(srv.url, prompt="1", retries="0")
        (j,) = judge_all(judge, [JudgeItem("Returns take 30 days.", EVIDENCE, question="Q?", sources=[SOURCE])])
    assert judge.settings == {"model": "table-model", "prompt": "1", "temperature": 0.0}
    assert (j.label, j.error) == ("not_applicable", True)
    assert srv.missing == [
        ("Returns take 30 days.", ["rubric: not_applicable", "rubric: outside knowledge", "question", "evidence"])
    ]
    assert srv.seen[0]["messages"][1]["content"].splitlines() == [
        "Claim: Returns take 30 days.",
        "Evidence:",
        f"[1] {EVIDENCE[0]}",
    ]
    with pytest.raises(ValueError, match="the llm judge has prompt versions 1, 2, 3, not '4'"):
        _judge(srv.url, prompt="4")


def test_a_malformed_reply_is_asked_again_once_then_not_applicable_with_the_reply_quoted() -> None:
    table = {"again": {"malformed_once": "entailed"}, "never": {"reply": "I would say it is fine."}}
    with chat_server(table) as srv:
        again, never = judge_all(_judge(srv.url), [JudgeItem("asked again", EVIDENCE), JudgeItem("never", EVIDENCE)])
    assert (again.label, again.rationale) == ("entailed", "scripted, asked again")
    assert srv.requests["asked again"] == 2
    assert never.label == "not_applicable" and never.error
    assert never.rationale == "the model's reply is not a verdict, twice: 'I would say it is fine.'"
    assert srv.requests["never"] == 2


def test_an_unknown_label_is_a_malformed_reply() -> None:
    with chat_server({"maybe": {"label": "maybe"}}) as srv:
        (j,) = judge_all(_judge(srv.url), [JudgeItem("maybe so", EVIDENCE)])
    assert (j.label, j.error) == ("not_applicable", True)
    assert "maybe" in j.rationale


def test_server_errors_are_retried_with_backoff_and_then_named() -> None:
    table = {"flaky": {"status": 500, "times": 1}, "down": {"status": 503}, "bad request": {"status": 400}}
    with chat_server(table, default={"label": "entailed"}) as srv:
        judge = _judge(srv.url, retries="2")
        flaky, down, bad = judge_all(
            judge, [JudgeItem("flaky", EVIDENCE), JudgeItem("down", EVIDENCE), JudgeItem("bad request", EVIDENCE)]
        )
    assert (flaky.label, srv.requests["flaky"]) == ("entailed", 2)
    assert (down.label, down.error, srv.requests["down"]) == ("not_applicable", True, 3)
    assert down.rationale == f"no answer after 3 tries: HTTP 503 from {srv.url}/chat/completions"
    assert (bad.label, srv.requests["bad request"]) == ("not_applicable", 1)  # a 4xx is not retried
    assert bad.rationale.startswith(f"HTTP 400 from {srv.url}/chat/completions")
    usage = judge.usage()  # type: ignore[attr-defined]
    assert (usage["requests"], usage["retries"]) == (6, 3)


def test_a_timeout_is_not_applicable_and_the_rest_of_the_batch_is_judged() -> None:
    with chat_server({"slow": {"sleep": 4}}, default={"label": "entailed"}) as srv:
        judge = _judge(srv.url, timeout="1.5", retries="0")  # generous: a loaded CI machine answers late
        answers = judge_all(judge, [JudgeItem("slow one", EVIDENCE), JudgeItem("fast one", EVIDENCE)])
    assert [a.label for a in answers] == ["not_applicable", "entailed"]
    assert answers[0].rationale == f"no answer after 1 tries: timed out ({srv.url}/chat/completions)"


def test_judge_many_runs_requests_concurrently_up_to_the_limit_and_counts_tokens() -> None:
    with chat_server({}, default={"label": "entailed", "sleep": 0.2}) as srv:
        judge = _judge(srv.url, concurrency="3", price_in="2", price_out="10")
        answers = judge_all(judge, [JudgeItem(f"claim {i}", EVIDENCE) for i in range(9)])
    assert [a.label for a in answers] == ["entailed"] * 9
    assert srv.most_active == 3
    usage = judge.usage()  # type: ignore[attr-defined]
    prompt = sum(sum(len(m["content"].split()) for m in b["messages"]) for b in srv.seen)
    assert usage == {
        "requests": 9,
        "retries": 0,
        "prompt_tokens": prompt,
        "completion_tokens": 90,
        "cost_usd": round((prompt * 2 + 90 * 10) / 1e6, 6),
    }


def test_no_model_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CITELINE_JUDGE_MODEL", raising=False)
    monkeypatch.delenv("OPENAI_MODEL", raising=False)
    with pytest.raises(ValueError, match="needs a model: --judge-option model=NAME"):
        load("llm")


def test_calibrate_with_the_llm_judge(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = [
        {"claim": "Returns take 30 days.", "evidence": EVIDENCE, "label": "supported"},
        {"claim": "Returns take 60 days.", "evidence": EVIDENCE, "label": "not_supported"},
        {"claim": "Returns are free.", "evidence": EVIDENCE, "label": "not_supported"},
        {"claim": "Gift cards expire.", "evidence": EVIDENCE, "label": "supported"},
    ]
    labelled = tmp_path / "labels.jsonl"
    labelled.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    table: dict[str, dict[str, Any]] = {
        "30 days": {"label": "entailed"},
        "60 days": {"label": "entailed"},
        "expire": {"status": 500},
    }
    with chat_server(table) as srv:
        code = main(
            [
                "calibrate",
                str(labelled),
                "--judge",
                "llm",
                "--judge-option",
                "model=table-model",
                "--judge-option",
                f"base_url={srv.url}",
                "--judge-option",
                "backoff=0.01",
                "--format",
                "json",
            ]
        )
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    assert out["judge"] == 'llm@3{"model":"table-model","prompt":"3","temperature":0.0}'
    assert (out["n"], out["judge_errors"]) == (4, 1)
    assert out["confusion"] == {
        "supported": {"entailed": 1, "contradicted": 0, "insufficient": 0, "not_applicable": 1},
        "not_supported": {"entailed": 1, "contradicted": 0, "insufficient": 1, "not_applicable": 0},
    }
    assert (out["false_support"], out["missed_support"]) == (0.5, 0.5)


@pytest.mark.slow
def test_analyze_with_the_llm_judge_leaves_failed_claims_not_evaluable(tmp_path: Path) -> None:
    picked = [s for s in SCENARIOS if s.name in ("wrong-number", "wrong-number~fixed")]
    _, outcomes = run_and_analyze(tmp_path, picked)
    traces = tmp_path / "traces"
    table = {"60 days": {"sleep": 4}}  # the model never answers in time for the wrong claim
    with chat_server(table, default={"label": "entailed"}) as srv:
        judge = _judge(srv.url, timeout="1.5", retries="1")
        result = analyze(tmp_path / "llm.duckdb", gold=gold_path(), traces=[traces], judge=judge)
    rows = {r["claim_text"]: r for r in result.claims.to_dicts() if r["gold_claim_id"] == "window"}
    slow = next(r for t, r in rows.items() if "60 days" in t)
    fast = next(r for t, r in rows.items() if "30 days" in t)
    assert (slow["bucket"], slow["stage"], slow["support_label"]) == ("not_evaluable", "generation", "not_applicable")
    gen_span = next(o for o in outcomes if o.scenario.name == "wrong-number").spans["generation"]
    assert slow["span_id"] == gen_span
    assert slow["reason"] == (
        'judge llm@3{"model":"table-model","prompt":"3","temperature":0.0} could not decide: '
        f"no answer after 2 tries: timed out ({srv.url}/chat/completions)"
    )
    assert (fast["bucket"], fast["support_label"]) == ("ok", "entailed")
    assert result.judge["failed"] == 1
    assert result.judge["requests"] == result.judge["asked"] + 1  # the timed-out one was tried twice
    # a failed judgment is not cached: a second run asks again, and gets an answer now
    with chat_server({}, default={"label": "contradicted"}) as srv2:
        again = analyze(tmp_path / "llm.duckdb", gold=gold_path(), judge=_judge(srv2.url))
    assert srv2.requests and all("60 days" in c for c in srv2.requests)
    slow2 = next(r for r in again.claims.to_dicts() if r["gold_claim_id"] == "window" and "60 days" in r["claim_text"])
    assert (slow2["bucket"], slow2["support_label"]) == ("grounding", "contradicted")


@pytest.mark.slow
def test_analyze_gives_the_llm_judge_each_claims_question_and_its_chunks_corpus_entries(tmp_path: Path) -> None:
    """The question and the metadata reach the judge from a real run: every request of the demo's scenarios
    carries its case's question and, for each evidence text, the gold corpus entry it is."""
    from citeline.analyzer.gold.goldset import load_gold

    gold = load_gold(gold_path())
    _, _ = run_and_analyze(tmp_path, list(SCENARIOS))
    with chat_server({}, default={"label": "entailed"}, require_context=True) as srv:
        result = analyze(tmp_path / "llm.duckdb", gold=gold_path(), traces=[tmp_path / "traces"], judge=_judge(srv.url))
    assert result.judge["failed"] == 0 and srv.missing == []
    questions = {c.question for c in gold.cases.values()}
    prompts = [parse_prompt(b["messages"]) for b in srv.seen]
    assert len(prompts) == result.judge["requests"] > 10  # one request each (a claim with no text asks none)
    for p in prompts:
        assert p["question"] in questions | {"(not recorded)"}, p["question"]
        for e in p["evidence"]:
            chunk = gold.corpus[e["metadata"]["chunk"]]
            assert (e["text"], e["metadata"]["document"], e["metadata"]["version"]) == (
                chunk.text,
                chunk.doc_id,
                chunk.version,
            )
    window = [p for p in prompts if "returned within 30 days" in p["claim"]]
    assert window and {p["question"] for p in window} == {gold.cases["returns-window"].question}
    assert window[0]["evidence"][0]["metadata"] == {
        "document": "returns",
        "chunk": "returns-v4#eligibility-2",
        "version": "v4",
        "title": "Returns policy",
        "effective": "2026-01-01 to open",
        "status": "active",
    }
    # the question and sources are in the llm judge's cache key: the same run again asks nothing
    with chat_server({}, default={"label": "entailed"}, require_context=True) as srv2:
        again = analyze(tmp_path / "llm.duckdb", gold=gold_path(), judge=_judge(srv2.url))
    assert (again.judge["asked"], again.judge["cached"], srv2.seen) == (0, result.judge["asked"], [])
