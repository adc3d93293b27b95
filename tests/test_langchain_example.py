"""The LangChain example (examples/langchain_app.py) gated in CI as the README shows: the plugin on a few
answers, a gate over every gold case, and a perturbation run whose findings about the app are known."""

from __future__ import annotations

import subprocess
import sys

import pytest

from citeline.analyzer.testing import gold_cases, render_text
from citeline.examples.demo import gold_path
from tests.extras import needs

needs("langchain_core", "the example is a LangChain app")
from citeline.examples import langchain_app  # noqa: E402

GOLD = str(gold_path())


def test_an_answer_and_an_abstention_are_ok(citeline) -> None:  # type: ignore[no-untyped-def]
    langchain_app.answer("Which orders ship free?", case_id="free-shipping", as_of="2026-08-10")
    langchain_app.answer(
        "Is there a discount on accessories?",
        case_id="accessory-discount",
        principal={"id": "bob", "groups": ["public"]},
        as_of="2026-08-10",
    )
    citeline.assert_buckets({"free-shipping": "ok", "accessory-discount": "ok"}, citeline.analyze(gold=GOLD))


@pytest.mark.citeline(gold=GOLD, fail_on=["failing>0", "unmatched>0"])
def test_every_gold_case_passes_the_gate() -> None:
    for case in gold_cases(GOLD):
        langchain_app.answer_case(case)


@pytest.mark.slow
def test_every_stage_is_seen_and_the_app_findings_are_the_known_ones(citeline) -> None:  # type: ignore[no-untyped-def]
    result = citeline.perturb(langchain_app.answer_case, gold=GOLD)
    assert result.all_seen, render_text(result)
    findings = [(c.case_id, c.perturbation, c.reaction_note) for c in result.reactions if not c.reaction_good]
    # with its current policy gone, the model answers from the archived one: a finding about the app
    assert findings == [
        (
            "returns-window",
            "retrieval.drop_support",
            "kept the claim 'Opened electronics may be returned within 14 days of delivery.' "
            "(grounding: stated without its support)",
        ),
        (
            "returns-window",
            "context.drop_support",
            "kept the claim 'Opened electronics may be returned within 14 days of delivery.' "
            "(grounding: stated without its support)",
        ),
        (
            "shipping-cost",
            "retrieval.drop_support",
            "kept the claim 'Standard shipping takes 3 to 5 business days and costs $4.99.' "
            "(grounding: stated without its support)",
        ),
        (
            "shipping-cost",
            "context.drop_support",
            "kept the claim 'Standard shipping takes 3 to 5 business days and costs $4.99.' "
            "(grounding: stated without its support)",
        ),
    ]
    followed = result.cell("returns-window", "retrieval.supersede")
    assert followed.reaction_note == "followed the newer version: cites returns-v5#eligibility-2"


def test_citeline_never_imports_langchain_itself() -> None:
    code = (
        "import sys, citeline.instrumentation, citeline.analyzer, citeline.analyzer.testing, citeline.examples\n"
        "import citeline.examples.perturb_apps\n"
        "print(sorted(m for m in sys.modules if m.startswith('langchain')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
