"""What a partitioned run's workers do (analyzer/scaleout/partitioned.py drives them): map and reduce tasks.

Each task is a plain function of picklable arguments, run by a Dask worker: ``map_files`` ingests a
share of the trace files into a DuckDB in memory, cuts the spans into Parquet pieces by ``hash(trace_id)``
and writes them under the run's location (its own folder per attempt), handing back only their paths;
``reduce_partition`` reads one partition's pieces by path and runs ``analyze`` over them with the
run's context (the driver's ``RunOptions`` with its gold set as read, labels, cached judgments),
shipped once per worker and laid out on its disk once. Each task records its start as a Dask event,
so the driver counts attempts.
"""

from __future__ import annotations

import atexit
import hashlib
import io
import os
import shutil
import tempfile
import time
import uuid
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import duckdb

from citeline.analyzer import workers as _workers
from citeline.analyzer.judges import Judge
from citeline.analyzer.run.analyze import analyze
from citeline.analyzer.run.options import RunOptions
from citeline.analyzer.scaleout.board import Board
from citeline.analyzer.sources.byte_ranges import ingest_ranges
from citeline.analyzer.sources.ingest import ingest
from citeline.analyzer.store import connect

#: the rows a partition writes as Parquet under the run's location, one file per table (each keyed by the
#: run id); the store reads them through store.views
WRITTEN_TABLES = ("claim_results", "case_results", "unmatched_traces", "run_span_chunks", "run_feedback")
#: the rows a partition hands back to the driver: a row per kind of skipped text, and the gold set's rows every
#: partition gives again (bounded by the gold set, not by the traces)
SENT_TABLES = ("run_skipped_text", "run_chunks", "run_support")
RESULT_TABLES = WRITTEN_TABLES + SENT_TABLES
#: the run's folder of span pieces (map -> reduce): intermediate, removed once the run is committed
PIECES = "pieces"


@dataclass(frozen=True)
class Output:
    """Where a partitioned run writes its rows (a folder every worker reaches at the same path: the run's
    location, docs/scale-out.md) and what a partition adds to its spans: the spans of its traces the store
    held before the run (``earlier``: a folder of Parquet per partition, or None), and whether a map task
    failed (then each partition counts its traces that may miss a part)."""

    run_dir: str
    run_id: str
    earlier: str | None = None
    maps_lost: bool = False

    def path(self, table: str, name: str) -> str:
        return str(Path(self.run_dir) / table / f"{name}.parquet")

    def pieces(self, task: int, attempt: str) -> Path:
        """Where one attempt of map task ``task`` writes its span pieces: a folder of its own, so an attempt that
        died half-way or whose result was made again is never mixed with the attempt the driver took."""
        return Path(self.run_dir) / PIECES / f"map-{task:05d}-{attempt}"


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def write(con: duckdb.DuckDBPyConnection, select: str, path: str) -> int:
    """The rows of ``select`` as one Parquet file (zstd) at ``path``, written whole or not at all (a retried
    task writes it again); how many."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    part = f"{path}.{os.getpid()}.tmp"
    con.execute(f"COPY ({select}) TO {_quote(part)} (FORMAT parquet, COMPRESSION zstd)")
    (n,) = con.execute(f"SELECT count(*) FROM read_parquet({_quote(part)})").fetchall()[0]
    os.replace(part, path)
    return int(n)


MAP_EVENTS, REDUCE_EVENTS = "citeline-map", "citeline-partition"


#: the run's options a worker lays out itself; every other one it takes as the driver made it. The gold set
#: comes as the driver read it (its corpus merged: no worker parses YAML), the trace files as the partition's
#: spans, the judge built here from its name (or shipped built), the labels file as bytes written to disk here.
LAID_OUT = ("gold", "corpus", "traces", "judge", "labels")


@dataclass
class Context:
    """What every partition needs: sent as one task's result (:func:`context`), which each worker running
    a partition fetches once and keeps for the run (a task's result is made again if its worker is lost;
    scattered data would be lost with it)."""

    options: RunOptions  # the driver's, with the gold set as it read it and no corpus, traces or labels path
    gold_key: str  # the gold and corpus files' content hash (what the driver read)
    labels: tuple[str, bytes] | None
    judgments: bytes  # the store's cached judgments of this judge, as Parquet

    def digest(self) -> str:
        """The gold and corpus files' hash and the labels, name and bytes: what a worker keeps per run."""
        h = hashlib.sha256(b"gold\0" + self.gold_key.encode())
        if self.labels:
            h.update(b"labels\0" + self.labels[0].encode() + b"\0" + hashlib.sha256(self.labels[1]).digest())
        return h.hexdigest()


