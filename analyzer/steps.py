"""The run's steps as declared tables: one runner for every SQL step, one filler for every Python one.

A SQL step is a file ``queries/<name>.sql`` holding one SELECT; its header says what it writes::

    -- Writes: t_gen_claims
    -- Columns: trace_id VARCHAR, claim_idx BIGINT, text VARCHAR, labels VARCHAR[],
    --   ...

:func:`run` materialises the SELECT as that temp table and checks the table it got against the
declared columns, names, order and types (a step whose SELECT drifted from its header fails
loudly, in the run that met it and in the test that runs every step: tests/test_steps.py). A
step that adds rows to the store says ``-- Writes: claim_results (append)``; its columns are the
store's own (``schema.sql``) and the SELECT names them (``INSERT ... BY NAME``).

A table that Python fills (text work: splitting, judging, reading prompts) is declared once, as DDL,
in ``queries/text_tables.sql``. :func:`fill` creates it from there and hands DuckDB the Python
columns typed as the declaration types them: no second list of column types in Python.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

import duckdb

from citeline.analyzer import store as _store
from citeline.analyzer.store import sql


class StepError(Exception):
    """A step's output is not what its header declares (a bug in citeline, not in the input)."""


@dataclass(frozen=True)
class Step:
    name: str  # the query file
    table: str  # what it writes
    mode: str  # "": a temp table made anew; "append": rows added to a store table; "rewrite": the temp
    # table made anew from itself, its columns unchanged; "update": the body is an UPDATE of a store table
    columns: tuple[tuple[str, str], ...]  # (name, DuckDB type) as declared; empty for an append
    body: str  # the SELECT


_WRITES = re.compile(r"^--\s*Writes:\s*(\w+)\s*(?:\((append|rewrite|update)\))?\s*$")
_COLUMNS = re.compile(r"^--\s*Columns:\s*(.*)$")
_MORE = re.compile(r"^--\s{2,}(.*)$")


def _split_top(text: str) -> list[str]:
    """Comma-separated items, not cutting inside parentheses (``STRUCT(a VARCHAR, b BIGINT)``)."""
    out: list[str] = []
    cur: list[str] = []
    depth = 0
    for ch in text:
        depth += (ch == "(") - (ch == ")")
        if ch == "," and depth == 0:
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    if "".join(cur).strip():
        out.append("".join(cur).strip())
    return out


@cache
def step(name: str) -> Step:
    """The step in ``queries/<name>.sql``, its header read."""
    text = sql(name)
    lines = text.splitlines()
    table, mode, cols = "", "", ""
    for i, line in enumerate(lines):
        if m := _WRITES.match(line):
            table, mode = m.group(1), m.group(2) or ""
        elif m := _COLUMNS.match(line):
            cols = m.group(1)
            for more in lines[i + 1 :]:
                if not (c := _MORE.match(more)):
                    break
                cols += " " + c.group(1)
    if not table:
        raise StepError(f"queries/{name}.sql declares no output (a '-- Writes: TABLE' line in its header)")
    columns = tuple((c.split(None, 1)[0], c.split(None, 1)[1]) for c in _split_top(cols))
    if not mode and not columns:
        raise StepError(f"queries/{name}.sql writes {table} but declares no columns ('-- Columns: ...')")
    return Step(name, table, mode, columns, text.strip().rstrip(";"))


def _norm(duck_type: str) -> str:
    return re.sub(r"\s+", "", duck_type).upper()


def run(con: duckdb.DuckDBPyConnection, name: str, params: Mapping[str, Any] | None = None) -> None:
    """Run the SQL step ``name``: replace its temp table with the SELECT's rows (checked against the
    declared columns, or for a rewrite against the columns the table had), add them to the store table
    it appends to, or run its UPDATE."""
    s = step(name)
    args = dict(params or {})
    if s.mode == "append":
        con.execute(f"INSERT INTO {_store.target(con, s.table)} BY NAME {s.body}", args)
        return
    if s.mode == "update":  # its body begins UPDATE <table>: the store's own table, never a view over it
        con.execute(re.sub(rf"\bUPDATE\s+{s.table}\b", f"UPDATE {_store.target(con, s.table)}", s.body, count=1), args)
        return
    want = s.columns if s.mode != "rewrite" else _columns(con, s.table)
    con.execute(f'CREATE OR REPLACE TEMP TABLE "{s.table}" AS {s.body}', args)
    got = _columns(con, s.table)
    if tuple((n, _norm(t)) for n, t in got) != tuple((n, _norm(t)) for n, t in want):
        raise StepError(
            f"queries/{name}.sql made {s.table} with columns {', '.join(f'{n} {t}' for n, t in got)}; "
            f"its header declares {', '.join(f'{n} {t}' for n, t in want)}"
        )


