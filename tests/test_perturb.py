"""Metamorphic perturbations through the real decorators, a real capture and the real analyzer.

The example app (``citeline.examples.perturb_apps``) answers every gold case of
``examples/policy_gold.yaml``; the harness runs each case as is and under each
perturbation. What must hold: every stage of the example is seen and every
declared cell holds; a misplaced ``@context_assembly`` leaves the context stage
not seen, with exactly its cells; the supersede perturbation reports an app
that keeps citing the superseded chunk; an app that abstains when its support
is dropped is a good reaction.
"""

from __future__ import annotations

import html
import json
import threading
from pathlib import Path
from typing import Any

import pytest

from citeline.analyzer.cli import main as _cli
from citeline.analyzer.testing import perturb
from citeline.analyzer.testing.perturb import PerturbResult, StageVerdict
from citeline.analyzer.testing.perturb_judge import Cell
from citeline.analyzer.testing.perturb_render import MARK, render_html, render_text
from citeline.analyzer.testing.perturbations import CATALOGUE
from citeline.examples import perturb_apps
from citeline.examples.demo import gold_path
from citeline.instrumentation import _perturb
from citeline.instrumentation import schema as K
from citeline.instrumentation.testing import capture

#: the matrix of the example app: rows are gold cases, columns the catalogue in order (see MARK)
#: render.old_version applies only where the gold corpus holds an archived version of the support (returns-window,
#: shipping-cost): elsewhere a link "one version back" would be invented, so the cell is n/a
EXAMPLE_GRID = {
    "returns-window": "ok ok r ok ok ok ok ok ok ok ok",
    "shipping-cost": "ok ok r ok ok ok ok ok ok ok ok",
    "warranty-water": "ok . r ok ok ok ok . ok . .",
    "free-shipping": "ok . r ok ok ok ok ok . . .",
    "refund-speed": "ok . r ok ok ok ok ok . . .",
    "restocking-fee": "ok . r ok ok ok ok ok ok ok .",
    "warranty-claim": "ok . r ok ok ok ok . ok ok .",
    "price-match": "ok . r ok ok ok ok ok ok ok .",
    "staff-discount": ". . . . ok . . . . . .",
    "accessory-discount": ". . . . . . . . . . .",
    "refurbished-warranty": ". . . . ok . . . . . .",
}


def _grid(r: PerturbResult) -> dict[str, str]:
    return {case: " ".join(MARK[r.cell(case, p.name).status] for p in r.perturbations) for case in r.cases}


@pytest.fixture(scope="module")
def plain() -> PerturbResult:
    return perturb(perturb_apps.answer_case, gold_path())


def test_every_stage_of_the_example_app_is_seen_and_every_declared_cell_holds(plain: PerturbResult) -> None:
    assert [p.name for p in plain.perturbations] == [p.name for p in CATALOGUE]
    assert _grid(plain) == EXAMPLE_GRID
    assert {s: (v.verdict, v.tested, v.cells) for s, v in plain.stages.items()} == {
        "retrieval": ("seen", 10, []),
        "context": ("seen", 26, []),
        "generation": ("seen", 20, []),
        "resolution": ("seen", 5, []),
        "render": ("seen", 2, []),
    }
    assert plain.all_seen
    assert plain.baseline_problems() == []
    got = {c.perturbation: c.got for c in plain.cells if c.case_id == "returns-window" and c.status == "holds"}
    assert got == {
        "retrieval.drop_support": "window: retrieval_miss at retrieval (span 0000000000000008)",
        "retrieval.archived_version": "window: retrieval_miss at retrieval (span 000000000000000e)",
        "context.drop_support": "window: context_drop at context (span 000000000000001b)",
        "context.shuffle_relabel": "nothing changed",
        "context.truncate": "window: context_drop at context (span 0000000000000027)",
        "generation.remove_marker": "window: uncited at generation (span 000000000000002e)",
        "generation.change_number": "window: grounding at generation (span 0000000000000034)",
        "generation.neighbour_label": "window: attribution at generation (span 000000000000003a)",
        "resolution.wrong_chunk": "window: resolution at resolution (span 0000000000000041)",
        "render.old_version": "window: resolution at render (span 0000000000000048)",
    }
    # n/a always says why
    assert plain.cell("warranty-water", "retrieval.archived_version").note == (
        "no support chunk has an archived version in the gold"
    )
    assert plain.cell("warranty-water", "generation.change_number").note == "the gold claims state no number"
    assert plain.cell("accessory-discount", "context.shuffle_relabel").note == "the context is empty"


