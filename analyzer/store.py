"""The DuckDB store and the SQL files that define it."""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any

import duckdb

from citeline.analyzer import buckets as _buckets

DEFAULT_DB = "citeline.duckdb"
SCHEMA_VERSIONS = ["1"]
#: The buckets in repair order, most urgent first: the one definition is the bucket table
#: (_buckets.TABLE); the store's bucket_order and bucket_reasons tables, classify.sql, gates and
#: reports all read it.
BUCKETS = _buckets.BUCKETS
STAGES = ("retrieval", "context", "generation", "resolution", "render")
#: what a claim row is judged against: its gold case, or the corpus alone (docs/design.md "Buckets")
BASES = ("gold", "corpus")


def sql(name: str) -> str:
    """The text of ``queries/<name>.sql``."""
    return resources.files("citeline.queries").joinpath(f"{name}.sql").read_text(encoding="utf-8")


def query_path(name: str) -> Path:
    """Where ``queries/<name>.sql`` lives on disk (for the duckdb CLI and docs)."""
    return Path(str(resources.files("citeline.queries").joinpath(f"{name}.sql")))


class StoreError(Exception):
    """The store cannot be used as it is (not a citeline store, in use, a folder); nothing was changed."""


_DUCKDB_MAGIC = b"DUCK"  # bytes 8..12 of every DuckDB database file
_CITELINE_TABLES = {"meta", "spans", "runs"}  # a store made before the marker existed has these


def _check_file(path: Path) -> None:
    if path.is_dir():
        raise StoreError(f"{path} is a folder; --db takes a store file such as citeline.duckdb")
    if not path.exists() or path.stat().st_size == 0:
        return
    with open(path, "rb") as f:
        head = f.read(16)
    if head.startswith(b"SQLite format 3"):
        raise StoreError(f"{path} is a SQLite database, not a citeline store; pass --db with a new file name")
    if head[8:12] != _DUCKDB_MAGIC:
        raise StoreError(f"{path} is not a DuckDB file; pass --db with a citeline store or a new file name")


