"""citeline's pytest plugin (entry point ``pytest11: citeline``): gate a RAG app in its own test suite.

- the ``citeline`` fixture captures the spans of the code under test in
  memory (whatever ``configure()`` the app did at import), per test, with
  sequential ids: citeline's decorators' and those an instrumentor
  (OpenInference, OpenTelemetry GenAI) makes on ``handle.provider`` or the
  global tracer provider, none of which reach the app's exporters;
  ``citeline.analyze(gold=...)`` runs the real analyzer on them into a
  store in memory and returns its ``AnalysisResult``;
  ``citeline.assert_ok()`` / ``assert_buckets({...})`` / ``check([...])``
  fail with every claim not as expected (bucket, stage, reason, span);
- ``@pytest.mark.citeline(gold="gold.yaml", fail_on=["grounding>0"])`` on a
  test or a module (``pytestmark``) analyzes what the test captured when it
  returns and fails it when a gate fails (default ``failing>0``);
- at the session's end a short summary of the buckets, one line per finding
  (one ACL leak is one line), and each ``citeline.perturb`` run's stage
  verdicts; ``--citeline-html DIR`` writes each analysis's HTML report and an
  index there.

Each analysis travels on the test's report, so under pytest-xdist the
controller sums what every worker found. Nothing is written outside the
test's ``tmp_path`` unless ``--citeline-html`` asks for it.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan

    from citeline.analyzer.run.result import AnalysisResult
    from citeline.analyzer.testing.captured import CapturedStore
    from citeline.analyzer.testing.perturb import PerturbResult
    from citeline.instrumentation.testing import Captured

DEFAULT_FAIL_ON = ("failing>0",)
_FIXTURE = pytest.StashKey["CitelineFixture"]()
_RECORDS = pytest.StashKey[list[dict[str, Any]]]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("citeline", "citeline: RAG citation analysis of the code under test")
    group.addoption(
        "--citeline-html",
        metavar="DIR",
        default=None,
        help="write the HTML report of each citeline analysis, and an index.html, into DIR",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "citeline(gold, fail_on=['failing>0']): analyze the spans the test captured against the gold set "
        "when it returns; fail it when a gate fails (gates as in citeline report --fail-on)",
    )
    config.pluginmanager.register(_Session(config), "citeline-session")


def _resolve_gold(node: pytest.Item, gold: str | Path) -> Path:
    """A relative gold path is looked up next to the test file, then from the rootdir."""
    path = Path(gold)
    if path.is_absolute():
        return path
    for base in (node.path.parent, node.config.rootpath):
        if (base / path).exists():
            return base / path
    return path


class CitelineFixture:
    """What the ``citeline`` fixture gives a test: the captured spans and the analyzer over them."""

    def __init__(self, item: pytest.Item, captured: Captured, folder: Path) -> None:
        from citeline.analyzer.testing.captured import CapturedStore

        self._item = item
        self._captured = captured
        self.store: CapturedStore = CapturedStore(folder)
        self.last: AnalysisResult | None = None
        self._analyses = 0

    # --- capture ---------------------------------------------------------------------------
    def spans(self) -> list[ReadableSpan]:
        """Every span the test has produced so far (citeline's and the instrumentors'), in the order they ended."""
        return self._captured.spans()

    def clear(self) -> None:
        """Forget the spans (and log records) captured so far (the next analysis sees only what comes after)."""
        self._captured.clear()

    # --- analysis ----------------------------------------------------------------------------
    def _gold(self, gold: str | Path | None) -> Path:
        if gold is None:
            marker = self._item.get_closest_marker("citeline")
            gold = (marker.kwargs.get("gold") or (marker.args[0] if marker.args else None)) if marker else None
        if gold is None:
            raise pytest.UsageError(
                "citeline.analyze() needs a gold set: citeline.analyze(gold='gold.yaml'), or mark the test "
                "@pytest.mark.citeline(gold='gold.yaml')"
            )
        return _resolve_gold(self._item, gold)

    def analyze(
        self,
        gold: str | Path | None = None,
        *,
        judge: Any = "rules",
        judge_options: Mapping[str, Any] | None = None,
        labels: str | Path | None = None,
    ) -> AnalysisResult:
        """Analyze everything captured so far against ``gold`` (the marker's gold when omitted): the same
        ``AnalysisResult`` as ``citeline.analyzer.analyze``, from a store in memory of this test's own."""
        __tracebackhide__ = True
        spans = self.spans()
        if not spans:
            raise AssertionError(
                "citeline: no span was captured in this test: did the code under test call a decorated stage "
                "inside request(...), or a framework whose instrumentor was given handle.provider or the global "
                "tracer provider? (with no SDK tracer provider set, OpenTelemetry drops an instrumentor's spans)"
            )
        result = self.store.analyze(
            spans,
            self._gold(gold),
            judge=judge,
            judge_options=judge_options,
            labels=labels,
            logs=self._captured.log_records(),
        )
        self.last = result
        self._record(result)
        return result

    def _result(self, result: AnalysisResult | None) -> AnalysisResult:
        if result is not None:
            return result
        return self.last if self.last is not None else self.analyze()

    def assert_ok(self, result: AnalysisResult | None = None) -> None:
        """Every claim is ``ok``; else fail naming each claim that is not."""
        __tracebackhide__ = True
        self.assert_buckets({}, result)

    def assert_buckets(self, expected: Mapping[str, str], result: AnalysisResult | None = None) -> None:
        """Each claim has its expected bucket: ``{"case": bucket}`` or ``{"case/claim": bucket}``, ``ok``
        for every claim not named; else fail naming each claim that does not."""
        __tracebackhide__ = True
        from citeline.analyzer.testing.expect import mismatches

        lines = mismatches(self._result(result), expected)
        if lines:
            raise AssertionError("\n".join(lines))

    def check(self, fail_on: Sequence[str] = DEFAULT_FAIL_ON, result: AnalysisResult | None = None) -> None:
        """The gates of ``citeline report --fail-on`` (``grounding>0``, ``uncited>5%``, ``coverage<95%``)
        over this test's analysis; fail with each gate that fails and the claims not ok."""
        __tracebackhide__ = True
        from citeline.analyzer.testing.expect import gate_lines

        run = self._result(result)
        assert self.store.con is not None
        lines = gate_lines(run, self.store.con, list(fail_on))
        if lines:
            raise AssertionError("\n".join(lines))

    def perturb(self, app: Callable[..., Any], gold: str | Path | None = None, **options: Any) -> PerturbResult:
        """``citeline.analyzer.testing.perturb`` over ``app`` (the marker's gold when omitted)."""
        from citeline.analyzer.testing.perturb import perturb

        folder = self.store.folder / f"perturb-{self._analyses}"
        self._analyses += 1
        result = perturb(app, self._gold(gold), workdir=folder, **options)
        self._item.stash.setdefault(_RECORDS, []).append(perturb_record(self._item.nodeid, result))
        return result

    # --- what the session summary and the HTML option get ----------------------------------
    def _record(self, result: AnalysisResult) -> None:
        self._analyses += 1
        failing = [
            {k: r[k] for k in ("case_id", "gold_claim_id", "bucket", "stage", "span_id", "reason")}
            for r in result.claims.to_dicts()
            if r["bucket"] != "ok"
        ]
        record: dict[str, Any] = {"nodeid": self._item.nodeid, "summary": dict(result.summary), "failing": failing}
        out = self._item.config.getoption("citeline_html")
        if out:
            page, anchors = self._write_html(Path(out), result)
            record["html"] = str(page)
            for f in failing:  # each finding links its own section of the page
                n = anchors.get((f["case_id"], f["gold_claim_id"], f["bucket"], f["span_id"]))
                if n is not None:
                    f["link"] = f"{page.resolve().as_uri()}#claim-{n}"
        self._item.stash.setdefault(_RECORDS, []).append(record)

    def _write_html(self, folder: Path, result: AnalysisResult) -> tuple[Path, dict[tuple[Any, ...], int]]:
        """The analysis's HTML report, and the section (``#claim-N``) of each failing claim in it."""
        from citeline.analyzer.reports.html import render_html
        from citeline.analyzer.reports.report import build_report

        assert self.store.con is not None
        folder.mkdir(parents=True, exist_ok=True)
        name = re.sub(r"[^A-Za-z0-9_.-]+", "_", self._item.nodeid).strip("_")[:150] or "test"
        path = folder / f"{name}-{self._analyses}.html"
        report = build_report(self.store.con, result.run_id)
        path.write_text(render_html(report), encoding="utf-8")
        anchors = {
            (f["case_id"], f["gold_claim_id"], f["bucket"], f["span_id"]): n for n, f in enumerate(report.failing)
        }
        return path, anchors

    def _gate(self, marker: pytest.Mark) -> None:
        from citeline.analyzer.testing.expect import gate_lines

        fail_on = list(marker.kwargs.get("fail_on", DEFAULT_FAIL_ON))
        try:
            result = self.analyze()
        except AssertionError as err:
            pytest.fail(str(err), pytrace=False)
        assert self.store.con is not None
        lines = gate_lines(result, self.store.con, fail_on)
        if lines:
            pytest.fail("\n".join(lines), pytrace=False)

    def close(self) -> None:
        self.store.close()


@pytest.fixture
def citeline(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[CitelineFixture]:
    """Capture this test's spans in memory (citeline's and the app's instrumentors') and analyze them:
    ``citeline.analyze(gold=...)``."""
    from citeline.instrumentation.testing import capture

    with capture() as captured:
        fixture = CitelineFixture(request.node, captured, tmp_path / "citeline")  # type: ignore[arg-type]
        request.node.stash[_FIXTURE] = fixture
        try:
            yield fixture
        finally:
            fixture.close()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A marked test captures even when it does not ask for the fixture."""
    for item in items:
        if item.get_closest_marker("citeline") is not None and "citeline" not in getattr(item, "fixturenames", ["x"]):
            item.fixturenames.append("citeline")  # type: ignore[attr-defined]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, object, object]:
    result = yield  # the test body; when it fails, the gate has nothing to add
    marker = item.get_closest_marker("citeline")
    fixture = item.stash.get(_FIXTURE, None)
    if marker is not None and fixture is not None:
        fixture._gate(marker)
    return result


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, Any]:
    report = yield
    records = item.stash.get(_RECORDS, None)
    if records and report.when == "call":
        report.citeline = list(records)  # plain data: pytest-xdist carries it to the controller
    return report


class _Session:
    """Collects every analysis the session's tests made (under xdist: from every worker's reports)."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.records: list[dict[str, Any]] = []

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.records.extend(getattr(report, "citeline", None) or [])

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        _summary(terminalreporter, self.config, self.records)


def perturb_record(nodeid: str, result: PerturbResult) -> dict[str, Any]:
    """What the session summary says of one perturbation run, as plain data (xdist carries it)."""
    return {
        "nodeid": nodeid,
        "perturb": {
            "cases": len(result.cases),
            "perturbations": len(result.perturbations),
            "not_perturbed": sorted(result.not_perturbed),
            "stages": [[s, v.verdict, v.tested, len(v.cells)] for s, v in result.stages.items()],
        },
    }


def _summary(terminalreporter: Any, config: pytest.Config, records: list[dict[str, Any]]) -> None:
    records = sorted(records, key=lambda r: r["nodeid"])
    if not records:
        return
    terminalreporter.write_sep("=", "citeline summary")
    analyses = [r for r in records if "summary" in r]
    for line in [*_analysis_lines(analyses), *_perturb_lines([r for r in records if "perturb" in r])]:
        terminalreporter.write_line(line)
    out = config.getoption("citeline_html")
    if not out and any(r["failing"] for r in analyses):
        terminalreporter.write_line(
            "(pytest --citeline-html DIR writes a page per analysis; each claim above then links its section)"
        )
    if out and analyses and not hasattr(config, "workerinput"):
        index = _write_index(Path(out), analyses)
        terminalreporter.write_line(f"citeline reports: {index}")


def _analysis_lines(records: list[dict[str, Any]]) -> list[str]:
    """The bucket counts of every analysis, then one line per finding: a claim not ok, or one leak (the rows
    of a case that one restricted chunk at one span made access_violation, named together)."""
    from citeline.analyzer.buckets import ACCESS_VIOLATION
    from citeline.analyzer.escaping import term as t
    from citeline.analyzer.store import BUCKETS
    from citeline.analyzer.testing.expect import summary_line

    if not records:
        return []
    counts = dict.fromkeys(BUCKETS, 0)
    for r in records:
        for bucket, n in r["summary"].items():
            counts[bucket] = counts.get(bucket, 0) + int(n)
    tests = len({r["nodeid"] for r in records})
    lines = [f"{len(records)} analysis(es) in {tests} test(s), {summary_line(counts, BUCKETS)}"]
    for r in records:
        findings: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
        for n, f in enumerate(r["failing"]):
            same = (f["case_id"], f["bucket"], f["stage"], f["span_id"], f["reason"])
            findings.setdefault(same if f["bucket"] == ACCESS_VIOLATION else (n,), []).append(f)
        for rows in findings.values():
            f = rows[0]
            where = f" at {f['stage']}" if f["stage"] else ""
            span = f", span {f['span_id']}" if f["span_id"] else ""
            case = f["case_id"] or "(corpus basis)"
            claims = " + ".join(f"{case}/{x['gold_claim_id'] or '(extra claim)'}" for x in rows)
            lines.append(f"{f['bucket']} {t(r['nodeid'])} {t(claims)}{where}{span}: {t(f['reason'])}")
            if f.get("link"):
                lines.append(f"  {t(f['link'])}")
    return lines


def _perturb_lines(records: list[dict[str, Any]]) -> list[str]:
    """Two lines per perturbation run: the test and its size, then each stage's verdict."""
    from citeline.analyzer.escaping import term as t

    lines = []
    for r in records:
        p = r["perturb"]
        skipped = f", {len(p['not_perturbed'])} not perturbed (baseline not ok)" if p["not_perturbed"] else ""
        lines.append(f"perturb {t(r['nodeid'])}: {p['cases']} case(s) x {p['perturbations']} perturbation(s){skipped}")
        stages = []
        for stage, verdict, tested, bad in p["stages"]:
            held = f"{tested - bad} of {tested} cells held" if bad else f"{tested} cell(s)"
            stages.append(f"{stage} {t(verdict)} ({held})")
        lines.append("  " + (", ".join(stages) if stages else "no stage judged"))
    return lines


def _write_index(folder: Path, records: list[dict[str, Any]]) -> Path:
    e = html.escape
    folder.mkdir(parents=True, exist_ok=True)
    rows = []
    for r in records:
        link = f'<a href="{e(Path(r["html"]).name)}">report</a>' if r.get("html") else ""
        not_ok = sum(n for b, n in r["summary"].items() if b != "ok")
        rows.append(
            f"<tr><td>{e(r['nodeid'])}</td><td>{sum(r['summary'].values())}</td><td>{not_ok}</td><td>{link}</td></tr>"
        )
    page = (
        '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>citeline: test analyses</title>'
        "</head><body><h1>citeline: test analyses</h1><table><tr><th>test</th><th>claims</th><th>not ok</th>"
        f"<th></th></tr>{''.join(rows)}</table></body></html>\n"
    )
    path = folder / "index.html"
    path.write_text(page, encoding="utf-8")
    return path
