"""The command line by family: help with an example for every command, one exit-code rule for all of
them (docs/design.md "Exit codes"), and errors said in one line from one place."""

from __future__ import annotations

import ast
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from citeline.analyzer.cli import main as cli
from citeline.analyzer.cli import reports
from citeline.analyzer.cli.errors import DONE, FAILED, UNUSABLE, UNUSABLE_INPUT, CliError
from citeline.analyzer.cli.main import build_parser, main
from citeline.examples.demo import SCENARIOS, gold_path
from tests.analysis_helpers import run_and_analyze

CLI = Path(cli.__file__).parent

COMMANDS = [
    "demo",
    "analyze",
    "rejudge",
    "report",
    "pull",
    "annotate",
    "export",
    "validate",
    "gold",
    "gold import",
    "gold draft",
    "sample",
    "calibrate",
    "perturb",
]


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_answers_help_with_an_example(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main([*command.split(), "--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert f"example: citeline {command}" in out
    assert out.startswith(f"usage: citeline {command} ")


def test_the_help_lists_every_command_and_no_other() -> None:
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    assert sorted(sub.choices) == sorted(c for c in COMMANDS if " " not in c)  # type: ignore[arg-type]


# --- the exit-code rule, per family -------------------------------------------------------------


@pytest.fixture(scope="module")
def places(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """What the cases below name: a store holding one analyzed run, paths that do not exist, a Phoenix
    address nothing listens on, a gold file with a problem, a folder of traces without a request span."""
    tmp = tmp_path_factory.mktemp("families")
    picked = [s for s in SCENARIOS if s.name in ("wrong-number", "wrong-number~fixed")]
    run_and_analyze(tmp / "gen", picked)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{s.getsockname()[1]}"
    problem = tmp / "problem.yaml"
    problem.write_text(
        "corpus:\n  - {chunk_id: a, doc_id: d, text: Shipping is free.}\n"
        "cases:\n  - case_id: c\n    question: Is shipping free?\n    claims:\n"
        "      - {claim_id: x, text: Shipping is free., support: [[nope]]}\n",
        encoding="utf-8",
    )
    (tmp / "unreadable.yaml").write_text("corpus: [\n", encoding="utf-8")
    return {
        "store": str(tmp / "gen" / "store.duckdb"),
        "missing": str(tmp / "nothing-here"),
        "closed": closed,
        "gold": str(gold_path()),
        "problem": str(problem),
        "unreadable": str(tmp / "unreadable.yaml"),
        "out": str(tmp / "out.csv"),
        "no_request": str(_traces_without_a_request_span(tmp / "orphan")),
    }


def _traces_without_a_request_span(where: Path) -> Path:
    from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags, set_span_in_context

    from tests.conftest import make_tracing

    t = make_tracing(where)
    remote = SpanContext(0x5EED, 0xF00D, is_remote=True, trace_flags=TraceFlags(TraceFlags.SAMPLED))
    t.handle.provider.get_tracer("x").start_span("orphan", context=set_span_in_context(NonRecordingSpan(remote))).end()
    t.handle.shutdown()
    return t.trace_dir


RULE = [
    # run: analyze, rejudge; demo
    ("analyze --db {missing}", UNUSABLE, "analyze needs a gold set (--gold FILE), a corpus"),
    ("analyze --gold {missing} --db {store}", UNUSABLE, "does not exist; pass --gold FILE"),
    ("analyze --gold {gold} --db {store} --judge-option x", UNUSABLE, "--judge-option 'x': write KEY=VALUE"),
    ("analyze --gold {gold} --db {store} --judge nope", UNUSABLE, "--judge nope: no judge named 'nope'"),
    ("analyze --traces {missing} --gold {gold} --db {out}.1.duckdb", UNUSABLE, "no such file or folder"),
    ("analyze --gold {gold} --db {out}.empty.duckdb", FAILED, "none of the 0 trace(s) in the store"),
    ("analyze --traces {no_request} --corpus {gold} --db {missing}.2.duckdb", FAILED, "nothing was classified"),
    ("rejudge --db {missing}", UNUSABLE, "no store at"),
    ("rejudge --db {store} --run nosuch", UNUSABLE, "nosuch"),
    ("demo --fix nosuch --traces {out}.traces --db {out}.3.duckdb", UNUSABLE, "no broken scenario 'nosuch'"),
    # a wrong Phoenix stops the demo before the app runs
    ("demo --phoenix {closed} --traces {out}.6.traces --db {out}.6.duckdb", UNUSABLE, "cannot reach Phoenix at"),
    # reports
    ("report --db {missing}", UNUSABLE, "no store at"),
    ("report --db {store} --run nosuch", UNUSABLE, "nosuch"),
    ("report --db {store} --fail-on nonsense>1", UNUSABLE, "nonsense"),
    ("report --db {store} --fail-on failing>0", FAILED, "1 of 1 gate failed:"),
    ("report --db {store} --out {missing}/r.html", UNUSABLE, "does not exist"),
    # phoenix: a Phoenix that cannot be used is input that cannot be used
    ("pull --phoenix {closed} --project p --db {missing}.4.duckdb", UNUSABLE, "cannot reach Phoenix at"),
    ("pull --phoenix {closed} --project p --since yesterday --db {missing}.5.duckdb", UNUSABLE, "--since"),
    ("annotate --phoenix {closed} --db {missing}", UNUSABLE, "no store at"),
    ("annotate --phoenix {closed} --db {store}", UNUSABLE, "cannot reach Phoenix at"),
    ("annotate --phoenix {closed} --db {store} --run nosuch", UNUSABLE, "nosuch"),
    # gold
    ("validate {unreadable}", UNUSABLE, None),
    ("validate {problem}", FAILED, None),
    ("gold draft", UNUSABLE, "gold draft needs --traces DIR"),
    ("gold draft --traces {missing}", UNUSABLE, "no such file or folder"),
    ("gold --db {missing} draft --from-feedback", UNUSABLE, "no store at"),
    ("gold import --phoenix {closed} --phoenix-dataset d", UNUSABLE, "cannot reach Phoenix at"),
    # labels
    ("sample --db {missing} --out {out}", UNUSABLE, "no store at"),
    ("sample --db {store} --n 0 --out {out}", UNUSABLE, "--n must be a positive number"),
    ("calibrate {missing}", UNUSABLE, "not found; give a CSV or JSONL file"),
    ("calibrate --against-gold --db {missing}", UNUSABLE, "no store at"),
    ("calibrate --against-gold --db {store}", FAILED, None),
    # perturb (a stage not seen -> 1: tests/test_perturb.py)
    ("perturb --app x:y --gold {missing}", UNUSABLE, "does not exist; pass --gold FILE"),
    ("perturb --app nosuch.module:fn --gold {gold}", UNUSABLE, "cannot import nosuch.module"),
]


@pytest.mark.parametrize(("argv", "code", "says"), RULE, ids=[a for a, _, _ in RULE])
def test_every_family_exits_by_the_one_rule(
    argv: str, code: int, says: str | None, places: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv.format(**places).split()) == code
    err = capsys.readouterr().err
    assert "Traceback" not in err
    if says is not None:
        errors = [line for line in err.splitlines() if line.startswith("citeline: ") and says in line]
        assert len(errors) == 1, err


@pytest.mark.parametrize(
    "error", [*(kind("the input cannot be used") for kind in UNUSABLE_INPUT), CliError("a gate failed", FAILED)]
)
def test_errors_are_caught_in_one_place_and_said_in_one_line(
    error: Exception, places: dict[str, str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def fails(args: object) -> int:
        raise error

    monkeypatch.setattr(reports, "report_command", fails)
    code = FAILED if isinstance(error, CliError) else UNUSABLE
    assert main(["report", "--db", places["store"]]) == code
    assert capsys.readouterr().err == f"citeline: {error}\n"


def test_a_terminal_escape_in_an_error_is_removed(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["report", "--db", "evil\x1b]0;owned\x07.duckdb"]) == UNUSABLE
    err = capsys.readouterr().err
    assert "\x1b" not in err and "\x07" not in err
    assert err.startswith("citeline: no store at evil")


def test_the_rule_is_the_documented_one() -> None:
    design = (CLI.parents[1] / "docs" / "design.md").read_text(encoding="utf-8")
    section = design.split("### Exit codes", 1)[1].split("\n## ", 1)[0]
    for code in (DONE, FAILED, UNUSABLE):
        assert f"\n| {code} |" in section
    for kind in UNUSABLE_INPUT:
        assert f"`{kind.__name__}`" in section, kind


# --- the shape of the cli package ---------------------------------------------------------------


def test_no_cli_module_is_long_and_no_function_is_big() -> None:
    for f in CLI.glob("*.py"):
        assert len(f.read_text(encoding="utf-8").splitlines()) <= 400, f.name
    limits = [
        "lint.pylint.max-statements = 50",
        "lint.pylint.max-branches = 12",
        "lint.pylint.max-args = 8",
    ]
    cmd = [sys.executable, "-m", "ruff", "check", "--isolated", "--select", "PLR0912,PLR0913,PLR0915"]
    for limit in limits:
        cmd += ["--config", limit]
    done = subprocess.run([*cmd, str(CLI)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


def test_imports_inside_functions_say_why() -> None:
    """At module top unless one avoids a slow or optional import, which its line says."""
    unexplained = []
    for f in CLI.glob("*.py"):
        lines = f.read_text(encoding="utf-8").splitlines()
        for fn in ast.walk(ast.parse("\n".join(lines))):
            if not isinstance(fn, ast.FunctionDef):
                continue
            for node in ast.walk(fn):
                if isinstance(node, ast.Import | ast.ImportFrom) and "# lazy:" not in lines[node.lineno - 1]:
                    unexplained.append(f"{f.name}:{node.lineno}")
    assert unexplained == []