def _check_ours(con: duckdb.DuckDBPyConnection, path: Path) -> None:
    """Refuse a DuckDB file some other program owns: its tables are never altered."""
    tables = {t for (t,) in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
    if not tables:
        return  # new
    marked = "meta" in tables and con.execute("SELECT 1 FROM meta WHERE key = 'citeline_store'").fetchall()
    if not marked and not tables.issuperset(_CITELINE_TABLES):
        shown = ", ".join(sorted(tables)[:6])
        raise StoreError(
            f"{path} is a DuckDB file of another program (tables: {shown}); citeline changes nothing in it. "
            "Pass --db with a citeline store or a new file name"
        )


def connect(
    path: str | Path = DEFAULT_DB, *, memory_limit: str = "1536MB", read_only: bool = False
) -> duckdb.DuckDBPyConnection:
    """Open (or create) a store; the schema is applied idempotently (not when ``read_only``).

    Raises :class:`StoreError`, changing nothing, for a folder, a file that is not a
    DuckDB database (a SQLite file never makes DuckDB fetch an extension), a DuckDB file
    of another program, or a store another process holds.
    """
    target = Path(str(path))
    memory = str(path) == ":memory:"
    if not memory:
        _check_file(target)
    config = {"autoinstall_known_extensions": False, "autoload_known_extensions": False}
    try:
        con = duckdb.connect(str(path), read_only=read_only and not memory, config=config)  # type: ignore[arg-type]
    except duckdb.IOException as exc:
        if "lock" in str(exc).lower():
            raise StoreError(
                f"the store {path} is in use by another process (another analyze?); wait for it or pass another --db"
            ) from exc
        raise StoreError(f"cannot open the store {path}: {str(exc).splitlines()[0]}") from exc
    try:
        if not memory:
            _check_ours(con, target)
        con.execute(f"SET memory_limit = '{memory_limit}'")  # a setting, not data: nothing user-given
        con.execute("SET preserve_insertion_order = false")
        if not read_only:
            con.execute(sql("schema"))
            con.execute("INSERT OR IGNORE INTO meta VALUES ('citeline_store', '1')")
            _sync_bucket_order(con)
        if not memory:
            views(con)
    except BaseException:
        con.close()
        raise
    return con


#: the tables a partitioned run writes as Parquet under its location, one file per partition (spans and
#: result rows), per map task (file_traces) or per claim of its shared judgment set (judgments): every
#: connection reads each as the store's rows plus those files (:func:`views`)
PARQUET_TABLES = (
    "spans",
    "file_traces",
    "claim_results",
    "case_results",
    "unmatched_traces",
    "run_span_chunks",
    "run_feedback",
    "judgments",  # a partitioned run's shared judgment set (scaleout/board.py): its judgments as files
)


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def views(con: duckdb.DuckDBPyConnection, *, rowids: bool = False) -> None:
    """Read each of :data:`PARQUET_TABLES` as the store's own rows plus the Parquet files of the partitioned
    runs it holds (``run_files``): a temp view of the table's name over both, on this connection only.

    A store with no partitioned run gets no view (its tables are read as they are). Writes go to the store's
    own table, never a view: :func:`target` names it. ``rowids`` (a run's own connection: its slices are
    ranges of span row ids) gives the spans view a ``rowid`` column: the store's own, and past them
    2^40 per file plus the row's place in it.
    """
    (catalog,) = con.execute("SELECT current_database()").fetchall()[0]
    for table, rows in rows_of(con, str(catalog), rowids=rowids).items():
        if rows is None:
            con.execute(f'DROP VIEW IF EXISTS temp.main."{table}"')
        else:
            con.execute(f'CREATE OR REPLACE TEMP VIEW "{table}" AS {rows}')


def rows_of(con: duckdb.DuckDBPyConnection, catalog: str, *, rowids: bool = False) -> dict[str, str | None]:
    """Per table of :data:`PARQUET_TABLES`, the SELECT of all its rows in the store attached as ``catalog``:
    the store's own table and the Parquet files its partitioned runs registered; None when it has none."""
    cat = '"' + catalog.replace('"', '""') + '"'
    has = con.execute(
        "SELECT 1 FROM information_schema.tables WHERE table_catalog = $c AND table_schema = 'main' "
        "AND table_name = 'run_files'",
        {"c": catalog},
    ).fetchall()
    files: dict[str, list[str]] = {}
    if has:  # a read-only store from before partitioned runs wrote Parquet has no run_files
        listed = con.execute(f"SELECT tbl, path FROM {cat}.main.run_files ORDER BY run_id, tbl, path").fetchall()
        for tbl, path in listed:
            files.setdefault(str(tbl), []).append(str(path))
    out: dict[str, str | None] = {}
    for table in PARQUET_TABLES:
        paths = files.get(table, [])
        if not paths:
            out[table] = None
        elif rowids and table == "spans":
            out[table] = f'SELECT *, rowid AS rowid FROM {cat}.main."{table}"' + "".join(
                f" UNION ALL BY NAME SELECT * EXCLUDE (file_row_number), ({n + 1}::BIGINT << 40) + file_row_number "
                f"AS rowid FROM read_parquet({_quote(p)}, file_row_number = true)"
                for n, p in enumerate(paths)
            )
        else:  # paths the store recorded, as SQL strings
            out[table] = (
                f'SELECT * FROM {cat}.main."{table}" UNION ALL BY NAME SELECT * FROM '
                f"read_parquet([{', '.join(_quote(p) for p in paths)}])"
            )
    return out


def target(con: duckdb.DuckDBPyConnection, table: str) -> str:
    """The store's own ``table`` as a statement that writes to it names it: qualified by the store's catalog
    when a view of the same name (:func:`views`) stands in front of it for reading, else its plain name."""
    if table not in PARQUET_TABLES:
        return table
    shadowed = con.execute("SELECT 1 FROM duckdb_views() WHERE temporary AND view_name = $t", {"t": table}).fetchall()
    if not shadowed:
        return table
    (catalog,) = con.execute("SELECT current_database()").fetchall()[0]
    return f'"{str(catalog).replace(chr(34), chr(34) * 2)}".main."{table}"'


def _sync_bucket_order(con: duckdb.DuckDBPyConnection) -> None:
    """Make the store's bucket_order and bucket_reasons tables say what the bucket table says (an older store
    lacks new buckets, flags, colours or reasons)."""
    stored = con.execute("SELECT bucket, position, flag, color FROM bucket_order ORDER BY position").fetchall()
    if [tuple(r) for r in stored] != _buckets.order_rows():
        con.execute("DELETE FROM bucket_order")
        con.executemany("INSERT INTO bucket_order VALUES (?, ?, ?, ?)", _buckets.order_rows())
    reasons = con.execute("SELECT bucket, variant, stage, template FROM bucket_reasons ORDER BY rowid").fetchall()
    if [tuple(r) for r in reasons] != _buckets.reason_rows():
        con.execute("DELETE FROM bucket_reasons")
        con.executemany("INSERT INTO bucket_reasons VALUES (?, ?, ?, ?)", _buckets.reason_rows())


def register_frame(con: duckdb.DuckDBPyConnection, name: str, df: Any) -> None:
    """Replace temp table ``name`` with the rows of ``df``: a polars frame or an Arrow table (an empty one
    keeps its schema)."""
    con.register("_frame", df if not hasattr(df, "to_arrow") else df.to_arrow())
    con.execute(f'CREATE OR REPLACE TEMP TABLE "{name}" AS SELECT * FROM _frame')
    con.unregister("_frame")


def run(con: duckdb.DuckDBPyConnection, name: str, params: dict[str, Any] | None = None) -> Any:
    """Execute a query file with bound parameters."""
    return con.execute(sql(name), params or {})
