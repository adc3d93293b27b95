"""The DuckDB store and the SQL files that define it."""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any

import duckdb

DEFAULT_DB = "citeline.duckdb"
SCHEMA_VERSIONS = ["1"]
BUCKETS = (
    "access_violation",
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
    return con


def run(con: duckdb.DuckDBPyConnection, name: str, params: dict[str, Any] | None = None) -> Any:
    """Execute a query file with bound parameters."""
    return con.execute(sql(name), params or {})
