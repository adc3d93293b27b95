"""``citeline analyze`` and ``rejudge``: the commands that make a run and print it (``demo`` is ``demo.py``)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path

from citeline.analyzer.cli.errors import DONE, FAILED, CliError, err
from citeline.analyzer.cli.options import (
    DOCS,
    AddCommand,
    add_db,
    add_format,
    add_judge,
    add_phoenix,
    add_run,
    judge_options,
    key_values,
    load_judge,
    open_for_reading,
    phoenix_url,
    require_store,
)
from citeline.analyzer.escaping import term
from citeline.analyzer.reports.report import phoenix_footer, resolve_run
from citeline.analyzer.run.analyze import analyze
from citeline.analyzer.run.options import DEFAULT_ABSTAIN_PHRASES, RunOptions
from citeline.analyzer.run.rejudge import rejudge
from citeline.analyzer.run.result import AnalysisResult
from citeline.analyzer.scaleout.partitioned import Cluster, analyze_partitioned
from citeline.analyzer.store import BUCKETS


def register(add: AddCommand) -> None:
    """Add ``analyze`` and ``rejudge`` to the parser."""
    _register_analyze(add)
    rj = add(
        "rejudge",
        "judge a stored run's claims again with another judge and show the label changes (the run is kept)",
        "citeline rejudge --run latest --judge rules --judge-option version=2",
    )
    add_run(rj)
    add_judge(rj)
    rj.add_argument("--gold", help="the gold set (default: the one the run was analyzed with)")
    add_format(rj, "table", "json")
    add_db(rj)
    rj.set_defaults(func=rejudge_command)


def _register_analyze(add: AddCommand) -> None:
    an = add(
        "analyze",
        "join traces to a gold set (or judge them on the corpus alone) and give every claim its failure bucket",
        "citeline analyze --traces traces/ --gold gold.yaml --format json\n"
        "         citeline analyze --traces traffic/ --corpus corpus.jsonl   # production traffic, no gold cases",
    )
    an.add_argument(
        "--traces",
        action="append",
        help="trace file or folder (repeatable); without it, what is already in the store",
    )
    an.add_argument(
        "--gold",
        help="gold YAML/JSON file, or a folder with corpus.jsonl + cases.jsonl (traces that join none of its cases "
        "are judged on the corpus basis)",
    )
    an.add_argument(
        "--corpus",
        help="a corpus without cases: a JSON-lines file of corpus records, or a gold file/folder whose corpus is "
        "read; every trace no gold case joins is judged against it alone (corpus basis, docs/analyzer.md)",
    )
    add_db(an)
    add_judge(an)
    an.add_argument("--labels", help="human labels (CSV or JSONL: trace_id, claim, label); they override the judge")
    an.add_argument(
        "--abstain-phrase",
        action="append",
        metavar="TEXT",
        help="a phrase that marks an answer as an abstention, besides the defaults (docs/analyzer.md lists "
        "them) and the gold file's abstain_phrases (repeatable), e.g. --abstain-phrase 'outside my knowledge'",
    )
    an.add_argument(
        "--answer-key",
        action="append",
        metavar="ROLE=KEY",
        help="the key your JSON answers use for a role (repeatable): text, claims, claim_text, evidence, "
        "chunk_id, quote, abstained; e.g. --answer-key claims=statements (docs/analyzer.md)",
    )
    an.add_argument(
        "--attach",
        metavar="POLICY",
        help="the unit a citation covers: auto (default), sentence, clause, bullet, paragraph, table-cell, "
        "table-row; a gold case's attach: wins (docs/analyzer.md#how-an-answer-becomes-claims)",
    )
    an.add_argument(
        "--exempt",
        metavar="KINDS",
        help="kinds of text that need no citation, comma-separated, or all (the default) or none: greeting, "
        "transition, question, meta, advice, heading, table_header, list_number, bibliography",
    )
    an.add_argument(
        "--engine",
        choices=("local", "dask"),
        default="local",
        help="local: this process (default); dask: partitions of whole traces on a Dask cluster, the same rows "
        "(docs/scale-out.md), e.g. --engine dask --scheduler tcp://10.0.0.5:8786",
    )
    an.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="with --engine dask: a running Dask scheduler (tcp://HOST:PORT); without it a LocalCluster",
    )
    an.add_argument(
        "--workers", type=int, default=2, help="with --engine dask and no --scheduler: LocalCluster worker processes"
    )
    an.add_argument(
        "--partitions", type=int, help="with --engine dask: partitions of traces (default four per worker thread)"
    )
    an.add_argument("--out", help="with --engine dask: the folder the run's Parquet files go to (default DB.runs/)")
    an.add_argument(
        "--split-bytes",
        type=int,
        metavar="N",
        help="with --engine dask: a trace file larger than N bytes (not .gz) is read in line-aligned byte ranges "
        "by several map tasks (default 67108864, 64 MiB; 0: never)",
    )
    add_format(an, "table", "json")
    an.add_argument("--quiet", action="store_true", help="no progress output")
    add_phoenix(an, "Phoenix base URL: failing claims get span links (or CITELINE_PHOENIX_URL)")
    an.set_defaults(func=analyze_command)


# --- analyze ------------------------------------------------------------------------------------


def analyze_command(args: argparse.Namespace) -> int:
    _check_evidence(args)
    show = _progress(args)
    judge = load_judge(args)
    if judge is None:  # --judge list
        return DONE
    keys = key_values(args.answer_key, "--answer-key", "ROLE=KEY", "claims=statements", value_required=True)
    options = RunOptions(  # what the run is, once, for whichever engine runs it
        gold=args.gold,
        corpus=args.corpus,
        traces=args.traces or None,
        # this process's engine uses the judge built above; Dask workers build their own from its name
        judge=judge if args.engine == "local" else args.judge,
        judge_options=judge_options(args) or {},
        labels=args.labels,
        abstain_phrases=[*DEFAULT_ABSTAIN_PHRASES, *(args.abstain_phrase or [])],
        answer_keys=keys,
        attach=args.attach,
        exempt=args.exempt,
    )
    if args.engine == "dask":
        result = _analyze_dask(args, options, show is not None)
    else:
        result = analyze(
            args.db,
            options,
            progress=show,
            on_phase=(lambda name: err(f"{name}...")) if show else None,
            # one line per slice: the phase lines of the next slice follow it
            on_progress=(lambda name, done, total: err(f"{name}: {done} / {total}")) if show else None,
        )
    result.phoenix_url = phoenix_url(args)
    print_result(result, args.format)
    _say_after_run(result, args.traces)
    return DONE


def _check_evidence(args: argparse.Namespace) -> None:
    if args.gold is None and args.corpus is None:
        raise CliError(f"analyze needs a gold set (--gold FILE), a corpus (--corpus FILE) or both ({DOCS})")
    if args.gold is not None and not Path(args.gold).exists():
        raise CliError(f"gold file {args.gold} does not exist; pass --gold FILE ({DOCS})")
    if args.corpus is not None and not Path(args.corpus).exists():
        raise CliError(f"corpus file {args.corpus} does not exist; pass --corpus FILE ({DOCS})")


def _say_after_run(result: AnalysisResult, traces: list[str] | None) -> None:
    """The lines after a run's output on standard error; a ``FAILED`` CliError for a run that is no pass."""
    for skipped, line in result.problem_lines():  # the lines that say "skipped" are the JSON's `skipped`
        err(f"citeline: {'skipped' if skipped else 'note'}: {line}")
    if result.warnings:  # draft gold cases: used, and said once per run
        err(
            f"citeline: warning: {len(result.warnings)} gold case(s) are drafts (status: draft), e.g. "
            f"{result.warnings[0]}; `citeline validate` lists them",
        )
    failed = result.engine.get("failed_partitions") if result.engine else None
    if failed:  # a partition that failed twice is never a green run: its traces are not classified
        raise CliError(f"partition(s) {', '.join(map(str, failed))} failed twice; the run is incomplete", FAILED)
    if result.engine and result.engine.get("failed_map_tasks"):  # its files unread: named in the problems
        raise CliError("a map task failed twice; its files are not read and the run is incomplete", FAILED)
    if sum(result.summary.values()) == 0:  # never a green run on nothing
        cov = result.coverage
        reasons: dict[str, int] = {}
        for u in cov["unmatched"]:
            reasons[u["reason"]] = reasons.get(u["reason"], 0) + 1
        why = ", ".join(f"{n} {r}" for r, n in sorted(reasons.items())) or "no traces"
        where = "under " + ", ".join(traces) if traces else "in the store"
        raise CliError(
            f"none of the {cov['traces']} trace(s) {where} has a request span to judge ({why}); "
            "nothing was classified: wrap each request in citeline's request() (docs/instrumentation.md)",
            FAILED,
        )


