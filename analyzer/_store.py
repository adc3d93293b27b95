"""The DuckDB store and the SQL files that define it."""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any

import duckdb

DEFAULT_DB = "citeline.duckdb"
SCHEMA_VERSIONS = ["1"]
#: The buckets in repair order, most urgent first: the one definition. The store's
#: bucket_order table, classify.sql (as a parameter), gates and reports all read it.
BUCKETS = (
    "access_violation",
    "not_evaluable",
    "invalid_citation",
    "freshness",
    "retrieval_miss",
    "context_drop",
    "grounding",
    "uncited",
    "attribution",
    "resolution",
    "ok",
)
STAGES = ("retrieval", "context", "generation", "resolution", "render")


def sql(name: str) -> str:
    """The text of ``queries/<name>.sql``."""
    return resources.files("citeline.queries").joinpath(f"{name}.sql").read_text(encoding="utf-8")


def query_path(name: str) -> Path:
    """Where ``queries/<name>.sql`` lives on disk (for the duckdb CLI and docs)."""
    return Path(str(resources.files("citeline.queries").joinpath(f"{name}.sql")))


def connect(path: str | Path = DEFAULT_DB, *, memory_limit: str = "1536MB") -> duckdb.DuckDBPyConnection:
    """Open (or create) a store; the schema is applied idempotently."""
    con = duckdb.connect(str(path))
    con.execute(f"SET memory_limit = '{memory_limit}'")  # a setting, not data: nothing user-given
    con.execute("SET preserve_insertion_order = false")
    con.execute(sql("schema"))
    _sync_bucket_order(con)
    return con


def _sync_bucket_order(con: duckdb.DuckDBPyConnection) -> None:
    """Make the store's bucket_order table say what BUCKETS says (older stores lack new buckets)."""
    stored = con.execute("SELECT bucket FROM bucket_order ORDER BY position").fetchall()
    if [b for (b,) in stored] != list(BUCKETS):
        con.execute("DELETE FROM bucket_order")
        con.executemany("INSERT INTO bucket_order VALUES (?, ?)", [(b, i + 1) for i, b in enumerate(BUCKETS)])


def run(con: duckdb.DuckDBPyConnection, name: str, params: dict[str, Any] | None = None) -> Any:
    """Execute a query file with bound parameters."""
    return con.execute(sql(name), params or {})