def test_the_supersede_perturbation_reports_an_app_that_ignores_the_newer_version(plain: PerturbResult) -> None:
    cell = plain.cell("returns-window", "retrieval.supersede")
    assert (cell.status, cell.reaction_good, cell.reaction_note) == (
        "reaction",
        False,
        "ignored the newer version: kept citing returns-v4#eligibility-2 (freshness)",
    )
    assert cell.got == "window: freshness at retrieval (span 0000000000000014)"
    dropped = plain.cell("returns-window", "retrieval.drop_support")
    assert (dropped.reaction_good, dropped.reaction_note) == (
        False,
        "kept the claim 'Yes, opened electronics may be returned within 30 days of delivery.' "
        "(grounding: stated without its support)",
    )
    assert sum(1 for c in plain.reactions if not c.reaction_good) == 24  # drops and supersede; shuffle keeps it


def test_an_app_that_abstains_without_support_and_follows_newer_versions_reacts_well() -> None:
    careful = perturb(perturb_apps.careful_case, gold_path())
    assert _grid(careful) == EXAMPLE_GRID
    assert careful.all_seen
    reactions = {(c.case_id, c.perturbation): (c.reaction_good, c.reaction_note) for c in careful.reactions}
    assert reactions[("warranty-water", "retrieval.drop_support")] == (True, "abstained")
    assert reactions[("returns-window", "context.drop_support")] == (True, "abstained")
    assert reactions[("returns-window", "retrieval.supersede")] == (
        True,
        "followed the newer version: cites returns-v5#eligibility-2",
    )
    assert reactions[("returns-window", "context.shuffle_relabel")] == (
        True,
        "the same answer under the new order and labels",
    )
    assert all(good for good, _ in reactions.values()), [k for k, v in reactions.items() if not v[0]]
    assert len(reactions) == 32  # 8 answerable cases x (2 drops, supersede, shuffle)


def test_a_misplaced_context_decorator_leaves_the_context_stage_not_seen_with_its_cells() -> None:
    misplaced = perturb(perturb_apps.misplaced_case, gold_path())
    verdicts = {s: v.verdict for s, v in misplaced.stages.items()}
    assert verdicts == {
        "retrieval": "seen",
        "context": "not seen",
        "generation": "seen",
        "resolution": "seen",
        "render": "seen",
    }
    bad = misplaced.stages["context"].cells
    assert [(c.case_id, c.perturbation) for c in bad] == [
        (case, "context.shuffle_relabel")
        for case in (
            "returns-window",
            "shipping-cost",
            "free-shipping",
            "refund-speed",
            "restocking-fee",
            "warranty-claim",
            "price-match",
        )
    ]
    assert bad[0].got == "window: ok -> invalid_citation (cites 2, which the model was not given)"
    assert not misplaced.all_seen
    text = render_text(misplaced)
    assert (
        "  context: not seen (26 cell(s) judged)\n    returns-window x context.shuffle_relabel: declared nothing "
        in text
    )


def test_the_changed_span_records_the_perturbation_and_what_it_did() -> None:
    from citeline.analyzer.gold.goldset import load_gold
    from citeline.analyzer.testing.edits import CaseContext
    from citeline.analyzer.testing.perturb import Case
    from citeline.analyzer.testing.perturbations import BY_NAME

    gold = load_gold(gold_path())
    case = gold.cases["returns-window"]
    change = BY_NAME["context.truncate"].prepare(CaseContext.of(gold, case))
    assert not isinstance(change, str)
    with capture() as cap:
        perturb_apps.answer_case(Case.of(case))  # as is: nothing recorded
        with _perturb.perturbing(change):
            perturb_apps.answer_case(Case.of(case))
    marked = [
        (s.name, (s.attributes or {}).get(K.CL_STAGE), s.context.trace_id, dict(s.attributes or {}))
        for s in cap.spans()
        if K.CL_PERTURBATION in (s.attributes or {})
    ]
    assert [(name, stage, trace) for name, stage, trace, _ in marked] == [("build_prompt", "context", 2)]
    attrs = marked[0][3]
    assert attrs.pop(K.CL_PERTURBATION) == "context.truncate"
    assert attrs.pop(K.CL_PERTURBATION_DETAIL) == ("kept the first 2 of 4 chunk(s), cut at returns-v4#eligibility-2")
    # the span records what the next stage really got: the two chunks before the support
    assert attrs[K.CL_CHUNK_ID] == ("restocking-v2#fee-1", "returns-v3#eligibility-2")


def test_the_hook_is_off_outside_the_harness_and_in_threads_it_did_not_start() -> None:
    assert _perturb.active() is None
    seen_in_thread: list[Any] = []

    class Spy:
        name, stage = "spy.noop", "generation"

        def apply(self, value: Any, view: _perturb.RequestView) -> tuple[Any, str] | None:
            thread = threading.Thread(target=lambda: seen_in_thread.append(_perturb.active()))
            thread.start()
            thread.join()
            return None

    from citeline.analyzer.testing.perturb import Case

    case = Case("returns-window", "Can opened electronics be returned after three weeks?", "2026-08-10", {}, "answer")
    with capture(), _perturb.perturbing(Spy()):
        assert _perturb.active() is not None
        perturb_apps.answer_case(case)
    assert seen_in_thread == [None]
    assert _perturb.active() is None
    source = Path(_perturb.__file__).read_text()
    assert "os.environ" not in source and "getenv" not in source  # no switch but the context manager


