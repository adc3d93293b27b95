"""Partitioned runs on Dask: ``citeline analyze --engine dask [--scheduler tcp://HOST:PORT]``, the driver.

Classification only ever joins within one trace, so a run splits by trace and each part runs
citeline's own pipeline (``analyze``), unchanged, on a worker (docs/scale-out.md). How the run is cut
(its files, the map tasks they and their byte ranges are dealt to, the partitions) is ``plan.py``; what
the workers run is ``tasks.py``; what the driver writes into the store is ``commit.py``; the judgments
the workers share are ``board.py``. The driver:

1. **map**: submits a task per share of the trace files (local paths, or object URLs that ``_lake``
   reads on the worker with the worker's own credentials). Each ingests its share into a DuckDB in
   memory with every check ``ingest`` makes, cuts the spans into one Parquet piece per partition by
   ``hash(trace_id)`` (a trace split across lines and files lands whole in one partition) and writes
   the pieces and its files' ``file_traces`` under the run's location; the driver takes back only
   metadata (the pieces' paths, the files' ``ingested_files`` rows, the ingest report) and stores the
   files' rows as each result comes (a split file's once, when all its ranges were read);
2. **earlier spans**: when the store held spans, lays out those of the run's traces per partition
   under the run's location (one query), and counts the traces that joined them;
3. **reduce**: submits a task per partition, naming the pieces it reads (only those of the map results
   the driver took: a map task that failed twice feeds none). Each loads its pieces and earlier spans
   (a span read twice keeps its first reading, as ingest does) into a DuckDB in memory and runs
   ``analyze`` over it with the run's context shipped once per worker, writes its spans and result rows
   as Parquet under the run's location and sends back counts, its tally and a few small rows; its
   judgments go to the run's shared set (``board.py``), never through the driver;
4. **commit**: stores the partitions' small rows (one insert per table), writes the run's manifest last, then
   registers the run's files (``run_files``) and writes its ``runs`` row, with coverage and problems summed
   from the partitions' tallies (each gold case no partition saw counted once over all of them). The
   span pieces are then removed: the run's spans are its partitions' files.

No span and no claim row passes through the driver. A task whose worker is lost is run again (Dask
reschedules it; what it wrote under the run's location stays there, and a map task's new attempt writes
its pieces apart); a partition that fails twice is named in the run's problems and makes the run exit 1,
never missing silently. Attempts are counted from the tasks' own events.
"""

from __future__ import annotations

import datetime as dt
import shutil
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

import duckdb

from citeline.analyzer.problems import Problem
from citeline.analyzer.run import joining
from citeline.analyzer.run.analyze import (
    InputError,
    RunStamp,
    Setup,
    Watch,
    finish,
    let_go,
    nothing_readable,
    prepare,
)
from citeline.analyzer.run.judging import human_table
from citeline.analyzer.run.options import RunOptions
from citeline.analyzer.run.result import AnalysisResult, Tally
from citeline.analyzer.scaleout import board, commit
from citeline.analyzer.scaleout import cluster as dask_cluster
from citeline.analyzer.scaleout import plan as cut
from citeline.analyzer.scaleout import tasks as work
from citeline.analyzer.scaleout.cluster import EngineError
from citeline.analyzer.scaleout.plan import Cluster, default_out
from citeline.analyzer.sources import lake as _lake
from citeline.analyzer.sources.ingest import IngestReport
from citeline.analyzer.store import DEFAULT_DB, connect
from citeline.analyzer.store import views as store_views

__all__ = ["Cluster", "EngineError", "analyze_partitioned", "default_out"]

T = TypeVar("T")


# ---- the driver -----------------------------------------------------------------------------------