def _columns(con: duckdb.DuckDBPyConnection, table: str) -> tuple[tuple[str, str], ...]:
    return tuple((str(n), str(t)) for n, t, *_ in con.execute(f'DESCRIBE "{table}"').fetchall())


@cache
def _declarations() -> dict[str, str]:
    """Each Python-filled table's CREATE statement (queries/text_tables.sql), by table name."""
    out = {}
    text = "\n".join(x for x in sql("text_tables").splitlines() if not x.lstrip().startswith("--"))
    for statement in text.split(";"):
        if m := re.match(r"CREATE OR REPLACE TEMP TABLE (\w+)", statement.strip()):
            out[m.group(1)] = statement.strip()
    return out


def declare(con: duckdb.DuckDBPyConnection, table: str) -> None:
    """Create the Python-filled ``table`` empty, as queries/text_tables.sql declares it."""
    try:
        con.execute(_declarations()[table])
    except KeyError:
        raise StepError(f"{table} is not declared in queries/text_tables.sql") from None


_ARROW: dict[str, Any] = {}  # each declared table's Arrow schema, as DuckDB types it


def schema(con: duckdb.DuckDBPyConnection, table: str) -> Any:
    """The Arrow schema of the Python-filled ``table``, as DuckDB types its declaration (a ``pyarrow.Schema``:
    picklable, so a worker process can build the table's rows itself, :func:`frame`)."""
    found = _ARROW.get(table)
    if found is None:
        declare(con, table)
        found = _ARROW[table] = con.sql(f'SELECT * FROM "{table}" LIMIT 0').to_arrow_table().schema
    return found


def frame(of: Any, columns: Mapping[str, Sequence[Any]]) -> Any:
    """``columns`` (name -> values) as an Arrow table of the schema ``of``: each column built in one pass (a polars
    frame with list columns costs a Series per row). Pure: a worker builds its rows' table and hands back
    buffers, where a list of Python objects costs a pickle and an unpickle per object."""
    import pyarrow as pa  # type: ignore[import-untyped]

    if set(columns) != set(of.names):
        raise StepError(f"given columns {sorted(columns)}; declared {of.names}")
    return pa.table({f.name: pa.array(columns[f.name], type=f.type) for f in of})


def fill(
    con: duckdb.DuckDBPyConnection,
    table: str,
    columns: Mapping[str, Sequence[Any]] | None = None,
    *,
    rows: Sequence[Sequence[Any]] | None = None,
    records: Sequence[Mapping[str, Any]] | None = None,
    arrow: Any = None,
) -> None:
    """Replace the Python-filled ``table`` with ``columns`` (name -> values), ``rows`` (tuples in the
    declared order), ``records`` (name -> value each) or ``arrow`` (an Arrow table :func:`frame` made),
    typed as queries/text_tables.sql declares it."""
    of = schema(con, table)
    declare(con, table)
    names = of.names
    if arrow is None:
        if rows is not None:
            columns = dict(zip(names, map(list, zip(*rows, strict=True)), strict=True)) if rows else {}
        if records is not None:
            columns = {n: [r[n] for r in records] for n in names}
        if columns and set(columns) != set(names):
            raise StepError(f"{table}: given columns {sorted(columns)}; declared {names}")
        if not columns or not len(columns[names[0]]):
            return
        arrow = frame(of, columns)
    elif arrow.schema.names != names:
        raise StepError(f"{table}: given columns {arrow.schema.names}; declared {names}")
    if not arrow.num_rows:
        return
    con.register("_fill", arrow)
    try:
        con.execute(f'INSERT INTO "{table}" SELECT * FROM _fill')
    finally:
        con.unregister("_fill")


def drop(con: duckdb.DuckDBPyConnection, *tables: str) -> None:
    """Drop temp ``tables`` whose rows the run has read for the last time: they are DuckDB memory the steps
    after them can use (at 100,000 traces the classification's peak fell 1,910 -> 1,713 MiB)."""
    for table in tables:
        con.execute(f'DROP TABLE IF EXISTS temp.main."{table}"')


def empty(con: duckdb.DuckDBPyConnection, name: str) -> None:
    """The SQL step ``name``'s table with no rows (a step with nothing to read need not run)."""
    s = step(name)
    con.execute(f'CREATE OR REPLACE TEMP TABLE "{s.table}" ({", ".join(f"{n} {t}" for n, t in s.columns)})')