def context(ctx: Context) -> Context:
    """The run's context as a task result: each worker that runs a partition fetches it once."""
    return ctx


#: per worker process: each labels file laid out on disk once, each judge named by options built once; the
#: same labels in the next run on a long-lived cluster are found again
_FILES: dict[str, Path | None] = {}
_JUDGES: dict[str, Judge] = {}


def _scratch() -> Path:
    """A folder of this worker's own: inside its Dask local directory, which the worker removes when it
    closes; outside a worker (a task called directly, the synchronous scheduler) a temporary folder that this
    process removes as it exits (it held a run's labels file, which must not outlive the run's process)."""
    try:
        from distributed import get_worker

        return Path(tempfile.mkdtemp(prefix="citeline-partition-", dir=get_worker().local_directory))
    except (ImportError, ValueError):
        folder = Path(tempfile.mkdtemp(prefix="citeline-partition-"))
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
        return folder


def _laid_out(ctx: Context) -> RunOptions:
    """The run's options on this worker (:data:`LAID_OUT`): its labels file on this worker's disk, its judge
    built here once per name and options (an instance travels with the context)."""
    key = ctx.digest()
    if key not in _FILES:
        labels = None
        if ctx.labels is not None:
            labels = _scratch() / ctx.labels[0]
            labels.write_bytes(ctx.labels[1])
        _FILES[key] = labels
    judge = ctx.options.judge
    if isinstance(judge, str):
        named = repr((judge, sorted((ctx.options.judge_options or {}).items())))
        if named not in _JUDGES:
            _JUDGES[named] = ctx.options.build_judge()
        judge = _JUDGES[named]
    return replace(ctx.options, judge=judge, labels=_FILES[key])


def _event(topic: str, msg: dict[str, Any]) -> None:
    from distributed import get_worker

    worker = get_worker()
    worker.log_event(topic, {**msg, "worker": worker.address, "pid": os.getpid()})


def parquet(table: Any) -> bytes:
    import pyarrow.parquet as pq  # type: ignore[import-untyped]

    out = io.BytesIO()
    pq.write_table(table, out, compression="zstd")
    return out.getvalue()


def arrow(data: bytes) -> Any:
    import pyarrow.parquet as pq

    return pq.read_table(io.BytesIO(data))


def _threads(con: duckdb.DuckDBPyConnection) -> None:
    from distributed import get_worker

    worker = get_worker()
    nthreads = getattr(worker, "nthreads", None) or getattr(worker.state, "nthreads", 1)
    con.execute(f"SET threads = {max(1, int(nthreads or 1))}")  # an int, never user input


def map_files(
    run: str,
    task: int,
    files: list[str],
    ranks: list[int],
    parts: int,
    out: Output,
    ranges: list[tuple[int, int] | None] | None = None,
) -> dict[str, Any]:
    """Ingest ``files`` into a DuckDB in memory; the spans as one Parquet piece per partition and each file's
    traces, written under the run's location; back to the driver only metadata: each piece's path (by
    partition), the files' ``ingested_files`` rows, the ingest report. ``ranges``: per file, None (read whole)
    or the byte range whose lines this task reads (sources/byte_ranges.py)."""
    _event(MAP_EVENTS, {"run": run, "task": task})
    t0, c0 = time.perf_counter(), time.process_time()
    con = connect(":memory:")
    scratch = _scratch() if ranges and any(ranges) else None
    try:
        _threads(con)
        if scratch is not None and ranges is not None:
            report, range_rows = ingest_ranges(con, files, ranges, scratch)
        else:
            report, range_rows = ingest(con, files), []
        t1 = time.perf_counter()
        con.execute("CREATE TEMP TABLE t_rank (path VARCHAR, file_rank BIGINT)")
        con.executemany("INSERT INTO t_rank VALUES (?, ?)", list(zip(files, ranks, strict=True)))
        spans = con.sql(
            "SELECT (hash(s.trace_id) % $parts)::BIGINT AS part, s.*, r.file_rank FROM spans AS s "
            "LEFT JOIN t_rank AS r ON r.path = s.source_file",
            params={"parts": parts},
        ).to_arrow_table()
        pieces = _write_pieces(spans, out.pieces(task, uuid.uuid4().hex[:12]))
        meta = {
            "pieces": pieces,
            "files": files,
            "report": report,
            **_file_traces(con, out, task, [r["path"] for r in range_rows]),
            "ingested": con.execute("SELECT * FROM ingested_files").fetchall(),
            "ranges": range_rows,
            # what the bench reports: wall seconds, and the worker's CPU seconds (a shared machine's load aside)
            "seconds": {"ingest": t1 - t0, "cut": time.perf_counter() - t1, "cpu": time.process_time() - c0},
        }
    finally:
        con.close()
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
    return meta


