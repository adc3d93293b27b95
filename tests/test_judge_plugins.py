"""A third-party judge, installed the way a package installs one (a dist-info with an entry point on
sys.path), is listed, loaded with its options and used by calibrate."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from citeline.analyzer.cli.main import main
from citeline.analyzer.judges import available, load

PLUGIN = """
from citeline.analyzer.judges import BaseJudge, Judgment


class EchoJudge(BaseJudge):
    name = "echo"
    version = "7"

    def __init__(self, answer: str = "insufficient") -> None:
        self.answer = answer

    @property
    def settings(self):
        return {"answer": self.answer}

    def judge(self, claim, evidence, facts=(), quotes=()):
        return Judgment(self.answer, "echoed")
"""


@pytest.fixture
def plugin(tmp_path: Path) -> Iterator[str]:
    (tmp_path / "echo_judge_pkg.py").write_text(PLUGIN)
    info = tmp_path / "echo_judge_pkg-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: echo-judge-pkg\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[citeline.judges]\necho = echo_judge_pkg:EchoJudge\n")
    sys.path.insert(0, str(tmp_path))
    try:
        yield "echo"
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("echo_judge_pkg", None)


def test_a_plugin_is_listed_and_loaded_with_its_options(plugin: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert available()[plugin] == "echo_judge_pkg:EchoJudge"
    judge = load(plugin, answer="entailed")
    assert (judge.name, judge.version, dict(judge.settings)) == ("echo", "7", {"answer": "entailed"})
    assert main(["calibrate", "--judge", "list"]) == 0
    assert "echo\techo_judge_pkg:EchoJudge" in capsys.readouterr().out.splitlines()
    with pytest.raises(ValueError, match="judge 'echo' has no option 'model'; its options: answer"):
        load(plugin, model="x")


def test_calibrate_with_a_plugin(plugin: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = tmp_path / "l.jsonl"
    rows.write_text(
        json.dumps({"claim": "a", "evidence": ["x"], "label": "supported"})
        + "\n"
        + json.dumps({"claim": "b", "evidence": ["y"], "label": "partially_supported"})
        + "\n"
    )
    code = main(["calibrate", str(rows), "--judge", plugin, "--judge-option", "answer=entailed", "--format", "json"])
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    assert out["judge"] == 'echo@7{"answer":"entailed"}'
    assert (out["false_support"], out["missed_support"]) == (1.0, 0.0)


def test_an_unknown_judge_names_the_installed_ones(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["calibrate", "x.jsonl", "--judge", "nope"]) == 2
    err = capsys.readouterr().err
    assert err == "citeline: --judge nope: no judge named 'nope'; installed: ensemble, llm, nli, rules\n"


def test_analyze_names_a_bad_judge_option_before_touching_the_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from citeline.examples.demo import gold_path

    db = tmp_path / "s.duckdb"
    base = ["analyze", "--gold", str(gold_path()), "--db", str(db), "--judge", "rules"]
    assert main([*base, "--judge-option", "coverage"]) == 2
    assert "--judge-option 'coverage': write KEY=VALUE" in capsys.readouterr().err
    assert main([*base, "--judge-option", "threshold=0.7"]) == 2
    assert "judge 'rules' has no option 'threshold'; its options: coverage, window" in capsys.readouterr().err
    assert not db.exists()
