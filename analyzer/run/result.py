"""The result of one ``analyze`` run, read back from the store as it is used."""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property
from typing import IO, Any

import duckdb
import polars as pl

from citeline.analyzer.gold.goldset import GoldError
from citeline.analyzer.problems import Problem
from citeline.analyzer.reports.report import span_url, trace_url
from citeline.analyzer.run.joining import Tallies
from citeline.analyzer.sources.ingest import IngestReport
from citeline.analyzer.store import BASES, DEFAULT_DB, connect

CLAIM_ORDER = "ORDER BY case_id, trace_id, gold_claim_id NULLS LAST, claim_text"
#: each claim of the JSON contract (docs/design.md), in order
_CLAIM_KEYS = (
    "trace_id",
    "case_id",
    "gold_claim_id",
    "claim_text",
    "bucket",
    "stage",
    "flags",
    "reason",
    "span_id",
    "basis",
)


@dataclass
class Tally:
    """What a run counted as it went, over its slices: the traces it read, what the join step counted
    (the run's problems are worded from it) and the judge's work. A partitioned run's partitions each
    count their own; ``+`` adds them up to the run's."""

    traces: int = 0
    joins: Tallies = field(default_factory=Tallies)
    judged: dict[str, int] = field(default_factory=lambda: dict.fromkeys(("asked", "cached", "failed"), 0))

    def __add__(self, other: Tally) -> Tally:
        judged = dict(self.judged)
        for k, n in other.judged.items():
            judged[k] = judged.get(k, 0) + n
        return Tally(self.traces + other.traces, self.joins + other.joins, judged)

    def problems(self) -> list[Problem]:
        """What the run says of chunk identity and OpenInference documents (:meth:`Tallies.problems`)."""
        return self.joins.problems()


