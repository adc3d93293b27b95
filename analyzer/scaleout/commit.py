"""What a partitioned run's driver writes into the store (analyzer/scaleout/partitioned.py commits with them):
a map task's ``ingested_files`` rows and ingest report, and the partitions' small rows under the run's id."""

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


#: how each table of the partitions' small rows (work.SENT_TABLES) is stored under the run's id, from all of
#: them at once: the gold-derived rows every partition gives again once each, the skipped text one row per
#: kind (as a run of one slice has)
_SENT_ROWS = {
    "run_support": "SELECT DISTINCT * FROM _rows",
    "run_chunks": "SELECT DISTINCT * FROM _rows",
    "run_skipped_text": "SELECT kind, sum(units)::BIGINT AS units FROM _rows GROUP BY kind",
}


def store_rows(con: duckdb.DuckDBPyConnection, run_id: str, sent: dict[str, list[bytes]]) -> None:
    """The partitions' small rows (work.SENT_TABLES, each partition's as Parquet bytes) under the run's id: one
    insert per table for all the partitions (its judgments are files of the run's shared judgment set,
    registered at the commit)."""
    import pyarrow as pa  # type: ignore[import-untyped]

    for table, parts in sent.items():  # names from work.SENT_TABLES, never user input
        con.register("_rows", pa.concat_tables([work.arrow(p) for p in parts], promote_options="default"))
        try:
            con.execute(f"INSERT INTO {table} BY NAME SELECT $r AS run_id, * FROM ({_SENT_ROWS[table]})", {"r": run_id})
        finally:
            con.unregister("_rows")
