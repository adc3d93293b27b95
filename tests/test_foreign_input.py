"""Files and stores that are not citeline's: named in one line, never altered, never a traceback."""

from __future__ import annotations

import gzip
import hashlib
import json
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import duckdb
import pytest

from citeline.analyzer.cli.main import main
from citeline.analyzer.run.analyze import analyze
from citeline.examples.demo import SCENARIOS, gold_path
from tests.analysis_helpers import run_and_analyze

PICKED = ("wrong-number", "wrong-number~fixed", "reranker-drop")


@pytest.fixture(scope="module")
def traces(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, int]]:
    tmp = tmp_path_factory.mktemp("t")
    result, _ = run_and_analyze(tmp, [s for s in SCENARIOS if s.name in PICKED])
    return tmp / "traces", result.summary


def _copy(traces: Path, to: Path) -> Path:
    to.mkdir()
    for f in traces.glob("*.jsonl"):
        (to / f.name).write_bytes(f.read_bytes())
    return to


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.slow
def test_analyze_output_saved_in_the_trace_folder_is_named_once(
    tmp_path: Path, traces: tuple[Path, dict[str, int]], capsys: Any
) -> None:
    folder, summary = traces
    mine = _copy(folder, tmp_path / "t")
    db = str(tmp_path / "s.duckdb")
    assert main(["analyze", "--traces", str(mine), "--gold", str(gold_path()), "--db", db, "--format", "json"]) == 0
    (mine / "a.json").write_text(capsys.readouterr().out)  # `analyze --format json > DIR/a.json`
    result = analyze(tmp_path / "s2.duckdb", gold=gold_path(), traces=[mine])
    assert result.summary == summary
    assert result.problems() == [
        f"{mine / 'a.json'}:-: -: not a trace file: none of its first lines is an OTLP "
        "ExportTraceServiceRequest (resourceSpans) "
        "or ExportLogsServiceRequest (resourceLogs); file skipped"
    ]  # was 364 problems


