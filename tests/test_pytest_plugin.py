"""The pytest plugin, run as a user runs it: real suites through pytester, messages asserted whole.

Span ids are sequential per test (the capture's id generator), so a failure
message names the same span on every run; only run ids (a timestamp) are
matched with a wildcard.
"""

from __future__ import annotations

import dataclasses
import shutil
from collections.abc import Iterator

import pytest

from citeline.examples.demo import gold_path
from tests.extras import needs

pytest_plugins = ["pytester"]

APP = """
from citeline.examples.demo import RIGHT
from citeline.examples.policy_bot import PolicyBot
from opentelemetry.sdk.trace import TracerProvider

from citeline.instrumentation import configure

# the app configures itself at import, as apps do: the fixture must capture regardless (its own
# provider, so the in-process runs leave the process-wide OpenTelemetry provider alone)
configure(service_name="app-under-test", trace_dir="app-traces", tracer_provider=TracerProvider())
bot = PolicyBot()
Q = "Can opened electronics be returned after three weeks?"
WRONG = "Opened electronics may be returned within 60 days of delivery [[returns-v4#eligibility-2]]."
UNCITED = "Opened electronics may be returned within 30 days of delivery."


def ask(script):
    return bot.ask(Q, script, case_id="returns-window", as_of="2026-08-10")
"""

INI = """
[pytest]
addopts = -p no:cacheprovider -p no:phoenix -p no:langsmith_plugin
filterwarnings = error
"""


@pytest.fixture
def suite(pytester: pytest.Pytester) -> Iterator[pytest.Pytester]:
    """A project holding the gold set and an app that configures itself; citeline's setup restored after."""
    from citeline.instrumentation import _config

    shutil.copy(gold_path(), pytester.path / "gold.yaml")
    pytester.makepyfile(app=APP)
    pytester.makeini(INI)
    saved = dataclasses.replace(_config._settings)
    yield pytester
    if _config._settings.handle is not None and _config._settings.handle is not saved.handle:
        _config._settings.handle.shutdown()
    _config._settings = saved


def test_a_passing_suite_prints_the_bucket_summary_and_captures_nothing_into_the_app(suite: pytest.Pytester) -> None:
    suite.makepyfile(
        test_ok="""
        import pytest
        from app import RIGHT, UNCITED, ask

        def test_fixture(citeline):
            ask(RIGHT["returns-window"])
            result = citeline.analyze(gold="gold.yaml")
            assert type(result).__module__ == "citeline.analyzer.run.result"
            assert result.summary["ok"] == 1
            citeline.assert_ok()

        def test_expected_bucket(citeline):
            ask(UNCITED)
            citeline.assert_buckets({"returns-window/window": "uncited"}, citeline.analyze(gold="gold.yaml"))

        @pytest.mark.citeline(gold="gold.yaml")
        def test_marked_without_the_fixture():
            ask(RIGHT["returns-window"])
        """
    )
    result = suite.runpytest_inprocess("-q", "--citeline-html", "reports")
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(
        [
            "*= citeline summary =*",
            "3 analysis(es) in 3 test(s), 3 claim(s): uncited 1, ok 2",
            "uncited test_ok.py::test_expected_bucket returns-window/window at generation, span 0000000000000004: "
            "factual claim without a citation",
            "  file://*/reports/test_ok.py_test_expected_bucket-1.html#claim-0",
            "citeline reports: *reports/index.html",
        ],
        consecutive=True,
    )
    page = (suite.path / "reports" / "test_ok.py_test_expected_bucket-1.html").read_text()
    assert '<section class="claim-detail" id="claim-0" data-bucket="uncited">' in page
    assert not (suite.path / "app-traces").exists() or not list((suite.path / "app-traces").iterdir())
    pages = sorted(p.name for p in (suite.path / "reports").iterdir())
    assert pages == [
        "index.html",
        "test_ok.py_test_expected_bucket-1.html",
        "test_ok.py_test_fixture-1.html",
        "test_ok.py_test_marked_without_the_fixture-1.html",
    ]
    index = (suite.path / "reports" / "index.html").read_text()
    assert '<a href="test_ok.py_test_fixture-1.html">report</a>' in index


def test_a_failing_suite_names_each_claim_with_bucket_stage_reason_and_span(suite: pytest.Pytester) -> None:
    suite.makepyfile(
        test_bad="""
        from app import WRONG, ask

        def test_wrong_number(citeline):
            ask(WRONG)
            citeline.assert_ok(citeline.analyze(gold="gold.yaml"))

        def test_nothing_captured(citeline):
            citeline.analyze(gold="gold.yaml")
        """
    )
    result = suite.runpytest_inprocess("-q")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(
        [
            '>       citeline.assert_ok(citeline.analyze(gold="gold.yaml"))',
            "E       AssertionError: citeline: 1 of 1 claim(s) not as expected:",
            "E         returns-window/window: grounding at generation, span 0000000000000004",
            "E           reason: contradicted: states 60 day where the gold fact is '30 days'",
            "E           claim: Opened electronics may be returned within 60 days of delivery.",
            "",
            "test_bad.py:5: AssertionError",
        ],
        consecutive=True,
    )
    result.stdout.fnmatch_lines(
        [
            "E       AssertionError: citeline: no span was captured in this test: did the code under test call a "
            "decorated stage inside request(...), or a framework whose instrumentor was given handle.provider or "
            "the global tracer provider? (with no SDK tracer provider set, OpenTelemetry drops an instrumentor's "
            "spans)",
        ]
    )
    result.stdout.fnmatch_lines(
        [
            "*= citeline summary =*",
            "1 analysis(es) in 1 test(s), 1 claim(s): grounding 1",
            "grounding test_bad.py::test_wrong_number returns-window/window at generation, span 0000000000000004: "
            "contradicted: states 60 day where the gold fact is '30 days'",
            "(pytest --citeline-html DIR writes a page per analysis; each claim above then links its section)",
        ],
        consecutive=True,
    )


