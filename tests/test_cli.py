"""The command line: help everywhere, the JSON contract, the demo, calibration."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from citeline.analyzer.cli.main import build_parser, main
from citeline.analyzer.gold.goldset import load_gold
from citeline.examples.demo import SCENARIOS, gold_path
from tests.analysis_helpers import run_and_analyze

DATA = Path(__file__).resolve().parent / "data"  # vendored test data, origin and licence beside it


def test_every_command_has_help_with_an_example() -> None:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    choices = sub.choices
    assert isinstance(choices, dict)
    assert set(choices) >= {"demo", "analyze", "validate", "calibrate"}
    for name, cmd in choices.items():
        text = cmd.format_help()
        assert cmd.description, name
        assert f"example: citeline {name}" in text, name
        assert "--db" in text, name


@pytest.mark.slow
def test_analyze_json_contract(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    picked = [s for s in SCENARIOS if s.name in ("wrong-number", "wrong-number~fixed", "should-abstain")]
    run_and_analyze(tmp_path / "gen", picked)
    traces = tmp_path / "gen" / "traces"
    db = tmp_path / "cli.duckdb"
    assert (
        main(
            [
                "analyze",
                "--traces",
                str(traces),
                "--gold",
                str(gold_path()),
                "--db",
                str(db),
                "--format",
                "json",
            ]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert set(out) == {
        "run_id",
        "summary",
        "coverage",
        "by_basis",
        "judge",
        "skipped",
        "problems",
        "warnings",
        "skipped_text",
        "cases",
        "claims",
    }
    assert out["skipped_text"] == {}  # these answers are all claims
    assert out["warnings"] == []  # the demo gold set has no draft cases
    assert out["judge"] == {"name": "rules@4", "asked": out["judge"]["asked"], "cached": 0, "failed": 0}
    assert out["judge"]["asked"] > 0
    asked = {c["case_id"] for c in out["cases"]}
    assert out["coverage"] == {
        "traces": 3,
        "joined": 3,
        "corpus": 0,
        "unmatched": [],
        "cases_without_trace": sorted(set(load_gold(gold_path()).cases) - asked),
    }
    assert out["by_basis"] == {"gold": out["summary"], "corpus": dict.fromkeys(out["summary"], 0)}
    assert {c["basis"] for c in out["cases"]} == {"gold"}
    assert len(out["coverage"]["cases_without_trace"]) == 11 - len(asked)
    assert out["summary"] == {
        "access_violation": 0,
        "not_evaluable": 0,
        "invalid_citation": 0,
        "freshness": 0,
        "retrieval_miss": 0,
        "context_drop": 0,
        "grounding": 2,
        "uncited": 0,
        "attribution": 0,
        "resolution": 0,
        "ok": 2,
    }
    assert sorted(c["verdict"] for c in out["cases"]) == ["grounding", "grounding", "ok"]
    for c in out["claims"]:
        assert set(c) == {
            "trace_id",
            "case_id",
            "gold_claim_id",
            "claim_text",
            "bucket",
            "stage",
            "flags",
            "reason",
            "span_id",
            "basis",
        }
        assert c["basis"] == "gold"
    abstain = [c for c in out["claims"] if c["gold_claim_id"] == "(abstain)"]
    assert [(c["bucket"], c["stage"], c["reason"]) for c in abstain] == [
        ("grounding", "generation", "answered where it should abstain")
    ]
    # without --traces: what is already in the store
    assert main(["analyze", "--gold", str(gold_path()), "--db", str(db), "--format", "json"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["summary"] == out["summary"]
    assert again["run_id"] != out["run_id"]


def test_missing_gold_file_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["analyze", "--gold", str(tmp_path / "nope.yaml"), "--db", str(tmp_path / "x.duckdb")]) == 2
    assert "does not exist; pass --gold FILE" in capsys.readouterr().err


@pytest.mark.slow
def test_demo_runs_offline_and_shows_every_bucket(tmp_path: Path) -> None:
    exe = Path(sys.executable).with_name("citeline")
    out = subprocess.run(
        [str(exe), "demo", "--format", "json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    result = json.loads(out.stdout)
    assert all(n > 0 for n in result["summary"].values()), result["summary"]
    assert (tmp_path / "citeline.duckdb").exists()
    assert result["skipped"] == 0


def test_calibrate_reports_agreement_on_expertqa(capsys: pytest.CaptureFixture[str]) -> None:
    path = DATA / "expertqa" / "rand_test.jsonl"
    assert path.exists(), f"test data missing: {path}"
    assert main(["calibrate", str(path), "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    # 1,292 claims: 62 N/A, 227 Missing with no evidence, 210 whose evidence is only a URL are left out
    assert (out["n"], out["left_out"], out["judge"]) == (793, 499, "rules@4")
    assert sum(sum(row.values()) for row in out["confusion"].values()) == 793
    assert sum(out["confusion"]["supported"].values()) == 562
