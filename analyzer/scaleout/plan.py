"""How a partitioned run is cut (analyzer/scaleout/partitioned.py drives it): the trace files it reads, the
map tasks they are dealt to in order by bytes (a plain file over ``split_bytes`` in line-aligned byte ranges,
adjacent ranges of one task read as one), the partitions, and where the run's rows go."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from citeline.analyzer.problems import Problem
from citeline.analyzer.sources import lake as _lake
from citeline.analyzer.sources.byte_ranges import SPLIT_BYTES, splittable
from citeline.analyzer.sources.byte_ranges import cut as cut_ranges
from citeline.analyzer.sources.ingest import PATTERNS, trace_files

#: bytes of trace files one map task reads at most (a file is never cut)
MAP_BYTES = 256 * 1024 * 1024


def inputs(traces: Sequence[str | Path]) -> tuple[list[tuple[str, int]], list[Problem]]:
    """Every trace file the run reads, with its size, in the order ingest reads them; what could not be listed."""
    problems: list[Problem] = []
    files = [(str(f), f.stat().st_size) for f in trace_files([t for t in traces if not _lake.is_url(t)])]
    for url in (str(t) for t in traces if _lake.is_url(t)):
        try:
            files.extend(_lake.listing(url, PATTERNS))
        except _lake.LakeError as exc:
            problems.append(Problem(url, "-", "-", f"{str(exc).removeprefix(f'{url}: ')}; skipped"))
    return sorted(dict.fromkeys(files)), problems


def map_groups(files: list[tuple[str, int]], tasks: int) -> list[list[int]]:
    """Cut the files (in order) into ``tasks`` runs of about equal bytes; the file indexes of each."""
    total = sum(size for _f, size in files) or 1
    groups: list[list[int]] = [[] for _ in range(tasks)]
    done = 0
    for i, (_f, size) in enumerate(files):
        groups[min(tasks - 1, done * tasks // total)].append(i)
        done += size
    return [g for g in groups if g]


@dataclass(frozen=True)
class Cluster:
    """How a partitioned run is cut and where it runs: never what it finds (that is its :class:`RunOptions`).

    ``scheduler`` is a running scheduler's address (``tcp://host:8786``); without it a LocalCluster of
    ``workers`` one-thread processes is started and stopped by the run. ``partitions`` (default: four per
    worker thread), ``map_tasks`` (default: one per 256 MiB of trace files, at least one per worker
    thread) and ``split_bytes`` (a file larger than this, not gzip, is read in line-aligned byte ranges of
    about this size by several map tasks; default 64 MiB) change how the run is cut.
    """

    scheduler: str | None = None
    workers: int = 2
    partitions: int | None = None
    map_tasks: int | None = None
    out: str | Path | None = None  # where the run's Parquet files go: default_out(db)
    split_bytes: int | None = None  # a file larger than this is read in line-aligned byte ranges: SPLIT_BYTES

    @classmethod
    def split(cls, cluster: Cluster | None, settings: dict[str, Any]) -> tuple[Cluster, dict[str, Any]]:
        """``cluster`` with the keywords among ``settings`` that name its fields over it; the other keywords."""
        names = {f.name for f in fields(cls)}
        mine = {k: v for k, v in settings.items() if k in names}
        return replace(cluster or cls(), **mine), {k: v for k, v in settings.items() if k not in names}


def default_out(db: str | Path) -> Path:
    """Where a partitioned run writes its rows when ``--out`` is not given: a folder beside the store
    (``citeline.duckdb`` -> ``citeline.duckdb.runs/``), one folder per run in it."""
    if str(db) == ":memory:":
        import tempfile

        return Path(tempfile.mkdtemp(prefix="citeline-runs-"))
    return Path(str(db) + ".runs")


@dataclass(frozen=True)
class Plan:
    """How this run is cut on the cluster it got: its trace files (path, size) in the order ingest reads
    them, each map task's files (indexes), the partitions, the cluster's worker processes."""

    files: list[tuple[str, int]]
    listing_problems: list[Problem]  # what could not be listed in object storage
    groups: list[list[int]]
    parts: int
    workers: int
    scheduler: str | None
    skipped: list[str] = field(default_factory=list)  # files the store held at their size: their traces from it
    #: per map task, per file of its group: None (read whole) or the byte range of a split file it reads
    ranges: list[list[tuple[int, int] | None]] = field(default_factory=list)

    def rank(self, m: int, k: int) -> int:
        """The reading order of map task ``m``'s ``k``-th file (or range): a span read twice keeps the first."""
        r = self.ranges[m][k] if self.ranges else None
        return self.groups[m][k] * 2**40 + (r[0] if r else 0)

    def split_files(self) -> int:
        """How many files are read in byte ranges."""
        return len({i for g, rs in zip(self.groups, self.ranges, strict=True) for i, r in zip(g, rs, strict=True) if r})

    def named(self, m: int) -> list[str]:
        """Map task ``m``'s files, each split file's range as ``path (bytes A-B)``."""
        out = []
        for k, i in enumerate(self.groups[m]):
            r = self.ranges[m][k] if self.ranges else None
            out.append(f"{self.files[i][0]} (bytes {r[0]}-{r[1]})" if r else self.files[i][0])
        return out


def make_plan(
    client: Any,
    files: list[tuple[str, int]],
    listing_problems: list[Problem],
    cluster: Cluster,
    held: set[tuple[str, int]],
) -> Plan:
    threads = max(1, sum(client.nthreads().values()))
    parts = max(1, cluster.partitions or 4 * threads)
    todo = [i for i, f in enumerate(files) if f not in held]  # a file the store holds at its size: not read again
    dealt = units(files, todo, SPLIT_BYTES if cluster.split_bytes is None else cluster.split_bytes)
    total = sum(size for _u, size in dealt)
    tasks = max(1, min(len(dealt), cluster.map_tasks or max(threads, -(-total // MAP_BYTES)))) if dealt else 0
    cut = map_groups([(str(u), size) for u, size in dealt], tasks) if dealt else []
    groups, ranges = coalesced([[dealt[k][0] for k in g] for g in cut])
    skipped = [files[i][0] for i in range(len(files)) if files[i] in held]
    return Plan(files, listing_problems, groups, parts, len(client.nthreads()), cluster.scheduler, skipped, ranges)


Unit = tuple[int, tuple[int, int] | None]  # a file's index and None (whole) or a byte range of it


def units(files: list[tuple[str, int]], todo: list[int], split: int) -> list[tuple[Unit, int]]:
    """What map tasks read, in order, with its bytes: each file whole, or each range of a file over ``split``."""
    out: list[tuple[Unit, int]] = []
    for i in todo:
        path, size = files[i]
        if splittable(path, size, split):
            out.extend(((i, r), r[1] - r[0]) for r in cut_ranges(size, split))
        else:
            out.append(((i, None), size))
    return out


def coalesced(groups: list[list[Unit]]) -> tuple[list[list[int]], list[list[tuple[int, int] | None]]]:
    """Each map task's files and ranges, a file's adjacent ranges in one task read as one range."""
    files: list[list[int]] = []
    ranges: list[list[tuple[int, int] | None]] = []
    for g in groups:
        fs: list[int] = []
        rs: list[tuple[int, int] | None] = []
        for i, r in g:
            last = rs[-1] if rs else None
            if r is not None and last is not None and fs[-1] == i and last[1] == r[0]:
                rs[-1] = (last[0], r[1])
                continue
            fs.append(i)
            rs.append(r)
        files.append(fs)
        ranges.append(rs)
    return files, ranges
