"""The store step: what a run keeps beside its claim rows, and its row in ``runs``.

Two parts, because a partitioned run makes the first on its workers (each partition's run stores
it for its own traces) and the second once, on the driver, over every partition:

- :func:`store_results`, from what the run classified: case verdicts, each case's support and the
  chunks its drill-down shows, users' reports and the claims they flag, traces with no request span;
- :func:`store_run`, over the whole run: the claims people labelled, the cases no trace answered,
  the input problems, and the runs row.

Every statement is a query file whose header says what it appends (``_steps``).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

import duckdb

from citeline.analyzer import steps
from citeline.analyzer.gold.goldset import GoldError
from citeline.analyzer.problems import Problem
from citeline.analyzer.store import BUCKETS, sql


def store_results(con: duckdb.DuckDBPyConnection, run_id: str, files: list[str] | None) -> None:
    """Reads claim_results of ``run_id``, t_gold_claims, t_gold_chunks, spans; appends case_results
    (case_verdicts.sql), run_support, run_chunks, run_feedback (flagging claim_results: flag_feedback.sql)
    and the traces of ``files`` with no request span (no_request.sql, into unmatched_traces)."""
    params = {"run_id": run_id}
    steps.run(con, "run_support", params)
    steps.run(con, "run_chunks", params)
    steps.run(con, "case_verdicts", params)
    steps.run(con, "run_feedback", params)  # users' reports: kept, their claims flagged
    if con.execute("SELECT 1 FROM run_feedback WHERE run_id = $run_id LIMIT 1", params).fetchall():
        steps.run(con, "flag_feedback", params)  # (it reads every claim of the run: not when nobody reported)
    steps.run(con, "no_request", {**params, "files": files})


def store_run(  # noqa: PLR0913 - the runs row's columns, each from the step that knows it (issue #32 follow-up: a RunStamp)
    con: duckdb.DuckDBPyConnection,
    run_id: str,
    started: dt.datetime,
    *,
    problems: Sequence[Problem],
    errors: Sequence[GoldError],
    gold_source: str,
    judge: str,
    skipped: int,
    traces_read: int,
    gold_hash: str,
) -> dict[str, int]:
    """Reads claim_results and case_results of ``run_id``, t_human, t_gold_cases, t_gold_chunks; appends
    human_labelled, missing_cases, input_problems (``problems`` and the gold set's ``errors``) and the run's
    row in runs (``traces``: the traces that joined a gold case). Returns the run's claims per bucket."""
    params = {"run_id": run_id}
    steps.run(con, "human_labelled", params)
    steps.run(con, "missing_cases", params)  # counted once over the whole run (all partitions)
    steps.fill(
        con,
        "t_problems",
        rows=[(p.source, p.place, p.field, p.message) for p in problems]
        + [(e.file, e.where, e.field, e.message) for e in errors],
    )
    now = dt.datetime.now(dt.UTC).replace(tzinfo=None)
    steps.run(con, "run_problems", {**params, "seen_at": now})
    steps.run(
        con,
        "run_row",
        {
            **params,
            "started_at": started,
            "finished_at": dt.datetime.now(dt.UTC).replace(tzinfo=None),
            "gold_source": gold_source,
            "judge": judge,
            "skipped": skipped,
            "traces_read": traces_read,
            "gold_hash": gold_hash,
        },
    )
    counts = dict.fromkeys(BUCKETS, 0)
    counts.update({str(b): int(n) for b, n in con.execute(sql("run_buckets"), params).fetchall()})
    return counts


def unmatched_count(con: duckdb.DuckDBPyConnection, run_id: str) -> int:
    """The run's traces that joined no gold case (coverage)."""
    return int(con.execute("SELECT count(*) FROM unmatched_traces WHERE run_id = $r", {"r": run_id}).fetchall()[0][0])
