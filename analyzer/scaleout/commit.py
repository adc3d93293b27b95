"""What a partitioned run's driver writes into the store (analyzer/scaleout/partitioned.py commits with them):
a map task's ``ingested_files`` rows and ingest report, a partition's small rows under the run's id, the run's
skipped-text kinds merged into one row each."""

from __future__ import annotations

from typing import Any

import duckdb

from citeline.analyzer.scaleout import tasks as work
from citeline.analyzer.sources.ingest import IngestReport


def literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def literal_list(texts: list[str]) -> str:
    return "[" + ", ".join(literal(t) for t in texts) + "]"


def store_ingest(con: duckdb.DuckDBPyConnection, meta: dict[str, Any], report: IngestReport) -> None:
    """One map task's ingested_files into the store (a row per file; its file_traces it wrote itself), and its
    report into the run's."""
    held = {(str(p), int(n)) for p, n in con.execute("SELECT path, size FROM ingested_files").fetchall()}
    fresh = [row for row in meta["ingested"] if (str(row[0]), int(row[1])) not in held]  # read again: recorded once
    if fresh:
        con.executemany("INSERT INTO ingested_files VALUES (?, ?, ?, ?, ?, ?)", fresh)
    got: IngestReport = meta["report"]
    report.files += got.files
    report.bytes += got.bytes
    report.problems.extend(got.problems)
    dropped = set(meta["files"]) - set(got.paths)  # files ingest skipped whole (not a trace file, broken gzip)
    report.paths = [p for p in report.paths if p not in dropped]


def store_rows(con: duckdb.DuckDBPyConnection, run_id: str, sent: dict[str, list[bytes]]) -> None:
    """The partitions' small rows (work.SENT_TABLES, each partition's as Parquet bytes) under the run's id: one
    insert per table for all the partitions, not one per partition (its judgments are files of the run's
    shared judgment set, registered at the commit)."""
    import pyarrow as pa  # type: ignore[import-untyped]

    for table, parts in sent.items():  # names from work.SENT_TABLES, never user input
        con.register("_rows", pa.concat_tables([work.arrow(p) for p in parts], promote_options="default"))
        if table in ("run_support", "run_chunks"):  # gold rows every partition gives again: once each
            _store_once(con, table, run_id)
        else:
            con.execute(f"INSERT INTO {table} BY NAME SELECT $r AS run_id, * FROM _rows", {"r": run_id})
        con.unregister("_rows")


def _store_once(con: duckdb.DuckDBPyConnection, table: str, run_id: str) -> None:
    """Rows of ``_rows`` the run does not hold yet, each once (every partition gives the gold-derived rows again)."""
    con.execute(
        f"INSERT INTO {table} BY NAME SELECT $r AS run_id, * FROM "
        f"(SELECT DISTINCT * FROM _rows EXCEPT SELECT * EXCLUDE (run_id) FROM {table} WHERE run_id = $r)",
        {"r": run_id},
    )


def merge_skipped_text(con: duckdb.DuckDBPyConnection, run_id: str) -> None:
    """Text that is no claim: one row per kind, as a run of one slice has (the partitions gave one each)."""
    con.execute(
        "CREATE OR REPLACE TEMP TABLE t_skipped AS SELECT kind, sum(units)::BIGINT AS units FROM run_skipped_text "
        "WHERE run_id = $r GROUP BY kind",
        {"r": run_id},
    )
    con.execute("DELETE FROM run_skipped_text WHERE run_id = $r", {"r": run_id})
    con.execute("INSERT INTO run_skipped_text BY NAME SELECT $r AS run_id, * FROM t_skipped", {"r": run_id})
