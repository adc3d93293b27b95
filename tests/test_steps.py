"""The run as named steps (issue #26 item 1): every table the run makes has one declaration, and
the declaration is what the run makes.

A SQL step's header declares its table and typed columns; a Python step's table is declared once
in queries/text_tables.sql. These tests run the bucket scenarios and hold every temp table the run
leaves against its declaration, make a step drift from its header and watch the run refuse it,
and read the analyzer's own source for the seams the issue asks for (no query text assembled into
CREATE ... AS outside the runner, no column types repeated in Python, no import circle through the
run's modules).
"""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path

import duckdb
import pytest

from citeline.analyzer import steps as _steps
from citeline.analyzer.run.analyze import analyze
from citeline.analyzer.store import connect, sql
from citeline.examples.demo import SCENARIOS, gold_path
from tests.analysis_helpers import run_and_analyze
from tests.test_layering import import_graph, reaches

ANALYZER = Path(__file__).resolve().parent.parent / "analyzer"
QUERIES = [p.name[:-4] for p in resources.files("citeline.queries").iterdir() if p.name.endswith(".sql")]
#: the run's own modules: no import circle may pass through one of them
RUN_MODULES = {
    *("run.analyze", "run.joining", "run.splitting", "run.storing", "run.judging", "scaleout.partitioned"),
    *("workers", "steps", "judges._rules", "scaleout.tasks", "claims.splitter", "claims.locators"),
}


def _declared() -> dict[str, tuple[tuple[str, str], ...]]:
    """Every table a declaration names, with its columns: SQL steps' headers and text_tables.sql."""
    con = duckdb.connect()
    out: dict[str, tuple[tuple[str, str], ...]] = {}
    for name in QUERIES:
        if "-- Writes:" in sql(name) and not _steps.step(name).mode:
            s = _steps.step(name)
            assert s.table not in out or out[s.table] == s.columns, f"{s.table} declared twice, differently"
            out[s.table] = s.columns
    for table in _steps._declarations():
        _steps.declare(con, table)
        assert table not in out, f"{table} is declared both by a step header and in text_tables.sql"
        out[table] = tuple((n, t) for n, t, *_ in con.execute(f'DESCRIBE "{table}"').fetchall())
    return out