@dataclass
class AnalysisResult:
    """What one run found. ``claims`` and ``cases`` are polars DataFrames read from the
    store when first used, so a run over millions of traces costs no memory until asked."""

    run_id: str
    counts: dict[str, int]
    ingest: IngestReport
    gold_errors: list[GoldError] = field(default_factory=list)
    unmatched_traces: int = 0
    traces_read: int = 0
    phoenix_url: str | None = None
    judge: dict[str, Any] = field(default_factory=dict)  # name, asked, cached, failed, and a model judge's usage
    warnings: list[str] = field(default_factory=list)  # usable but unconfirmed gold (draft cases)
    skipped_text: dict[str, int] = field(default_factory=dict)  # text that is no claim, per kind (_policy)
    # what the run counted as it went: a partitioned run adds its partitions' up (analyzer/scaleout/partitioned.py)
    tally: Tally = field(default_factory=Tally, repr=False)
    # how a partitioned run ran: engine, scheduler, workers, partitions, retries, partitions that failed
    engine: dict[str, Any] = field(default_factory=dict)
    db: str | None = None
    con: duckdb.DuckDBPyConnection | None = field(default=None, repr=False)

    @property
    def summary(self) -> dict[str, int]:
        """Claims per bucket, every bucket present."""
        return dict(self.counts)

    @cached_property
    def by_basis(self) -> dict[str, dict[str, int]]:
        """Claims per bucket on each basis (``gold``, ``corpus``), every bucket present."""
        out = {b: dict.fromkeys(self.counts, 0) for b in BASES}
        for basis, bucket, n in self._rows(
            "SELECT coalesce(basis, 'gold'), bucket, count(*) FROM claim_results WHERE run_id = $r GROUP BY ALL"
        ):
            out[basis][bucket] = int(n)
        return out

    @cached_property
    def corpus_traces(self) -> int:
        """Traces judged on the corpus basis (no gold case)."""
        return int(next(self._rows("SELECT count(*) FROM case_results WHERE run_id = $r AND basis = 'corpus'"))[0])

    @cached_property
    def claims(self) -> pl.DataFrame:
        return self._frame(f"SELECT * FROM claim_results WHERE run_id = $r {CLAIM_ORDER}")

    @cached_property
    def cases(self) -> pl.DataFrame:
        return self._frame("SELECT * FROM case_results WHERE run_id = $r ORDER BY case_id, trace_id")

    @cached_property
    def coverage(self) -> dict[str, Any]:
        """Every trace read and every gold case, accounted for (the JSON contract's ``coverage``)."""
        unmatched = self._frame(
            "SELECT trace_id, reason, candidates FROM unmatched_traces WHERE run_id = $r ORDER BY reason, trace_id"
        ).to_dicts()
        missing = self._frame("SELECT case_id FROM missing_cases WHERE run_id = $r ORDER BY case_id")
        return {
            "traces": self.traces_read,
            "joined": self.traces_read - len(unmatched),
            "corpus": self.corpus_traces,
            "unmatched": unmatched,
            "cases_without_trace": missing["case_id"].to_list(),
        }

    def coverage_lines(self) -> list[str]:
        """The coverage as one or two lines for people."""
        cov = self.coverage
        traces, joined = cov["traces"], cov["joined"]
        share = f" ({100 * joined / traces:.1f}%)" if traces else ""
        line = f"coverage: {joined} of {traces} trace(s) joined a gold case{share}"
        if cov["corpus"]:
            line += f"; {cov['corpus']} judged on the corpus basis (no gold case)"
        reasons: dict[str, int] = {}
        for u in cov["unmatched"]:
            reasons[u["reason"]] = reasons.get(u["reason"], 0) + 1
        if reasons:
            line += "; not joined: " + ", ".join(f"{n} {r}" for r, n in sorted(reasons.items()))
        lines = [line]
        if cov["cases_without_trace"]:
            shown = cov["cases_without_trace"][:10]
            more = len(cov["cases_without_trace"]) - len(shown)
            lines.append(
                f"{len(cov['cases_without_trace'])} gold case(s) without a trace: "
                + ", ".join(shown)
                + (f" and {more} more" if more else "")
            )
        return lines

    def skipped_text_line(self) -> str | None:
        """The text of the answers that was no claim, per kind, in one line for people (None when none was)."""
        if not self.skipped_text:
            return None
        return "not claims (counted, never judged): " + ", ".join(f"{n} {k}" for k, n in self.skipped_text.items())

    def engine_line(self) -> str | None:
        """How a partitioned run ran, in one line (None for a run in one process)."""
        e = self.engine
        if not e:
            return None
        line = (
            f"engine: {e['name']} ({e['scheduler']}, {e['workers']} worker(s)): {e['map_tasks']} map task(s), "
            f"{e['partitions']} partition(s), {e['retries']} task(s) run again"
        )
        if e.get("split_files"):  # large files read in line-aligned byte ranges by several map tasks
            line += f"; {e['split_files']} file(s) read in byte ranges"
        if e.get("skipped_files") or e.get("joined_traces"):  # files the store held, traces it held spans of
            line += f"; {e['skipped_files']} file(s) held skipped, {e['joined_traces']} trace(s) joined to stored spans"
        if e["failed_partitions"]:
            line += f"; partition(s) {', '.join(map(str, e['failed_partitions']))} failed twice"
        if e.get("failed_map_tasks"):
            line += f"; map task(s) {', '.join(map(str, e['failed_map_tasks']))} failed twice"
        if e.get("sampling_workers"):
            line += (
                f"; {e['sampling_workers']} worker(s) run Dask's profiler or its 20 ms tick, which take the GIL "
                "from the text work (about a third slower): docs/scale-out.md, Worker settings"
            )
        return line

    def failing(self, limit: int) -> pl.DataFrame:
        """The first ``limit`` claims not ``ok``, in the order of ``claims``."""
        return self._frame(
            f"SELECT * FROM claim_results WHERE run_id = $r AND bucket <> 'ok' {CLAIM_ORDER} LIMIT {int(limit)}"
        )

    def _frame(self, query: str) -> pl.DataFrame:
        if self.con is not None:  # the caller's connection, while it is open
            try:
                frame: pl.DataFrame = self.con.sql(query, params={"r": self.run_id}).pl()
                return frame
            except duckdb.ConnectionException:
                pass
        con = connect(self.db or DEFAULT_DB)
        try:
            frame = con.sql(query, params={"r": self.run_id}).pl()
            return frame
        finally:
            con.close()

    @property
    def skipped(self) -> int:
        return self.ingest.skipped + len(self.gold_errors)

    def problems(self) -> list[str]:
        return [str(p) for p in self.ingest.problems] + [str(e) for e in self.gold_errors]

    def problem_lines(self) -> list[tuple[bool, str]]:
        """(skipped, line) per problem: skipped input (counted in ``skipped``), or a note on what was read."""
        return [(p.skipped, str(p)) for p in self.ingest.problems] + [(True, str(e)) for e in self.gold_errors]

    def write_json(self, out: IO[str], batch: int = 10_000) -> None:
        """The same object as :meth:`to_json`, written as it is read: the claims, cases and unmatched
        traces stream from the store in batches, so a run of millions of claims costs a batch of
        memory, not the whole list (``analyze --format json``)."""
        dump = functools.partial(json.dumps, default=str)
        out.write("{")
        out.write(f'"run_id": {dump(self.run_id)}, "summary": {dump(self.summary)}, "coverage": {{')
        missing = [r[0] for r in self._rows("SELECT case_id FROM missing_cases WHERE run_id = $r ORDER BY case_id")]
        unmatched = 0
        out.write('"unmatched": [')
        first = True
        for trace_id, reason, candidates in self._rows(
            "SELECT trace_id, reason, candidates FROM unmatched_traces WHERE run_id = $r ORDER BY reason, trace_id",
            batch,
        ):
            out.write(
                ("" if first else ", ") + dump({"trace_id": trace_id, "reason": reason, "candidates": candidates})
            )
            first, unmatched = False, unmatched + 1
        out.write(
            f'], "traces": {self.traces_read}, "joined": {self.traces_read - unmatched}, '
            f'"corpus": {self.corpus_traces}, "cases_without_trace": {dump(missing)}}}, '
        )
        out.write(f'"by_basis": {dump(self.by_basis)}, ')
        out.write(f'"judge": {dump(self.judge)}, "skipped": {self.skipped}, "problems": {dump(self.problems())}, ')
        out.write(f'"warnings": {dump(self.warnings)}, "skipped_text": {dump(self.skipped_text)}, ')
        if self.engine:  # a partitioned run: how it ran, its retries and any partition that failed
            out.write(f'"engine": {dump(self.engine)}, ')
        out.write('"cases": [')
        first = True
        for trace_id, case_id, verdict, basis in self._rows(
            "SELECT trace_id, case_id, verdict, basis FROM case_results WHERE run_id = $r ORDER BY case_id, trace_id",
            batch,
        ):
            case = {"trace_id": trace_id, "case_id": case_id, "verdict": verdict, "basis": basis}
            out.write(("" if first else ", ") + dump(case))
            first = False
        out.write('], "claims": [')
        first = True
        for row in self._rows(
            f"SELECT {', '.join(_CLAIM_KEYS)} FROM claim_results WHERE run_id = $r {CLAIM_ORDER}", batch
        ):
            claim = self._link(dict(zip(_CLAIM_KEYS, row, strict=True)))
            out.write(("\n" if first else ",\n") + dump(claim))
            first = False
        out.write("]}\n")

    def _rows(self, query: str, batch: int = 10_000) -> Iterator[tuple[Any, ...]]:
        """Rows of a query on this run, ``batch`` at a time."""
        own = None
        con = self.con
        if con is not None:
            try:
                cur = con.execute(query, {"r": self.run_id})
            except duckdb.ConnectionException:
                con = None
        if con is None:
            own = con = connect(self.db or DEFAULT_DB)
            cur = con.execute(query, {"r": self.run_id})
        try:
            while rows := cur.fetchmany(batch):
                yield from rows
        finally:
            if own is not None:
                own.close()

    def to_json(self) -> dict[str, Any]:
        """The JSON contract of ``citeline analyze --format json`` (docs/design.md, "JSON output")."""
        return {
            "run_id": self.run_id,
            "summary": self.summary,
            "coverage": self.coverage,
            "by_basis": self.by_basis,
            "judge": self.judge,
            "skipped": self.skipped,
            "problems": self.problems(),
            "warnings": self.warnings,
            "skipped_text": self.skipped_text,
            **({"engine": self.engine} if self.engine else {}),
            "cases": self.cases.select("trace_id", "case_id", "verdict", "basis").to_dicts(),
            "claims": [self._link(c) for c in self.claims.select(*_CLAIM_KEYS).to_dicts()],
        }

    def _link(self, claim: dict[str, Any]) -> dict[str, Any]:
        """A failing claim carries its Phoenix links when a Phoenix URL is configured."""
        if self.phoenix_url and claim["bucket"] != "ok" and claim["span_id"]:
            claim["span_url"] = span_url(self.phoenix_url, claim["span_id"])
            claim["trace_url"] = trace_url(self.phoenix_url, claim["trace_id"])
        return claim
