"""Choosing what ``citeline perturb`` runs: ``--case`` globs and ``--ok-only``.

The example app answers the gold cases of ``examples/policy_gold.yaml``; the
app written here answers ``shipping-cost`` with another case's script, so that
case's baseline is not ok and ``--ok-only`` leaves it out, saying why.
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

import pytest

from citeline.analyzer.cli import main as _cli
from citeline.analyzer.testing import PerturbError, perturb
from citeline.analyzer.testing.perturb import PerturbResult
from citeline.analyzer.testing.perturb_render import render_html, render_text
from citeline.analyzer.testing.perturbations import CATALOGUE
from citeline.examples.demo import gold_path

APP = '''
from citeline.examples import perturb_apps
from citeline.examples.perturb_apps import _plain, script_for


def answer(case):
    """The example app, but shipping-cost gets the returns-window answer: its baseline is not ok."""
    if case.case_id == "shipping-cost":
        return _plain.ask(case.question, script_for("returns-window"), case_id=case.case_id, as_of=case.as_of)
    return perturb_apps.answer_case(case)
'''

#: what --ok-only says of the shipping-cost baseline: each claim row not ok
SHIPPING_NOT_OK = [
    "cost: grounding",
    "Yes, opened electronics may be returned within 30 days of delivery.: uncited",
]


@pytest.fixture
def app_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "frictions_app.py").write_text(APP, encoding="utf-8")
    monkeypatch.chdir(tmp_path)  # --app imports from the current folder
    return tmp_path


def test_case_globs_and_ok_only_perturb_only_the_ok_cases_and_list_the_others(
    app_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = app_dir / "m.json"
    argv = ["perturb", "--app", "frictions_app:answer", "--gold", str(gold_path())]
    argv += ["--perturbation", "generation.remove_marker", "--format", "json", "--out", str(out)]
    cases = ["--case", "returns-*", "--case", "shipping-c?st", "--case", "staff-discount"]
    assert _cli.main([*argv, *cases, "--ok-only"]) == 0
    data = json.loads(out.read_text())
    assert data["cases"] == ["returns-window", "staff-discount"]
    assert data["not_perturbed"] == {"shipping-cost": SHIPPING_NOT_OK}
    assert [(c["case_id"], c["status"]) for c in data["cells"]] == [
        ("returns-window", "holds"),
        ("staff-discount", "n/a"),
    ]
    assert data["stages"] == {"generation": {"verdict": "seen", "tested": 1, "note": "", "unrecorded": [], "cells": []}}

    # without --ok-only the globs still pick the same three cases, and shipping-cost is perturbed
    assert _cli.main([*argv, *cases]) == 0
    data = json.loads(out.read_text())
    assert (data["cases"], data["not_perturbed"]) == (["returns-window", "shipping-cost", "staff-discount"], {})

    # nothing ok: nothing perturbed, and the run says so (exit 1, the work came out empty)
    capsys.readouterr()
    assert _cli.main([*argv, "--case", "shipping-cost", "--ok-only"]) == 1
    assert capsys.readouterr().err.splitlines() == [
        f"perturbation matrix written to {out}",
        "citeline: no case's baseline is all ok, so nothing was perturbed; fix the baseline or drop --ok-only",
    ]
    assert json.loads(out.read_text())["not_perturbed"] == {"shipping-cost": SHIPPING_NOT_OK}


def test_a_case_pattern_that_matches_no_case_stops_the_run_naming_it(
    app_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["perturb", "--app", "frictions_app:answer", "--gold", str(gold_path())]
    assert _cli.main([*argv, "--case", "returns-*", "--case", "nosuch-*", "--case", "Returns-window"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"citeline: {gold_path()}: no gold case matches 'nosuch-*', 'Returns-window'; the case ids are "
        "returns-window, shipping-cost, warranty-water, free-shipping, refund-speed, restocking-fee, "
        "warranty-claim, price-match, staff-discount, accessory-discount, ..."
    ]
    with pytest.raises(PerturbError, match=r"no gold case matches 'x\[1\]'"):
        perturb(lambda case: None, gold_path(), cases=["x[1]"])


def test_the_library_call_takes_globs_and_ok_only_too() -> None:
    from citeline.examples.perturb_apps import _plain, answer_case, script_for

    def app(case: Any) -> str:
        if case.case_id == "shipping-cost":
            return _plain.ask("How much is shipping?", script_for("returns-window"), case_id="shipping-cost")
        return answer_case(case)

    r = perturb(app, gold_path(), cases=["shipping-*"], perturbations=["generation.remove_marker"], ok_only=True)
    assert (r.cases, r.cells, r.not_perturbed) == ([], [], {"shipping-cost": SHIPPING_NOT_OK})
    assert {s: v.verdict for s, v in r.stages.items()} == {"generation": "n/a"}


def test_the_cases_not_perturbed_are_listed_in_the_table_and_the_page_escaped() -> None:
    bad = "<b>x</b>\x1b[31m"
    result = PerturbResult(
        gold="gold.yaml",
        cases=[],
        perturbations=[CATALOGUE[0]],
        baseline={},
        cells=[],
        stages={},
        not_perturbed={"shipping-cost": SHIPPING_NOT_OK, bad: [bad]},
    )
    text = render_text(result)
    assert text.split("\n\n")[-1].splitlines() == [
        "baseline not ok, not perturbed (--ok-only):",
        "  shipping-cost: cost: grounding; Yes, opened electronics may be returned within 30 days of delivery.: "
        "uncited",
        "  <b>x</b>: <b>x</b>",  # the escape sequence is stripped for the terminal
    ]
    page = render_html(result)
    assert "<h2>Baseline not ok, not perturbed</h2>" in page
    assert page.count(html.escape(bad)) == 2 and "<b>x</b>" not in page
