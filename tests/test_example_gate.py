"""The bundled example app gated in CI the way the README's "Gate your app in CI" says: the plugin, then
a perturbation run. (The harness's own behaviour is tested in test_perturb.py.)"""

from __future__ import annotations

import pytest

from citeline.analyzer.testing import gold_cases, render_text
from citeline.examples import perturb_apps
from citeline.examples.demo import gold_path

GOLD = str(gold_path())  # examples/policy_gold.yaml


def test_one_answer_is_ok(citeline) -> None:  # type: ignore[no-untyped-def]
    perturb_apps.answer_case(next(c for c in gold_cases(GOLD) if c.case_id == "free-shipping"))
    result = citeline.analyze(gold=GOLD)
    citeline.assert_ok(result)
    assert result.summary["ok"] == 1


@pytest.mark.citeline(gold=GOLD, fail_on=["failing>0", "unmatched>0"])
def test_every_gold_case_passes_the_gate() -> None:
    for case in gold_cases(GOLD):
        perturb_apps.answer_case(case)


def test_every_stage_is_seen_under_perturbation(citeline) -> None:  # type: ignore[no-untyped-def]
    result = citeline.perturb(perturb_apps.careful_case, gold=GOLD)
    assert result.all_seen, render_text(result)
    assert [c for c in result.reactions if not c.reaction_good] == []