def _norm(cols: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
    return tuple((n, re.sub(r"\s+", "", t).upper()) for n, t in cols)


def test_every_table_the_run_leaves_is_the_one_its_declaration_names(tmp_path: Path) -> None:
    """The bucket scenarios through analyze on one connection: each temp table left on it is declared
    exactly once, with these columns in this order and of these types."""
    run_and_analyze(tmp_path, SCENARIOS)  # writes the scenarios' traces
    con = connect(tmp_path / "steps.duckdb")
    try:
        analyze(tmp_path / "steps.duckdb", gold=gold_path(), traces=[tmp_path / "traces"], con=con)
        left = {
            t: tuple((n, ty) for n, ty, *_ in con.execute(f'DESCRIBE "{t}"').fetchall())
            for (t,) in con.execute("SELECT table_name FROM duckdb_tables() WHERE temporary").fetchall()
        }
    finally:
        con.close()
    declared = _declared()
    assert {"t_traces", "t_gen_claims", "t_match", "t_split_keys", "t_judged_gold", "t_gold_chunks"} <= set(left)
    # the tables a step read for the last time are gone (steps.drop): their rows were DuckDB memory
    assert not {"t_sim", "t_text_sets", "t_more_sets", "t_answer_claims", "t_new_judgments"} & set(left)
    undeclared = sorted(set(left) - set(declared))
    assert undeclared == [], f"temp tables with no declaration: {undeclared}"
    for table, cols in left.items():
        assert _norm(cols) == _norm(declared[table]), table


def test_a_step_whose_select_drifts_from_its_header_is_refused_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    text = "-- drift.sql\n-- Writes: t_drift_test\n-- Columns: a VARCHAR, b BIGINT\nSELECT 'x' AS a, 1.5 AS b\n"
    real = sql
    monkeypatch.setattr(_steps, "sql", lambda name: text if name == "drift" else real(name))
    _steps.step.cache_clear()
    con = duckdb.connect()
    try:
        with pytest.raises(_steps.StepError) as caught:
            _steps.run(con, "drift")
        assert str(caught.value) == (
            "queries/drift.sql made t_drift_test with columns a VARCHAR, b DECIMAL(2,1); "
            "its header declares a VARCHAR, b BIGINT"
        )
        # the same header over a SELECT that keeps to it
        kept = text.replace("1.5", "1::BIGINT")
        monkeypatch.setattr(_steps, "sql", lambda name: kept if name == "drift" else real(name))
        _steps.step.cache_clear()
        _steps.run(con, "drift")
        assert con.execute("SELECT * FROM t_drift_test").fetchall() == [("x", 1)]
    finally:
        _steps.step.cache_clear()
        con.close()


def test_a_rewrite_must_keep_the_columns_it_found(monkeypatch: pytest.MonkeyPatch) -> None:
    text = "-- Writes: t_kept (rewrite)\nSELECT * EXCLUDE (b) FROM t_kept\n"
    real = sql
    monkeypatch.setattr(_steps, "sql", lambda name: text if name == "rewrite" else real(name))
    _steps.step.cache_clear()
    con = duckdb.connect()
    try:
        con.execute("CREATE TEMP TABLE t_kept AS SELECT 1 AS a, 2 AS b")
        with pytest.raises(_steps.StepError, match=r"made t_kept with columns a INTEGER; its header declares a "):
            _steps.run(con, "rewrite")
    finally:
        _steps.step.cache_clear()
        con.close()


def test_a_header_without_an_output_or_its_columns_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    texts = {"none": "-- nothing declared\nSELECT 1\n", "bare": "-- Writes: t_bare\nSELECT 1 AS a\n"}
    real = sql
    monkeypatch.setattr(_steps, "sql", lambda name: texts.get(name) or real(name))
    _steps.step.cache_clear()
    try:
        with pytest.raises(_steps.StepError, match=r"^queries/none.sql declares no output"):
            _steps.step("none")
        with pytest.raises(_steps.StepError, match=r"^queries/bare.sql writes t_bare but declares no columns"):
            _steps.step("bare")
    finally:
        _steps.step.cache_clear()


def test_fill_types_python_columns_as_the_declaration_does() -> None:
    con = duckdb.connect()
    _steps.fill(con, "t_answer_claims", rows=[(0, 0, "A claim [1].", ["1"], True, []), (0, 1, "B.", [], False, [0])])
    assert con.execute("SELECT * FROM t_answer_claims ORDER BY claim_idx").fetchall() == [
        (0, 0, "A claim [1].", ["1"], True, []),
        (0, 1, "B.", [], False, [0]),
    ]
    _steps.fill(con, "t_answer_claims", rows=[])  # nothing: the declared table, empty
    assert con.execute("SELECT count(*) FROM t_answer_claims").fetchall() == [(0,)]
    types = [t for _n, t, *_ in con.execute("DESCRIBE t_answer_claims").fetchall()]
    assert types == ["BIGINT", "BIGINT", "VARCHAR", "VARCHAR[]", "BOOLEAN", "BIGINT[]"]
    with pytest.raises(_steps.StepError, match=r"t_answer_skipped: given columns \['kind', 'split'\]; declared"):
        _steps.fill(con, "t_answer_skipped", {"split": [1], "kind": ["greeting"]})
    with pytest.raises(_steps.StepError, match=r"t_nowhere is not declared in queries/text_tables\.sql"):
        _steps.fill(con, "t_nowhere", {"a": [1]})


def _source(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def test_no_python_assembles_a_query_file_into_create_as_outside_the_runner() -> None:
    """The Python that prepended CREATE ... AS / INSERT INTO to query text is gone: only steps does it."""
    offenders = []
    for f in sorted(ANALYZER.rglob("*.py")):
        if f == ANALYZER / "steps.py":
            continue
        text = _source(f)
        if re.search(r"(CREATE OR REPLACE TEMP TABLE|INSERT INTO)[^\"']*[\"']\s*\+\s*(sql|_sql_text)\(", text):
            offenders.append(f.name)
        if "_sql_text" in text or '.strip().rstrip(";")' in text:
            offenders.append(f.name)
    assert offenders == []


def test_no_python_module_of_the_run_repeats_column_types() -> None:
    """Column types live in SQL: no polars schema dict (pl.Utf8, pl.List, ...) in the run's modules."""
    run = [ANALYZER / f"{m.replace('.', '/')}.py" for m in RUN_MODULES]
    run += [ANALYZER / "sources/prompt_context.py", ANALYZER / "sources/openinference.py", ANALYZER / "store.py"]
    types = r"\bpl\.(Utf8|Int64|Int32|Boolean|List|Date|Float64)\b"
    typed = sorted(f.name for f in run if re.search(types, _source(f)))
    assert typed == []


def test_no_import_circle_passes_through_the_run() -> None:
    """run.analyze -> workers -> run.analyze (the pool's warm-up) and workers <-> judges._rules are gone: the
    run hands the split step its executor and names the modules its pool preloads (and perturb <->
    perturb_judge: the cell a perturbation leaves is the judge's own type). No circle anywhere else in the
    analyzer is tests/test_layering.py's."""
    graph = import_graph()
    assert sorted(m for m in RUN_MODULES if m not in graph) == []
    assert sorted(m for m in RUN_MODULES if reaches(graph, m, m)) == []
    assert graph["workers"] == set()  # the pool knows nothing of the analyzer


def test_gold_draft_calls_the_join_step() -> None:
    """gold draft joins traces with the run's own join step, not a replay through private names."""
    text = _source(ANALYZER / "drafting/draft.py")
    assert "joining.begin(" in text and "joining.join(" in text
    assert not re.search(r"from citeline\.analyzer\.run\.analyze import[^\n]*\b_", text)