def analyze_partitioned(
    db: str | Path = DEFAULT_DB,
    options: RunOptions | None = None,
    cluster: Cluster | None = None,
    *,
    client: Any = None,
    on_phase: Callable[[str], None] | None = None,
    on_progress: Callable[[str, int, int], None] | None = None,
    **settings: Any,
) -> AnalysisResult:
    """``analyze`` over the run's traces as partitions of whole traces on a Dask cluster: the same rows, one run.

    What the run is comes as ``options`` (a :class:`RunOptions`), as keywords, or both, as for ``analyze``;
    how it is cut and where it runs as ``cluster`` (:class:`Cluster`), whose fields may be keywords too:
    ``analyze_partitioned(db, gold="gold.yaml", traces=["traces/"], workers=4)``. ``client`` passes a
    Dask client already made (then no cluster is started or connected to).

    Raises :class:`InputError` as ``analyze`` does, and :class:`EngineError` when no cluster can be had.
    """
    cluster, settings = Cluster.split(cluster, settings)
    options = RunOptions.resolve(options, settings, "analyze_partitioned")  # a wrong one raises before anything runs
    if not options.traces:
        raise InputError("--engine dask reads trace files: give --traces (a run over the store is one process)")
    setup = prepare(options)  # the gold set read here once; the workers get it as read
    files, listing_problems = cut.inputs(options.traces)
    if all(_lake.is_url(t) for t in options.traces) and not files:
        raise nothing_readable(listing_problems)
    watch = Watch(on_phase, on_progress)
    own = client is None
    close: Callable[[], None] = lambda: None  # noqa: E731
    if own:
        watch.phase("starting a Dask cluster" if not cluster.scheduler else f"connecting to {cluster.scheduler}")
        client, close = dask_cluster.open_client(cluster.scheduler, cluster.workers)
    con = connect(db)
    try:
        held = {(str(p), int(n)) for p, n in con.execute("SELECT path, size FROM ingested_files").fetchall()}
        plan = cut.make_plan(client, files, listing_problems, cluster, held)
        ctx = _context(con, setup)
        stamp = RunStamp.now()
        if _lake.is_url(str(cluster.out or "")):
            raise InputError(
                "--out: a partitioned run writes its rows to a folder every worker reaches (object "
                "storage is not supported yet: docs/scale-out.md)"
            )
        run_dir = Path(cluster.out or default_out(db)).resolve() / stamp.run_id
        return _Driver(setup, plan, client, con, watch, db, stamp, run_dir).run(ctx)
    finally:
        con.close()
        if own:
            close()


def _context(con: duckdb.DuckDBPyConnection, setup: Setup) -> work.Context:
    """What every partition needs, read here once: the run's options with the gold set as read (no corpus
    file, no trace files, no labels path: :data:`work.LAID_OUT`), the labels file's bytes, and the store's
    judgments of this judge."""
    judge, options = setup.judge, setup.options
    cached = con.sql(
        "SELECT * FROM judgments WHERE judge = $j AND version = $v", params={"j": judge.name, "v": judge.version}
    ).to_arrow_table()
    labels = options.labels
    label_file = (Path(labels).name, Path(labels).read_bytes()) if labels else None
    shipped = replace(options, gold=setup.evidence.gold, corpus=None, traces=None, labels=None)
    return work.Context(shipped, setup.evidence.key, label_file, work.parquet(cached))


@dataclass
class _Tasks:
    """The run's tasks as submitted: the map tasks (until the driver has their results), the context, the
    reduces and each partition's pieces (paths)."""

    maps: list[Any]
    shipped: Any = None
    reduces: dict[Any, int] = field(default_factory=dict)
    wanted: dict[int, list[str]] = field(default_factory=dict)  # each partition's pieces (paths)


