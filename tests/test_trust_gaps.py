"""Issue #33's trust gaps, each a test that failed before its fix: a deeply nested first line never
dismisses a trace file, missing groups fail closed, a verdict never lands on another trace's span
(Phoenix), a gold file's decoding error names its line."""

from __future__ import annotations

from pathlib import Path

import pytest

from citeline.analyzer.run.analyze import analyze
from citeline.examples.demo import SCENARIOS, gold_path
from tests.analysis_helpers import run_and_analyze

TWINS = [s for s in SCENARIOS if s.name in ("unknown-label~fixed", "wrong-number~fixed")]


@pytest.fixture(scope="module")
def lines(tmp_path_factory: pytest.TempPathFactory) -> list[bytes]:
    tmp = tmp_path_factory.mktemp("seed")
    run_and_analyze(tmp, TWINS)
    [f] = (tmp / "traces").glob("*.jsonl")
    return f.read_bytes().split(b"\n")[:-1]


def test_a_first_line_nested_past_the_parser_never_dismisses_the_file(tmp_path: Path, lines: list[bytes]) -> None:
    # before: the first 64 KiB held only brackets, so the file was "not a trace file" whole (exit 2 for a
    # folder of one file) and its good traces were lost with it
    folder = tmp_path / "t"
    folder.mkdir()
    deep = b"[" * 100_000 + b"]" * 100_000
    (folder / "a.jsonl").write_bytes(deep + b"\n" + b"\n".join(lines) + b"\n")
    r = analyze(tmp_path / "s.duckdb", gold=gold_path(), traces=[folder])
    assert r.traces_read == len(lines)
    skipped = [p for s, p in r.problem_lines() if s]
    assert len(skipped) == 1 and skipped[0].startswith(f"{folder / 'a.jsonl'}:line 1: -: ")
    assert skipped[0].endswith("; line skipped")