def _write_pieces(spans: Any, folder: Path) -> dict[int, str]:
    """``spans`` (with their ``part``) as one Parquet file per partition that has any, in ``folder``: the path of
    each, by partition. The spans keep their order within a partition (a stable sort by partition)."""
    import pyarrow.compute as pc  # type: ignore[import-untyped]
    import pyarrow.parquet as pq

    folder.mkdir(parents=True, exist_ok=True)
    ordered = spans.take(pc.sort_indices(spans, sort_keys=[("part", "ascending")]))
    out: dict[int, str] = {}
    at = 0
    for count in pc.value_counts(ordered["part"]).to_pylist() if ordered.num_rows else []:
        rows = int(count["counts"])
        part = int(count["values"])
        path = str(folder / f"part-{part:05d}.parquet")
        pq.write_table(ordered.slice(at, rows).drop_columns(["part"]), path, compression="zstd")
        out[part] = path
        at += rows
    return out


def _file_traces(con: duckdb.DuckDBPyConnection, out: Output, task: int, split: list[str]) -> dict[str, Any]:
    """The task's files' traces under the run's location: the whole files' in ``map-N``, the split files'
    (their other ranges' tasks write theirs too) in ``ranges-map-N``, made distinct over the run by the driver."""
    whole = out.path("file_traces", f"map-{task:05d}")
    got: dict[str, Any] = {"file_traces": whole}
    if not split:
        got["file_traces_rows"] = write(con, "SELECT * FROM file_traces", whole)
        return got
    con.execute("CREATE OR REPLACE TEMP TABLE t_split (path VARCHAR)")
    con.executemany("INSERT INTO t_split VALUES (?)", [(p,) for p in sorted(set(split))])
    got["file_traces_rows"] = write(con, "SELECT * FROM file_traces ANTI JOIN t_split ON path = source_file", whole)
    ranged = out.path("file_traces", f"ranges-map-{task:05d}")
    got["file_traces_ranges"] = (
        ranged,
        write(con, "SELECT * FROM file_traces SEMI JOIN t_split ON path = source_file", ranged),
    )
    return got


def first_readings(con: duckdb.DuckDBPyConnection, pieces: list[str], earlier: Any = None) -> Any:
    """A partition's spans from its map pieces (Parquet files, by path), each span once (a span read in two map
    tasks, the same line in two files, keeps the first file's reading); as one Arrow table, or None.

    ``earlier`` (the spans of these traces the store held before the run, ``file_rank`` -1) come first.
    """
    if not pieces and earlier is None:
        return None
    import pyarrow as pa  # type: ignore[import-untyped]
    import pyarrow.parquet as pq

    tables = [pq.read_table(p) for p in pieces]
    if earlier is not None:
        tables = [earlier.cast(tables[0].schema) if tables else earlier, *tables]
    table = pa.concat_tables(tables)
    con.register("_pieces", table)
    try:
        (twice,) = con.execute("SELECT count(*) - count(DISTINCT (trace_id, span_id)) FROM _pieces").fetchall()[0]
        if not twice:
            return table
        return con.sql(
            "SELECT * EXCLUDE (n) FROM (SELECT *, row_number() OVER (PARTITION BY trace_id, span_id "
            "ORDER BY file_rank) AS n FROM _pieces) WHERE n = 1"
        ).to_arrow_table()
    finally:
        con.unregister("_pieces")