@dataclass
class _Driver:
    """One partitioned run on the driver: what it is, how it is cut, its cluster and store, where its rows go,
    what it has read so far, and its own timings."""

    setup: Setup
    plan: cut.Plan
    client: Any
    con: duckdb.DuckDBPyConnection
    watch: Watch
    db: str | Path
    stamp: RunStamp
    run_dir: Path
    prefix: str = field(default_factory=lambda: "citeline-" + uuid.uuid4().hex[:8])  # tasks and events of this run
    report: IngestReport = field(default_factory=IngestReport)
    seconds: dict[str, Any] = field(
        default_factory=lambda: {
            "map": [],
            "reduce": [],
            "store_ingest": 0.0,
            "store_spans": 0.0,
            "store_rows": 0.0,
            "commit": 0.0,
            "finish": 0.0,
            "driver_cpu": 0.0,  # the driver process's CPU in its storing phases (a LocalCluster's scheduler too)
            "driver_thread_cpu": {},  # the driver's own thread's CPU per phase: its serial part, nothing else
        }
    )
    files: dict[str, list[tuple[str, int]]] = field(default_factory=dict)  # table -> (Parquet file, rows)
    sent: dict[str, list[bytes]] = field(default_factory=dict)  # table -> each partition's small rows (Parquet)
    lost_maps: list[int] = field(default_factory=list)
    incremental: dict[str, int] = field(default_factory=lambda: {"skipped_files": 0, "joined_traces": 0})

    def out(self, earlier: str | None = None) -> work.Output:
        return work.Output(str(self.run_dir), self.stamp.run_id, earlier, bool(self.lost_maps))

    def run(self, ctx: work.Context) -> AnalysisResult:
        plan, watch = self.plan, self.watch
        self.run_dir.mkdir(parents=True, exist_ok=True)
        tasks = self._submit(ctx)
        watch.phase(
            f"reading {len(plan.files) - len(plan.skipped)} trace file(s) in {len(plan.groups)} map task(s) on "
            f"{plan.workers} worker(s)"
            + (f"; {len(plan.skipped)} held by the store at their size" if plan.skipped else "")
        )
        self.report.paths = [f for f, _s in plan.files]
        self.report.files_skipped_unchanged = self.incremental["skipped_files"] = len(plan.skipped)
        try:
            pieces = self._read_maps(tasks)
            earlier = self._timed("store_spans", self._earlier)
            self._reduce(tasks, ctx, earlier, pieces)
            watch.phase(f"classifying {plan.parts} partition(s)")
            tallies, failed, orphaned = self._collect(tasks)
            watch.phase("storing the run")
            self._timed("store_rows", commit.store_rows, self.con, self.stamp.run_id, self.sent)
            self._timed("commit", self._commit, failed)
        finally:  # the span pieces are intermediate: the run's spans are its partitions' files
            shutil.rmtree(self.run_dir / work.PIECES, ignore_errors=True)
        result = self._timed("finish", self._finish, tallies, failed, orphaned)
        result.engine["seconds"] = self.seconds  # each task's own timings and the driver's storing: bench/scaleout.py
        result.engine["sampling_workers"] = dask_cluster.sampling_workers(self.client)
        return result

    def _submit(self, ctx: work.Context) -> _Tasks:
        client, prefix, files, parts, out = self.client, self.prefix, self.plan.files, self.plan.parts, self.out()
        plan = self.plan
        maps = [
            client.submit(
                work.map_files,
                prefix,
                m,
                [files[i][0] for i in g],
                [plan.rank(m, k) for k in range(len(g))],
                parts,
                out,
                plan.ranges[m] if any(plan.ranges[m]) else None,
                key=f"{prefix}-map-{m}",
                retries=1,
            )
            for m, g in enumerate(plan.groups)
        ]
        return _Tasks(maps)

    def _reduce(self, tasks: _Tasks, ctx: work.Context, earlier: str | None, pieces: dict[int, dict[int, str]]) -> None:
        """Every partition's reduce, on the pieces of the map tasks that gave theirs (``pieces``: per map task
        whose result the driver took, its pieces' paths by partition; a map task that failed twice feeds none:
        the partitions run on the others' spans). A task per partition: the pieces go by path."""
        client, prefix, parts, out = self.client, self.prefix, self.plan.parts, self.out(earlier)
        tasks.wanted = {p: [pieces[m][p] for m in sorted(pieces) if p in pieces[m]] for p in range(parts)}
        # the context as a task, not scattered data: a worker lost with the only copy of scattered data loses it
        # for good, while a task's result is made again; each worker fetches it once and keeps it for the run.
        # Submitted after the map phase: a worker that dies twice under a map task takes no other task with it
        tasks.shipped = client.submit(work.context, ctx, key=f"{prefix}-context")
        tasks.reduces = {
            client.submit(
                work.reduce_partition,
                prefix,
                p,
                tasks.wanted[p],
                tasks.shipped,
                out,
                key=f"{prefix}-part-{p}",
                retries=1,
            ): p
            for p in range(parts)
        }

    def _timed(self, what: str, fn: Callable[..., T], *args: Any) -> T:
        t, c, own = time.perf_counter(), time.process_time(), time.thread_time()
        got = fn(*args)
        self.seconds[what] += time.perf_counter() - t
        mine = self.seconds["driver_thread_cpu"]
        mine[what] = mine.get(what, 0.0) + time.thread_time() - own
        if what != "finish":  # the storing phases, as measured before issue #38's item 4
            self.seconds["driver_cpu"] += time.process_time() - c
        return got

    def _read_maps(self, tasks: _Tasks) -> dict[int, dict[int, str]]:
        """Each map task's ingested_files into the store, its file_traces file noted, its pieces' paths taken (by
        partition: only these are read, whatever another attempt of it wrote); a map task that failed twice named
        with its files (the partitions run without them). The map tasks are let go as their results come: a
        worker lost later costs no map task made again."""
        report, groups = self.report, self.plan.groups
        ranges: list[dict[str, Any]] = []
        pieces: dict[int, dict[int, str]] = {}
        for m, meta_f in enumerate(tasks.maps):
            try:
                meta = meta_f.result()
            except Exception as exc:  # noqa: BLE001 - the task's own error, named in the run's problems
                lost = [self.plan.files[i][0] for i in groups[m]]
                self.lost_maps.append(m)
                report.paths = [p for p in report.paths if p not in lost]
                named = self.plan.named(m)
                shown = ", ".join(named[:5]) + (f" and {len(lost) - 5} more" if len(lost) > 5 else "")
                report.problems.append(
                    Problem(
                        "partitioned run",
                        f"map task {m + 1} of {len(groups)}",
                        "-",
                        f"failed twice ({_why(exc)}): {len(lost)} file(s) not read: {shown}; the other files' "
                        "traces are classified without them; run again to read them",
                    )
                )
            else:
                self._timed("store_ingest", commit.store_ingest, self.con, meta, report)
                if meta["file_traces_rows"]:
                    self.files.setdefault("file_traces", []).append((meta["file_traces"], meta["file_traces_rows"]))
                ranges.append(meta)
                pieces[m] = meta["pieces"]
                self.seconds["map"].append(meta["seconds"])
            meta_f.release()
            self.watch.tick("reading trace files", m + 1, len(groups))
        if any(meta.get("ranges") for meta in ranges):
            self._timed("store_ingest", self._store_split_files, ranges)
        report.problems.extend(self.plan.listing_problems)
        tasks.maps = []
        return pieces

    def _store_split_files(self, metas: list[dict[str, Any]]) -> None:
        """The files read in byte ranges, each as one whole file: its ingested_files row (lines, spans and bad
        lines summed over its ranges) once every range was read, so a file held at its size is skipped as
        one process skips it; a file with a range lost is not recorded (the next run reads it whole). Their
        (file, trace) rows, which each range's task wrote, made distinct in one file."""
        lost = {self.plan.files[i][0] for m in self.lost_maps for i in self.plan.groups[m]}
        sizes = dict(self.plan.files)
        got: dict[str, list[dict[str, Any]]] = {}
        for meta in metas:
            for row in meta.get("ranges", []):
                got.setdefault(row["path"], []).append(row)
        fresh = []
        for path, rows in got.items():
            if path in lost or not all(r["read"] for r in rows):
                continue  # named: its first range's task says why the file is not read, or its range's task failed
            lines, spans, bad = (sum(int(r[k]) for r in rows) for k in ("lines", "spans", "bad"))
            at = max((r["at"] for r in rows if r["at"] is not None), default=None) or dt.datetime.now(dt.UTC).replace(
                tzinfo=None
            )
            fresh.append((path, sizes[path], lines, spans, bad, at))
            self.report.files += 1
            self.report.bytes += sizes[path]
        if fresh:
            self.con.executemany("INSERT INTO ingested_files VALUES (?, ?, ?, ?, ?, ?)", fresh)
        ranged = [meta["file_traces_ranges"][0] for meta in metas if meta.get("file_traces_ranges", ("", 0))[1]]
        if ranged:
            path = self.out().path("file_traces", "ranges")
            n = work.write(self.con, f"SELECT DISTINCT * FROM read_parquet({commit.literal_list(ranged)})", path)
            self.files.setdefault("file_traces", []).append((path, n))
        for meta in metas:
            if "file_traces_ranges" in meta:
                Path(meta["file_traces_ranges"][0]).unlink(missing_ok=True)

    def _earlier(self) -> str | None:
        """The spans the store held before this run of the run's traces (those of the files it skipped, and
        those of new files' traces stored earlier from other files), laid out per partition for the reduces;
        None when the store held no span. Counts the new files' traces that joined spans stored earlier."""
        con = self.con
        if not con.execute("SELECT count(*) FROM (SELECT 1 FROM spans LIMIT 1)").fetchall()[0][0]:
            return None  # a fresh store: nothing to join, nothing to lay out
        new = [f for f, _n in self.files.get("file_traces", [])]
        con.execute("CREATE OR REPLACE TEMP TABLE t_new_traces (trace_id VARCHAR)")
        if new:
            con.execute("INSERT INTO t_new_traces SELECT DISTINCT trace_id FROM read_parquet($f)", {"f": new})
        con.execute(
            "CREATE OR REPLACE TEMP TABLE t_run_traces AS SELECT trace_id FROM t_new_traces UNION "
            "SELECT trace_id FROM file_traces WHERE list_contains($held, source_file)",
            {"held": self.plan.skipped},
        )
        folder = self.run_dir / "earlier"
        con.execute(
            "CREATE OR REPLACE TEMP TABLE t_earlier AS SELECT s.*, (hash(s.trace_id) % $p)::BIGINT AS part "
            "FROM spans AS s SEMI JOIN t_run_traces AS t ON t.trace_id = s.trace_id",
            {"p": self.plan.parts},
        )
        (joined,) = con.execute(
            "SELECT count(*) FROM t_new_traces AS n WHERE EXISTS (SELECT 1 FROM t_earlier AS e "
            "WHERE e.trace_id = n.trace_id)"
        ).fetchall()[0]
        self.incremental["joined_traces"] = int(joined)
        if con.execute("SELECT count(*) FROM t_earlier").fetchall()[0][0]:
            con.execute(
                f"COPY t_earlier TO {commit.literal(str(folder))} "
                "(FORMAT parquet, COMPRESSION zstd, PARTITION_BY (part))"
            )
        for t in ("t_new_traces", "t_run_traces", "t_earlier"):
            con.execute(f"DROP TABLE {t}")
        return str(folder)

    def _collect(self, tasks: _Tasks) -> tuple[list[Tally], list[tuple[int, str]], int]:
        """Each partition's small rows kept as it finishes (stored at the commit), its files noted; the partitions'
        tallies, the partitions that failed twice (their spans written all the same), and the traces that may miss
        a part."""
        import distributed

        as_completed: Any = distributed.as_completed
        reduces, wanted = tasks.reduces, tasks.wanted
        tallies: list[Tally] = []
        failed: list[tuple[int, str]] = []
        orphaned = 0
        spans_only: list[Any] = []
        for n, (fut, out) in enumerate(as_completed(list(reduces), with_results=True, raise_errors=False), 1):
            part = reduces.pop(fut)
            if fut.status != "finished" or isinstance(out, BaseException):  # erred, or cancelled by the scheduler
                why = fut.exception() if fut.status == "error" else out
                failed.append((part, _why(why if isinstance(why, BaseException) else None)))
                key = f"{self.prefix}-spans-{part}"
                spans_only.append(
                    self.client.submit(work.spans_only, self.prefix, part, wanted.pop(part), self.out(), key=key)
                )
            else:
                del wanted[part]
                for table, (path, rows) in out["written"].items():
                    if rows:
                        self.files.setdefault(table, []).append((path, rows))
                self.report.spans_added += out["written"]["spans"][1]
                for table, data in out["rows"].items():  # stored together once every partition is in
                    self.sent.setdefault(table, []).append(data)
                self.seconds["reduce"].append({**out["seconds"], "traces": out["tally"].traces})
                tallies.append(out["tally"])
                orphaned += out["orphaned"]
            self.watch.tick("classifying partitions", n, self.plan.parts)
        for fut in spans_only:
            try:
                got = int(fut.result())
            except Exception:  # noqa: BLE001 - its spans stay unread: the partition is named failed already
                continue
            if got:
                part = int(str(fut.key).rsplit("-", 1)[1])
                self.files.setdefault("spans", []).append((self.out().path("spans", f"part-{part:05d}"), got))
                self.report.spans_added += got
        return tallies, failed, orphaned

    def _commit(self, failed: list[tuple[int, str]]) -> None:
        """The run's manifest, written last (a run without one was never committed), then its files in the
        store's run_files and this connection's views over them."""
        import json
        import os

        judged = board.files(self.run_dir)  # every judgment the run asked, whichever worker asked it
        if judged:
            self.files["judgments"] = judged
        manifest = {
            "run_id": self.stamp.run_id,
            "partitions": self.plan.parts,
            "map_tasks": len(self.plan.groups),
            "failed_map_tasks": [m + 1 for m in self.lost_maps],
            "failed_partitions": [p + 1 for p, _w in sorted(failed)],
            "tables": {t: [{"path": p, "rows": n} for p, n in sorted(fs)] for t, fs in sorted(self.files.items())},
        }
        tmp = self.run_dir / "manifest.json.tmp"
        tmp.write_text(json.dumps(manifest, indent=1), encoding="utf-8")
        os.replace(tmp, self.run_dir / "manifest.json")
        rows = [(self.stamp.run_id, t, p, n) for t, fs in self.files.items() for p, n in fs]
        if rows:
            self.con.executemany("INSERT INTO run_files VALUES (?, ?, ?, ?)", rows)
        store_views(self.con)

    def _finish(self, tallies: list[Tally], failed: list[tuple[int, str]], orphaned: int) -> AnalysisResult:
        """The run as ``analyze`` would have stored it: coverage, problems and counts over every partition."""
        con, plan, report = self.con, self.plan, self.report
        attempts = _attempts(self.client, self.prefix)
        label_errors = human_table(con, self.setup.options.labels)
        joining.gold_tables(con, self.setup.evidence.gold)
        tally = sum(tallies, Tally())
        report.problems.extend(tally.problems())
        report.problems.extend(self._lost(failed))
        if self.lost_maps:
            report.problems.append(
                Problem(
                    "partitioned run",
                    "traces classified without a failed map task's files",
                    "-",
                    f"{orphaned} trace(s) have a span whose parent span is not among their spans: a part of them "
                    "may be in the files not read (their rows may be incomplete)",
                )
            )
        report.skipped = sum(p.skipped for p in report.problems)
        # a gold case is missing when no partition's trace answered it: counted once over them all
        result = finish(con, self.setup, self.stamp, report, tally, label_errors=label_errors, db=self.db)
        result.engine = {
            "name": "dask",
            "scheduler": plan.scheduler or "LocalCluster",
            "workers": plan.workers,
            "map_tasks": len(plan.groups),
            "split_files": plan.split_files(),
            "byte_ranges": sum(1 for rs in plan.ranges for r in rs if r),  # each read by its own map task
            "partitions": plan.parts,
            "retries": sum(n - 1 for kind in attempts.values() for n in kind.values() if n > 1),
            "failed_partitions": [p + 1 for p, _w in sorted(failed)],
            "failed_map_tasks": [m + 1 for m in self.lost_maps],
            "incomplete_traces": orphaned,
            "location": str(self.run_dir),
            **self.incremental,
        }
        let_go(result)
        return result

    def _lost(self, failed: list[tuple[int, str]]) -> list[Problem]:
        """A problem per partition that failed twice, naming how many traces it leaves unclassified."""
        out = []
        new = [f for f, _n in self.files.get("file_traces", [])]
        parts = self.plan.parts
        mine = "SELECT trace_id FROM read_parquet($new) UNION ALL " if new else ""
        for part, why in sorted(failed):
            (n,) = self.con.execute(
                f"SELECT count(DISTINCT trace_id) FROM ({mine}SELECT trace_id FROM file_traces "
                "WHERE list_contains($held, source_file)) WHERE hash(trace_id) % $p = $b",
                {"p": parts, "b": part, "held": self.plan.skipped, **({"new": new} if new else {})},
            ).fetchall()[0]
            out.append(
                Problem(
                    "partitioned run",
                    f"partition {part + 1} of {parts}",
                    "-",
                    f"failed twice ({why}): its {n} trace(s) are not classified; run again (the store keeps the rest)",
                )
            )
        return out


def _why(exc: BaseException | None) -> str:
    if exc is None:
        return "lost"
    text = str(exc).strip().splitlines()[0][:200] if exc is not None and str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _attempts(client: Any, prefix: str) -> dict[str, dict[int, int]]:
    """How many times each map task and partition was started (their own events: a lost one starts again)."""
    out: dict[str, dict[int, int]] = {"map": {}, "partition": {}}
    for topic, kind, key in ((work.MAP_EVENTS, "map", "task"), (work.REDUCE_EVENTS, "partition", "partition")):
        for _time, msg in client.get_events(topic):
            if msg.get("run") == prefix:  # a cluster's events are all its runs': this run's own
                out[kind][int(msg[key])] = out[kind].get(int(msg[key]), 0) + 1
    return out