@pytest.mark.slow
def test_fail_on_gates_a_test_and_a_module(suite: pytest.Pytester) -> None:
    suite.makepyfile(
        test_gates="""
        import pytest
        from app import UNCITED, WRONG, ask

        pytestmark = pytest.mark.citeline(gold="gold.yaml", fail_on=["grounding>0"])

        def test_uncited_passes_a_grounding_gate():
            ask(UNCITED)

        def test_grounding_fails_it():
            ask(WRONG)

        @pytest.mark.citeline(gold="gold.yaml", fail_on=["uncited>0"])
        def test_the_closest_marker_wins():
            ask(UNCITED)

        @pytest.mark.citeline(gold="gold.yaml")
        def test_default_gate_is_failing_over_zero(citeline):
            ask(UNCITED)
        """
    )
    result = suite.runpytest_inprocess("-q")
    result.assert_outcomes(passed=1, failed=3)
    result.stdout.fnmatch_lines(
        [
            "*_ test_grounding_fails_it _*",
            "citeline: run *: 1 of 1 gate failed:",
            "  1 claim is grounding (gate grounding>0)",
            "citeline: 1 of 1 claim(s) not ok:",
            "  returns-window/window: grounding at generation, span 0000000000000004",
            "    reason: contradicted: states 60 day where the gold fact is '30 days'",
            "    claim: Opened electronics may be returned within 60 days of delivery.",
            "*_ test_the_closest_marker_wins _*",
            "citeline: run *: 1 of 1 gate failed:",
            "  1 claim is uncited (gate uncited>0)",
            "citeline: 1 of 1 claim(s) not ok:",
            "  returns-window/window: uncited at generation, span 0000000000000004",
            "    reason: factual claim without a citation",
            "    claim: Opened electronics may be returned within 30 days of delivery.",
            "*_ test_default_gate_is_failing_over_zero _*",
            "citeline: run *: 1 of 1 gate failed:",
            "  1 claim is not ok (gate failing>0)",
        ]
    )
    result.stdout.fnmatch_lines(["4 analysis(es) in 4 test(s), 4 claim(s): grounding 1, uncited 3"])


@pytest.mark.slow
def test_two_xdist_workers_sum_into_one_summary(suite: pytest.Pytester) -> None:
    needs("xdist", "runs the suite on two workers")
    suite.makepyfile(
        test_many="""
        import pytest
        from app import RIGHT, UNCITED, WRONG, ask

        @pytest.mark.parametrize(
            "script", [RIGHT["returns-window"], UNCITED, WRONG, RIGHT["returns-window"]], ids=["a", "b", "c", "d"]
        )
        def test_each(citeline, script):
            ask(script)
            citeline.analyze(gold="gold.yaml")
            assert {s.context.trace_id for s in citeline.spans()} == {1}  # this test's spans only
        """
    )
    result = suite.runpytest_subprocess("-n", "2", "-p", "xdist")
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(["created: 2/2 workers", "*= citeline summary =*"])
    result.stdout.fnmatch_lines(
        [
            "4 analysis(es) in 4 test(s), 4 claim(s): grounding 1, uncited 1, ok 2",
            "uncited test_many.py::test_each[[]b[]] returns-window/window at generation, span 0000000000000004: "
            "factual claim without a citation",
            "grounding test_many.py::test_each[[]c[]] returns-window/window at generation, span 0000000000000004: "
            "contradicted: states 60 day where the gold fact is '30 days'",
        ],
        consecutive=True,
    )


def test_configure_inside_a_captured_test_is_an_error_that_says_what_to_do(suite: pytest.Pytester) -> None:
    suite.makepyfile(
        test_conf="""
        from opentelemetry.sdk.trace import TracerProvider
        from citeline.instrumentation import configure

        def test_reconfigures(citeline, tmp_path):
            configure(trace_dir=tmp_path / "t", tracer_provider=TracerProvider()).shutdown()
        """
    )
    result = suite.runpytest_inprocess("-q")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        [
            "E * citeline.instrumentation._capture.CaptureError: configure() was called while citeline captured "
            "the test's spans, so the spans after it went to the app's exporters: configure the app at import "
            "(or in a session fixture), not inside the test"
        ]
    )


def test_terminal_lines_carry_no_escape_sequences() -> None:
    from citeline.analyzer.escaping import term as for_terminal
    from citeline.analyzer.testing.expect import describe

    payload = "\x1b[2J\x1b]8;;http://evil\x07x\x1b]8;;\x07\r\nfake line\u202e\x9b31m"
    row = {
        "case_id": payload,
        "gold_claim_id": payload,
        "bucket": "grounding",
        "stage": "generation",
        "span_id": "0000000000000004",
        "reason": payload,
        "claim_text": payload,
    }
    lines = describe(row)
    assert for_terminal(payload) == "x fake line"
    assert lines == [
        "  x fake line/x fake line: grounding at generation, span 0000000000000004",
        "    reason: x fake line",
        "    claim: x fake line",
    ]