def _analyze_dask(args: argparse.Namespace, options: RunOptions, shown: bool) -> AnalysisResult:
    """``analyze --engine dask``: the same run (``options``) as partitions of whole traces on a Dask cluster."""
    try:
        return analyze_partitioned(
            args.db,
            options,
            Cluster(
                scheduler=args.scheduler,
                workers=args.workers,
                partitions=args.partitions,
                out=args.out,
                split_bytes=args.split_bytes,
            ),
            on_phase=(lambda name: err(f"{name}...")) if shown else None,
            on_progress=_counter if shown else None,
        )
    except ImportError as exc:  # dask not installed
        raise CliError(f"--engine dask needs dask.distributed ({exc}): pip install 'citeline[dask]'") from exc


def _progress(args: argparse.Namespace) -> Callable[[int, int], None] | None:
    if getattr(args, "quiet", False) or not sys.stderr.isatty():
        return None

    def show(done: int, total: int) -> None:
        pct = 100 * done / total if total else 100
        sys.stderr.write(f"\ringesting {done / 1e6:,.1f} / {total / 1e6:,.1f} MB ({pct:.0f}%)")
        if done >= total:
            sys.stderr.write("\n")
        sys.stderr.flush()

    return show


def _counter(name: str, done: int, total: int) -> None:
    """A phase's count on a terminal, one line rewritten in place: "classified traces: 300000 / 1000000"."""
    sys.stderr.write(f"\r{name}: {done} / {total}")
    if done >= total:
        sys.stderr.write("\n")
    sys.stderr.flush()


