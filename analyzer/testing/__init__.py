"""citeline.analyzer.testing: gate a RAG app in CI.

In pytest (the plugin ships with citeline; nothing to install or enable)::

    def test_returns_answer(citeline):
        app.ask("Can opened electronics be returned after three weeks?", case_id="returns-window")
        citeline.assert_ok(citeline.analyze(gold="gold.yaml"))

    @pytest.mark.citeline(gold="gold.yaml", fail_on=["grounding>0", "uncited>0"])
    def test_every_case():
        for case in cases: app.ask(...)

Metamorphic perturbations, from Python or ``citeline perturb``::

    result = perturb(answer_case, gold="gold.yaml")
    assert result.all_seen, render_text(result)
"""

from typing import TYPE_CHECKING, Any

from citeline.analyzer.testing.expect import describe, mismatches
from citeline.analyzer.testing.perturb import Case, PerturbError, PerturbResult, StageVerdict, gold_cases, perturb
from citeline.analyzer.testing.perturb_judge import Cell
from citeline.analyzer.testing.perturb_render import render_html, render_text
from citeline.analyzer.testing.perturbations import CATALOGUE, Expect, Perturbation

if TYPE_CHECKING:
    from citeline.analyzer.testing.pytest_plugin import CitelineFixture


def __getattr__(name: str) -> Any:
    """``CitelineFixture`` is the pytest plugin's: importing it imports pytest, which a base install (the
    ``citeline`` command, ``citeline demo``) does not have, so it is imported when it is asked for."""
    if name == "CitelineFixture":
        from citeline.analyzer.testing.pytest_plugin import CitelineFixture

        return CitelineFixture
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "CATALOGUE",
    "Case",
    "Cell",
    "CitelineFixture",
    "Expect",
    "PerturbError",
    "PerturbResult",
    "Perturbation",
    "StageVerdict",
    "describe",
    "gold_cases",
    "mismatches",
    "perturb",
    "render_html",
    "render_text",
]
