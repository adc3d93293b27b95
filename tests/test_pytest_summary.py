"""The pytest plugin's session summary, run as a user runs it (pytester, messages asserted whole).

An ACL leak in a case that should abstain gives two claim rows with the same
bucket, span and reason (the abstention the case expected, and the claim the
app made from the restricted chunk): the summary lists that leak once, naming
both rows. A test that calls ``citeline.perturb`` shows its stage verdicts.
``citeline.check`` fails with the gate lines of ``citeline report --fail-on``.
"""

from __future__ import annotations

import dataclasses
import shutil
from collections.abc import Iterator

import pytest

from citeline.examples.demo import gold_path

pytest_plugins = ["pytester"]

APP = """
from citeline.examples.perturb_apps import answer_case
from citeline.examples.policy_bot import Faults, PolicyBot

bot = PolicyBot()
PUBLIC = {"id": "bob", "groups": ["public"]}
LEAK = "Employees receive a 25% discount on accessories [[staff-handbook#discount-1]]."


def leak():
    # the ACL filter is off: the staff handbook reaches a public user, who gets an answer from it
    bot.ask("Is there a discount on accessories?", LEAK, case_id="accessory-discount", principal=PUBLIC,
            as_of="2026-08-10", faults=Faults(skip_acl_filter=True))
"""

INI = """
[pytest]
addopts = -p no:cacheprovider -p no:phoenix -p no:langsmith_plugin
filterwarnings = error
"""


@pytest.fixture
def suite(pytester: pytest.Pytester) -> Iterator[pytest.Pytester]:
    from citeline.instrumentation import _config

    shutil.copy(gold_path(), pytester.path / "gold.yaml")
    pytester.makepyfile(app=APP)
    pytester.makeini(INI)
    saved = dataclasses.replace(_config._settings)
    yield pytester
    _config._settings = saved


def test_one_leak_is_one_summary_line_and_a_perturbation_run_shows_its_verdicts(suite: pytest.Pytester) -> None:
    suite.makepyfile(
        test_app="""
        from app import answer_case, leak

        def test_leak(citeline):
            leak()
            citeline.check(["access_violation>0", "grounding>0", "failing>=100%"], citeline.analyze(gold="gold.yaml"))

        def test_perturbed(citeline):
            result = citeline.perturb(
                answer_case,
                cases=["returns-*", "staff-discount"],
                perturbations=["generation.remove_marker", "context.drop_support", "resolution.wrong_chunk"],
                gold="gold.yaml",
            )
            assert result.all_seen
        """
    )
    result = suite.runpytest_inprocess("-q")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "E       AssertionError: citeline: run *: 2 of 3 gates failed:",
            "E         2 claims are access_violation (gate access_violation>0)",
            "E         100.0% of claims are not ok (2 of 2; gate failing>=100%)",
            "E       citeline: 2 of 2 claim(s) not ok:",
            "E         accessory-discount/(abstain): access_violation at retrieval, span 0000000000000002",
            "E           reason: restricted staff-handbook#discount-1 reached retrieval",
            "E         accessory-discount/(extra claim): access_violation at retrieval, span 0000000000000002",
            "E           reason: restricted staff-handbook#discount-1 reached retrieval",
            "E           claim: Employees receive a 25% discount on accessories.",
        ],
        consecutive=True,
    )
    result.stdout.fnmatch_lines(
        [
            "*= citeline summary =*",
            "1 analysis(es) in 1 test(s), 2 claim(s): access_violation 2",
            "access_violation test_app.py::test_leak accessory-discount/(abstain) + accessory-discount/(extra claim) "
            "at retrieval, span 0000000000000002: restricted staff-handbook#discount-1 reached retrieval",
            "perturb test_app.py::test_perturbed: 2 case(s) x 3 perturbation(s)",
            "  context seen (1 cell(s)), generation seen (1 cell(s)), resolution seen (1 cell(s))",
            "(pytest --citeline-html DIR writes a page per analysis; each claim above then links its section)",
        ],
        consecutive=True,
    )


def _row(case: str | None, claim: str | None, bucket: str, span: str, reason: str) -> dict[str, str | None]:
    return {"case_id": case, "gold_claim_id": claim, "bucket": bucket, "stage": "retrieval", "span_id": span,
            "reason": reason}  # fmt: skip


def test_only_the_rows_of_one_leak_share_a_line_and_every_row_is_named() -> None:
    from citeline.analyzer.testing.pytest_plugin import _analysis_lines

    staff = "restricted staff-handbook#discount-1 reached retrieval"
    payroll = "restricted payroll#rates-1 reached retrieval"
    failing = [
        _row("a", "(abstain)", "access_violation", "02", staff),  # one leak: the abstention and the extra claim
        _row("a", None, "access_violation", "02", staff),
        _row("a", None, "access_violation", "02", payroll),  # another restricted chunk: another leak
        _row("b", "(abstain)", "access_violation", "02", staff),  # the same chunk in another case: its own leak
        _row("c", "x", "uncited", "04", "factual claim without a citation"),  # two claims, two findings
        _row("c", "y", "uncited", "04", "factual claim without a citation"),
        _row(None, None, "access_violation", "05", staff),  # corpus basis
    ]
    record = {"nodeid": "t.py::t", "summary": {"access_violation": 5, "uncited": 2}, "failing": failing}
    assert _analysis_lines([record]) == [
        "1 analysis(es) in 1 test(s), 7 claim(s): access_violation 5, uncited 2",
        f"access_violation t.py::t a/(abstain) + a/(extra claim) at retrieval, span 02: {staff}",
        f"access_violation t.py::t a/(extra claim) at retrieval, span 02: {payroll}",
        f"access_violation t.py::t b/(abstain) at retrieval, span 02: {staff}",
        "uncited t.py::t c/x at retrieval, span 04: factual claim without a citation",
        "uncited t.py::t c/y at retrieval, span 04: factual claim without a citation",
        f"access_violation t.py::t (corpus basis)/(extra claim) at retrieval, span 05: {staff}",
    ]