def print_result(result: AnalysisResult, fmt: str) -> None:
    """A run on standard output: its JSON, or tables for people."""
    if fmt == "json":  # streamed from the store: the same peak memory as the table
        result.write_json(sys.stdout)
        return
    from rich.console import Console  # lazy: rich costs ~0.1 s and only tables need it
    from rich.table import Table  # lazy: as above
    from rich.text import Text  # lazy: as above

    console = Console(width=None if sys.stdout.isatty() else 140)
    summary = result.summary
    table = Table(title=term(f"citeline run {result.run_id}: claims per bucket"))
    table.add_column("bucket")
    table.add_column("claims", justify="right")
    for bucket in BUCKETS:
        table.add_row(bucket, str(summary[bucket]))
    console.print(table)
    for line in [*result.coverage_lines(), result.skipped_text_line(), result.engine_line()]:
        if line:
            console.print(term(line), markup=False, highlight=False)
    failing = result.failing(40)
    if failing.height:
        detail = Table(title="failing claims (first 40)")
        for col in ("case", "claim", "bucket", "stage", "span", "reason"):
            detail.add_column(col, overflow="fold")
        for row in failing.iter_rows(named=True):
            cells = (
                row["case_id"] or "",
                row["gold_claim_id"] or (row["claim_text"] or "")[:40],
                row["bucket"],
                row["stage"] or "",
                row["span_id"] or "",
                row["reason"] or "",
            )
            detail.add_row(*(Text(term(c)) for c in cells))  # reasons hold [brackets]: never markup
        console.print(detail)
        for line in phoenix_footer(result.phoenix_url):
            console.print(Text(term(line)))
    if result.skipped:
        console.print(f"[yellow]{result.skipped} input item(s) skipped:[/yellow]")
        for p in [line for skipped, line in result.problem_lines() if skipped][:20]:
            console.print("  " + term(p), markup=False, highlight=False)


# --- rejudge ------------------------------------------------------------------------------


def rejudge_command(args: argparse.Namespace) -> int:
    require_store(args.db)
    judge = load_judge(args)
    if judge is None:  # --judge list
        return DONE
    con = open_for_reading(args.db)
    try:
        run_id, _ = resolve_run(con, args.run)
    finally:
        con.close()
    done = rejudge(args.db, run_id, judge, args.gold)
    if args.format == "json":
        print(
            json.dumps(
                {
                    "run_id": done.run_id,
                    "judge_before": done.before,
                    "judge_now": done.now,
                    "claims": done.claims,
                    "changes": done.changes,
                },
                indent=2,
                default=str,
            )
        )
        return DONE
    head = f"run {run_id}: {len(done.changes)} of {done.claims} claim(s) change, judge {done.before} -> {done.now}"
    print(term(head))
    for c in done.changes:
        print(
            term(
                f"  {c['case_id'] or '-'} / {c['claim']}: label {c['label_before']} -> {c['label_now']}, "
                f"bucket {c['bucket_before']} -> {c['bucket_now']}"
            )
        )
    return DONE