def test_a_broken_perturbation_is_ours_raised_under_test_and_swallowed_in_production(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from citeline.analyzer.testing.perturb import Case

    class Broken:
        name, stage = "broken.bug", "generation"

        def apply(self, value: Any, view: _perturb.RequestView) -> tuple[Any, str] | None:
            raise ZeroDivisionError("our bug")

    case = Case("returns-window", "Can opened electronics be returned after three weeks?", "2026-08-10", {}, "answer")
    with capture(), _perturb.perturbing(Broken()), pytest.raises(ZeroDivisionError):
        perturb_apps.answer_case(case)
    monkeypatch.setenv("CITELINE_STRICT", "0")
    with capture() as cap, _perturb.perturbing(Broken()):
        answer = perturb_apps.answer_case(case)
    assert answer == "Yes, opened electronics may be returned within 30 days of delivery [3]."
    assert not [s for s in cap.spans() if K.CL_PERTURBATION in (s.attributes or {})]
    assert "citeline: perturbation broken.bug failed (ZeroDivisionError: our bug)" in caplog.text


def test_the_cli_writes_the_matrix_as_json_and_exits_1_when_a_stage_is_not_seen(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "m.json"
    argv = ["perturb", "--app", "citeline.examples.perturb_apps:misplaced_case", "--gold", str(gold_path())]
    code = _cli.main([*argv, "--perturbation", "context.shuffle_relabel", "--format", "json", "--out", str(out)])
    assert code == 1
    assert capsys.readouterr().err.splitlines() == [
        f"perturbation matrix written to {out}",
        "citeline: stage(s) not seen: context; see the cells listed",
    ]
    data = json.loads(out.read_text())
    assert data["stages"] == {
        "context": {
            "verdict": "not seen",
            "tested": 10,
            "note": "",
            "unrecorded": [],
            "cells": [
                [c, "context.shuffle_relabel"]
                for c in (
                    "returns-window",
                    "shipping-cost",
                    "free-shipping",
                    "refund-speed",
                    "restocking-fee",
                    "warranty-claim",
                    "price-match",
                )
            ],
        }
    }
    assert _cli.main(["perturb", "--app", "nosuch.module:fn", "--gold", str(gold_path())]) == 2
    assert capsys.readouterr().err.startswith("citeline: --app 'nosuch.module:fn': cannot import nosuch.module:")


def test_every_untrusted_field_is_escaped_in_the_html_page() -> None:
    bad = '<script>alert("x")</script>&'
    cell = Cell(bad, CATALOGUE[0].name, "retrieval", bad, "differs", got=bad, note=bad)
    cell.reaction, cell.reaction_good, cell.reaction_note = "abstain_or_qualify", False, bad
    result = PerturbResult(
        gold=bad,
        cases=[bad],
        perturbations=[CATALOGUE[0]],
        baseline={},
        cells=[cell],
        stages={"retrieval": StageVerdict("retrieval", "not seen", [cell], 1)},
    )
    page = render_html(result)
    assert "<script>" not in page
    assert page.count(html.escape(bad)) == 11  # every place the payload is shown
    text = render_text(result)
    assert bad in text  # the text table is for a terminal: no markup there, control characters stripped


def test_a_streaming_stage_is_not_perturbed_and_the_cell_says_why() -> None:
    from citeline.examples.perturb_apps import _plain, script_for

    def streaming(case: Any) -> str:
        return _plain.ask(case.question, script_for(case.case_id), case_id=case.case_id, as_of=case.as_of, stream=True)

    r = perturb(streaming, gold_path(), cases=["returns-window"], perturbations=["generation.remove_marker"])
    (cell,) = r.cells
    assert (cell.status, cell.note) == (
        "n/a",
        "the generation step streams (a generator): perturbations change returned values only",
    )
    assert {s: v.verdict for s, v in r.stages.items()} == {"generation": "n/a"}


def test_a_prose_abstention_stays_one_when_a_structured_answer_says_the_same_words(citeline) -> None:  # type: ignore[no-untyped-def]
    from citeline.examples.perturb_apps import ABSTAIN
    from citeline.examples.policy_bot import PolicyBot

    bot = PolicyBot()
    bot.ask("Do employees get a discount on devices?", ABSTAIN, case_id="staff-discount", as_of="2026-08-10")
    structured = {"text": ABSTAIN, "claims": [], "abstained": True}
    bot.ask("Does the warranty cover water damage?", structured, case_id="warranty-water", as_of="2026-08-10")
    result = citeline.analyze(gold=gold_path())
    rows = {r["case_id"]: r["bucket"] for r in result.claims.to_dicts()}
    assert rows["staff-discount"] == "ok"