def test_broken_gzip_files_are_named_and_the_rest_analyzed(tmp_path: Path, traces: tuple[Path, dict[str, int]]) -> None:
    folder, summary = traces
    mine = _copy(folder, tmp_path / "t")
    whole = gzip.compress(next(folder.glob("*.jsonl")).read_bytes())
    (mine / "truncated.jsonl.gz").write_bytes(whole[: len(whole) // 2])
    (mine / "empty.jsonl.gz").write_bytes(b"")
    (mine / "plain.jsonl.gz").write_bytes(b'{"resourceSpans": []}\n')  # named .gz, not gzip
    result = analyze(tmp_path / "s.duckdb", gold=gold_path(), traces=[mine])
    assert result.summary == summary  # was a traceback and nothing analyzed
    problems = sorted(result.problems())
    assert len(problems) == 3
    assert problems[0] == f"{mine / 'empty.jsonl.gz'}:-: -: an empty .gz file (zero bytes), not gzip data; file skipped"
    assert problems[1].startswith(f"{mine / 'plain.jsonl.gz'}:-: -: not a readable gzip file (BadGzipFile: ")
    assert problems[2].startswith(f"{mine / 'truncated.jsonl.gz'}:-: -: not a readable gzip file (EOFError: ")


def test_a_duckdb_file_of_another_program_is_never_altered(tmp_path: Path, capsys: Any) -> None:
    theirs = tmp_path / "warehouse.duckdb"
    con = duckdb.connect(str(theirs))
    con.execute("CREATE TABLE spans (id INTEGER, name VARCHAR)")
    con.execute("CREATE TABLE orders (id INTEGER)")
    con.execute("INSERT INTO spans VALUES (1, 'theirs')")
    con.close()
    before = _digest(theirs)
    assert main(["analyze", "--gold", str(gold_path()), "--db", str(theirs)]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"citeline: {theirs} is a DuckDB file of another program (tables: orders, spans); citeline changes "
        "nothing in it. Pass --db with a citeline store or a new file name"
    ]
    assert main(["report", "--db", str(theirs)]) == 2
    capsys.readouterr()
    assert _digest(theirs) == before
    con = duckdb.connect(str(theirs))
    try:
        assert con.execute("SELECT table_name FROM information_schema.tables ORDER BY 1").fetchall() == [
            ("orders",),
            ("spans",),
        ]
        assert con.execute("SELECT * FROM spans").fetchall() == [(1, "theirs")]
    finally:
        con.close()


def test_a_sqlite_file_is_refused_before_duckdb_touches_it(tmp_path: Path, capsys: Any) -> None:
    path = tmp_path / "app.db"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE t (x)")
    con.commit()
    con.close()
    before = _digest(path)
    assert main(["analyze", "--gold", str(gold_path()), "--db", str(path)]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"citeline: {path} is a SQLite database, not a citeline store; pass --db with a new file name"
    ]
    assert _digest(path) == before


def test_report_reads_a_read_only_store(tmp_path: Path, traces: tuple[Path, dict[str, int]], capsys: Any) -> None:
    folder, _ = traces
    db = tmp_path / "s.duckdb"
    analyze(db, gold=gold_path(), traces=[folder])
    db.chmod(0o444)
    before = _digest(db)
    try:
        assert main(["report", "--db", str(db), "--format", "json"]) == 0
        assert json.loads(capsys.readouterr().out)["coverage"]["joined"] == len(PICKED)
    finally:
        db.chmod(0o644)
    assert _digest(db) == before


@pytest.mark.slow
def test_a_store_in_use_and_paths_of_the_wrong_kind_give_one_line(
    tmp_path: Path, traces: tuple[Path, dict[str, int]], capsys: Any
) -> None:
    folder, _ = traces
    db = tmp_path / "s.duckdb"
    analyze(db, gold=gold_path(), traces=[folder])
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"import duckdb, time; c = duckdb.connect({str(db)!r}); print('held', flush=True); time.sleep(60)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        assert main(["analyze", "--gold", str(gold_path()), "--db", str(db)]) == 2
        assert capsys.readouterr().err.splitlines() == [
            f"citeline: the store {db} is in use by another process (another analyze?); wait for it or pass "
            "another --db"
        ]
    finally:
        holder.kill()
        holder.wait()
        assert holder.stdout is not None
        holder.stdout.close()
    time.sleep(0.2)
    gold, nope, html = str(gold_path()), tmp_path / "nope.csv", tmp_path / "no" / "r.html"
    cases = [
        (
            ["analyze", "--gold", gold, "--db", str(tmp_path)],
            f"{tmp_path} is a folder; --db takes a store file such as citeline.duckdb",
        ),
        (
            ["analyze", "--gold", gold, "--db", str(db), "--labels", str(nope)],
            f"--labels {nope}: missing; give a CSV or JSONL file of human labels",
        ),
        (
            ["report", "--db", str(db), "--out", str(tmp_path)],
            f"--out {tmp_path} is a folder; give a file name such as report.html",
        ),
        (["report", "--db", str(db), "--out", str(html)], f"--out {html}: the folder {html.parent} does not exist"),
    ]
    for argv, message in cases:
        assert main(argv) == 2, argv
        assert capsys.readouterr().err.splitlines() == [f"citeline: {message}"]


def test_report_on_a_store_from_before_coverage(
    tmp_path: Path, traces: tuple[Path, dict[str, int]], capsys: Any
) -> None:
    folder, _ = traces
    db = tmp_path / "s.duckdb"
    analyze(db, gold=gold_path(), traces=[folder])
    con = duckdb.connect(str(db))  # as an older citeline left it
    con.execute("DROP TABLE unmatched_traces")
    con.execute("DROP TABLE missing_cases")
    con.execute("UPDATE runs SET traces_read = NULL")
    con.close()
    assert main(["report", "--db", str(db), "--format", "markdown"]) == 0
    assert "coverage: not recorded for this run (stored by an older citeline)." in capsys.readouterr().out