def _earlier(con: duckdb.DuckDBPyConnection, out: Output, part: int) -> Any:
    """The spans the store held before the run of this partition's traces (the driver laid them out), or None."""
    if out.earlier is None:
        return None
    folder = Path(out.earlier) / f"part={part}"
    if not any(folder.glob("*.parquet")):
        return None
    glob = _quote(str(folder / "*.parquet"))
    return con.sql(
        f"SELECT * EXCLUDE (part), -1::BIGINT AS file_rank FROM read_parquet({glob}, hive_partitioning = true)"
    ).to_arrow_table()


def _load(con: duckdb.DuckDBPyConnection, out: Output, part: int, pieces: list[str]) -> int:
    """The partition's spans into ``con``'s spans (each once, the store's earlier ones first) from its pieces
    (the paths the driver took from the map tasks' results); the spans this run read that the store did not
    hold written under the run's location. How many it wrote."""
    kept = first_readings(con, pieces, _earlier(con, out, part))
    if kept is None:
        return 0
    con.register("_kept", kept)
    try:
        con.execute("INSERT INTO spans BY NAME SELECT * EXCLUDE (file_rank) FROM _kept")
        return write(
            con, "SELECT * EXCLUDE (file_rank) FROM _kept WHERE file_rank >= 0", out.path("spans", f"part-{part:05d}")
        )
    finally:
        con.unregister("_kept")


def spans_only(run: str, part: int, pieces: list[str], out: Output) -> int:
    """A partition whose classification failed twice: its spans written all the same, as ingest would have
    stored them; how many."""
    con = connect(":memory:")
    try:
        return _load(con, out, part, pieces)
    finally:
        con.close()


#: traces with a span whose parent is not among their spans: where a map task failed, a part may be in its files
_ORPHANED = (
    "SELECT count(DISTINCT s.trace_id) FROM spans AS s WHERE s.parent_span_id IS NOT NULL AND s.parent_span_id <> '' "
    "AND NOT EXISTS (SELECT 1 FROM spans AS p WHERE p.trace_id = s.trace_id AND p.span_id = s.parent_span_id)"
)


def reduce_partition(run: str, part: int, pieces: list[str], ctx: Context, out: Output) -> dict[str, Any]:
    """Run ``analyze`` over one partition's spans (its pieces, by path) on this worker; its spans and rows written
    under the run's
    location (:data:`WRITTEN_TABLES`), and back to the driver only counts, tallies, the small rows
    (:data:`SENT_TABLES`); its new judgments go to the run's shared judgment set (``board.py``) as it asks them."""
    _event(REDUCE_EVENTS, {"run": run, "partition": part})
    t0, c0 = time.perf_counter(), time.process_time()
    options = _laid_out(ctx)
    con = connect(":memory:")
    try:
        _threads(con)
        con.register("_cached", arrow(ctx.judgments))
        con.execute("INSERT OR IGNORE INTO judgments BY NAME SELECT * FROM _cached")
        con.unregister("_cached")
        spans = _load(con, out, part, pieces)
        orphaned = int(con.execute(_ORPHANED).fetchall()[0][0]) if out.maps_lost else 0
        t1 = time.perf_counter()
        shared = Board(out.run_dir, part)  # the run's judgments: a pair any worker judged is not asked again
        with _workers.in_process():
            result = analyze(":memory:", options, con=con, known=shared)
        t2 = time.perf_counter()
        of_run = f"SELECT * REPLACE ({_quote(out.run_id)} AS run_id) FROM {{t}} WHERE run_id = {_quote(result.run_id)}"
        written = {
            t: (out.path(t, f"part-{part:05d}"), write(con, of_run.format(t=t), out.path(t, f"part-{part:05d}")))
            for t in WRITTEN_TABLES  # names from this module, never user input
        }
        sent = {
            t: parquet(
                con.sql(
                    f"SELECT * EXCLUDE (run_id) FROM {t} WHERE run_id = $r", params={"r": result.run_id}
                ).to_arrow_table()
            )
            for t in SENT_TABLES
        }
        return {
            "part": part,
            "written": {**written, "spans": (out.path("spans", f"part-{part:05d}"), spans)},
            "rows": sent,
            "orphaned": orphaned,
            "seconds": {
                "load": t1 - t0,
                "analyze": t2 - t1,
                "rows": time.perf_counter() - t2,
                "cpu": time.process_time() - c0,
                "judgments": shared.cost,  # the shared judgment set's cost: claiming, giving, waiting
            },
            "tally": result.tally,  # the driver adds the partitions' up
        }
    finally:
        con.close()
