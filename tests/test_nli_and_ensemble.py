"""The nli judge with a tiny ONNX model the tests build, and the ensemble's veto.

Mocked: the model's knowledge (tests/nli_model.py scripts it by construction; no NLI weights can be
downloaded here) and, for the ensemble, the LLM's answers (tests/chat_server.py). onnxruntime, the
tokenizer, the windowing and the HTTP are real.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from citeline.analyzer.cli.main import main
from citeline.analyzer.judges import JudgeItem, judge_all, load
from citeline.analyzer.run.analyze import analyze
from citeline.examples.demo import SCENARIOS, gold_path
from tests.analysis_helpers import run_and_analyze
from tests.chat_server import chat_server
from tests.extras import needs


def build(folder: Path) -> Path:
    """The tiny model of tests/nli_model.py: onnx writes it, the nli judge runs it on onnxruntime."""
    needs("onnx", "writes the tiny NLI model")
    needs("onnxruntime", "runs the nli judge; also 'citeline[nli]'")
    from tests.nli_model import build

    return build(folder)


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build(tmp_path_factory.mktemp("nli"))


def test_the_best_window_decides(model_dir: Path) -> None:
    judge = load("nli", model=str(model_dir))
    items = [
        JudgeItem("claim", ["It is supported here."]),
        JudgeItem("claim", ["It is refuted here."]),
        JudgeItem("claim", ["Nothing to see."]),
        JudgeItem("claim", []),
    ]
    assert [j.label for j in judge_all(judge, items)] == ["entailed", "contradicted", "insufficient", "not_applicable"]


def test_evidence_longer_than_the_model_input_is_split_and_not_truncated(model_dir: Path) -> None:
    long = " ".join(["filler"] * 300) + ". " + " ".join(["filler"] * 300) + ". It is supported."
    short = load("nli", model=str(model_dir), max_length="64")
    (j,) = judge_all(short, [JudgeItem("claim", [long])])
    assert j.label == "entailed"
    assert j.rationale.startswith("window ") and j.rationale.endswith("entails it (p=1.00)")
    n_windows = int(j.rationale.split(" of ")[1].split()[0])
    assert n_windows >= 600 // 64  # every window fits 64 tokens with the claim


def test_label_order_is_an_option(model_dir: Path) -> None:
    flipped = load("nli", model=str(model_dir), labels="contradiction,neutral,entailment")
    (j,) = judge_all(flipped, [JudgeItem("claim", ["It is supported here."])])
    assert j.label == "contradicted"
    assert flipped.settings["labels"] == "contradiction,neutral,entailment"


def test_a_model_that_does_not_fit_its_labels_leaves_claims_not_applicable(model_dir: Path) -> None:
    wrong = load("nli", model=str(model_dir), labels="entailment,contradiction")
    answers = judge_all(wrong, [JudgeItem("a", ["supported"]), JudgeItem("b", ["refuted"])])
    assert [(a.label, a.error) for a in answers] == [("not_applicable", True)] * 2
    assert answers[0].rationale == "ValueError: the model returned logits of shape (1, 3); labels= names 2"


def test_missing_model_files_are_clear_errors(tmp_path: Path) -> None:
    needs("onnxruntime", "the nli judge loads it before it looks for the model; also 'citeline[nli]'")
    with pytest.raises(ValueError, match=r"nli model file .*nope.onnx does not exist"):
        load("nli", model=str(tmp_path / "nope.onnx"))
    with pytest.raises(ValueError, match="needs a model"):
        load("nli")
    with pytest.raises(ValueError, match="labels='yes,no'"):
        load("nli", model=str(build(tmp_path / "m")), labels="yes,no")


def test_calibrate_and_analyze_with_the_nli_judge(
    model_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    labelled = tmp_path / "l.csv"
    labelled.write_text(
        "claim,evidence,label\n"
        "a,It is supported.,supported\n"
        "b,It is refuted.,not_supported\n"
        "c,Nothing here.,supported\n"
    )
    assert (
        main(["calibrate", str(labelled), "--judge", "nli", "--judge-option", f"model={model_dir}", "--format", "json"])
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert out["confusion"] == {
        "supported": {"entailed": 1, "contradicted": 0, "insufficient": 1, "not_applicable": 0},
        "not_supported": {"entailed": 0, "contradicted": 1, "insufficient": 0, "not_applicable": 0},
    }
    # through analyze: the tiny model reads "60" as a contradiction and "30" as support
    picked = [s for s in SCENARIOS if s.name in ("wrong-number", "wrong-number~fixed")]
    run_and_analyze(tmp_path, picked)
    result = analyze(
        tmp_path / "nli.duckdb", gold=gold_path(), traces=[tmp_path / "traces"], judge=load("nli", model=str(model_dir))
    )
    rows = [r for r in result.claims.to_dicts() if r["gold_claim_id"] == "window"]
    verdicts = sorted((("60 days" in r["claim_text"]), r["bucket"], r["support_label"]) for r in rows)
    assert verdicts == [(False, "ok", "entailed"), (True, "grounding", "contradicted")]
    assert result.judge["name"].startswith("nli@1{")


def test_the_ensemble_vetoes_a_model_that_calls_a_different_amount_entailed() -> None:
    evidence = ["The fee is $0.25 per page."]
    with chat_server({}, default={"label": "entailed"}) as srv:
        judge = load("ensemble", judge="llm", model="table-model", base_url=srv.url)
        amount, name, fine = judge_all(
            judge,
            [
                JudgeItem("The fee is $0.50 per page.", evidence),
                JudgeItem("Scott Weiland was the frontman.", ["Joey Cape was the frontman of the band."]),
                JudgeItem("The fee is $0.25 per page.", evidence),
            ],
        )
    assert (amount.label, amount.rationale) == (
        "contradicted",
        "llm said entailed; the rules veto it: claim says 0.5 USD, the evidence says 0.25 USD",
    )
    assert (name.label, name.rationale) == (
        "insufficient",
        "llm said entailed; the rules veto it: the evidence does not name 'Scott Weiland'",
    )
    assert (fine.label, fine.rationale) == ("entailed", "scripted entailed")
    assert judge.version == "1+llm@3"
    assert judge.usage()["vetoed"] == 2  # type: ignore[attr-defined]


def test_the_ensemble_never_turns_a_model_verdict_into_entailed(model_dir: Path) -> None:
    judge = load("ensemble", judge="nli", model=str(model_dir))
    answers = judge_all(judge, [JudgeItem("x", ["It is refuted."]), JudgeItem("x", ["Nothing."])])
    assert [a.label for a in answers] == ["contradicted", "insufficient"]
