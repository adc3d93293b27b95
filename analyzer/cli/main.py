"""The ``citeline`` command line: a thin layer over the library."""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from citeline.analyzer.store import BUCKETS, DEFAULT_DB

DOCS = "see README.md and docs/ for more"


def _err(*parts: Any, end: str = "\n") -> None:
    """A line for people on standard error: paths, ids and messages in it come from someone
    else's files, so escape sequences and control characters are removed (docs/security.md)."""
    from citeline.analyzer.escaping import term

    sys.stderr.write(term(" ".join(str(p) for p in parts)) + end)
    sys.stderr.flush()


def _print_result(result: Any, fmt: str) -> None:
    if fmt == "json":  # streamed from the store: the same peak memory as the table
        result.write_json(sys.stdout)
        return
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    console = Console(width=None if sys.stdout.isatty() else 140)
    summary = result.summary
    from citeline.analyzer.escaping import term

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
    if result.skipped:
        console.print(f"[yellow]{result.skipped} input item(s) skipped:[/yellow]")
        for p in [line for skipped, line in result.problem_lines() if skipped][:20]:
            console.print("  " + term(p), markup=False, highlight=False)


def _progress(args: argparse.Namespace) -> Any:
    if getattr(args, "quiet", False) or not sys.stderr.isatty():
        return None

    def show(done: int, total: int) -> None:
        pct = 100 * done / total if total else 100
        sys.stderr.write(f"\ringesting {done / 1e6:,.1f} / {total / 1e6:,.1f} MB ({pct:.0f}%)")
        if done >= total:
            sys.stderr.write("\n")
        sys.stderr.flush()

    return show


def _analyze(args: argparse.Namespace) -> int:
    from citeline.analyzer.claims.policy import PolicyError
    from citeline.analyzer.run.analyze import InputError, analyze
    from citeline.analyzer.scaleout.partitioned import EngineError

    if args.gold is None and args.corpus is None:
        _err(f"citeline: analyze needs a gold set (--gold FILE), a corpus (--corpus FILE) or both ({DOCS})")
        return 2
    if args.gold is not None and not Path(args.gold).exists():
        _err(f"citeline: gold file {args.gold} does not exist; pass --gold FILE ({DOCS})")
        return 2
    if args.corpus is not None and not Path(args.corpus).exists():
        _err(f"citeline: corpus file {args.corpus} does not exist; pass --corpus FILE ({DOCS})")
        return 2
    show = _progress(args)
    judge = _load_judge(args)
    if judge is None:
        return 0 if args.judge == "list" else 2
    keys: dict[str, str] = {}
    for opt in args.answer_key or []:
        role, sep, key = opt.partition("=")
        if not sep or not role.strip() or not key.strip():
            _err(f"citeline: --answer-key {opt!r}: write ROLE=KEY, e.g. claims=statements")
            return 2
        keys[role.strip()] = key.strip()
    from citeline.analyzer.run.options import DEFAULT_ABSTAIN_PHRASES, RunOptions
    from citeline.analyzer.sources.structured import AnswerKeysError

    try:
        options = RunOptions(  # what the run is, once, for whichever engine runs it
            gold=args.gold,
            corpus=args.corpus,
            traces=args.traces or None,
            # this process's engine uses the judge built above; Dask workers build their own from its name
            judge=judge if args.engine == "local" else args.judge,
            judge_options=_judge_options(args) or {},
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
                on_phase=(lambda name: _err(f"{name}...")) if show else None,
                # one line per slice: the phase lines of the next slice follow it
                on_progress=(lambda name, done, total: _err(f"{name}: {done} / {total}")) if show else None,
            )
    except (InputError, AnswerKeysError, PolicyError) as exc:
        _err(f"citeline: {exc}")
        return 2
    except EngineError as exc:
        _err(f"citeline: {exc}")
        return 2
    except ImportError as exc:  # --engine dask without dask installed
        _err(f"citeline: --engine dask needs dask.distributed ({exc}): pip install 'citeline[dask]'")
        return 2
    result.phoenix_url = _phoenix_url(args)
    _print_result(result, args.format)
    for skipped, line in result.problem_lines():  # the lines that say "skipped" are the JSON's `skipped`
        _err(f"citeline: {'skipped' if skipped else 'note'}: {line}")
    if result.warnings:  # draft gold cases: used, and said once per run
        _err(
            f"citeline: warning: {len(result.warnings)} gold case(s) are drafts (status: draft), e.g. "
            f"{result.warnings[0]}; `citeline validate` lists them",
        )
    failed = result.engine.get("failed_partitions") if result.engine else None
    if failed:  # a partition that failed twice is never a green run: its traces are not classified
        _err(f"citeline: partition(s) {', '.join(map(str, failed))} failed twice; the run is incomplete")
        return 1
    if sum(result.summary.values()) == 0:  # never a green run on nothing
        cov = result.coverage
        reasons: dict[str, int] = {}
        for u in cov["unmatched"]:
            reasons[u["reason"]] = reasons.get(u["reason"], 0) + 1
        why = ", ".join(f"{n} {r}" for r, n in sorted(reasons.items())) or "no traces"
        where = "under " + ", ".join(args.traces) if args.traces else "in the store"
        _err(
            f"citeline: none of the {cov['traces']} trace(s) {where} has a request span to judge ({why}); "
            "nothing was classified: wrap each request in citeline's request() (docs/instrumentation.md)",
        )
        return 1
    return 0


def _counter(name: str, done: int, total: int) -> None:
    """A phase's count on a terminal, one line rewritten in place: "classified traces: 300000 / 1000000"."""
    sys.stderr.write(f"\r{name}: {done} / {total}")
    if done >= total:
        sys.stderr.write("\n")
    sys.stderr.flush()


def _analyze_dask(args: argparse.Namespace, options: Any, shown: bool) -> Any:
    """``analyze --engine dask``: the same run (``options``) as partitions of whole traces on a Dask cluster."""
    from citeline.analyzer.scaleout.partitioned import Cluster, analyze_partitioned

    return analyze_partitioned(
        args.db,
        options,
        Cluster(scheduler=args.scheduler, workers=args.workers, partitions=args.partitions),
        on_phase=(lambda name: _err(f"{name}...")) if shown else None,
        on_progress=_counter if shown else None,
    )


def _validate(args: argparse.Namespace) -> int:
    from citeline.analyzer.escaping import term
    from citeline.analyzer.gold.goldset import load_gold

    gold = load_gold(args.gold_file, advise=True)
    for e in gold.errors:
        print(term(e))
    for w in gold.warnings:
        print(term(f"warning: {w}"))
    drafts = f", {len(gold.warnings)} warning(s)" if gold.warnings else ""
    print(f"{len(gold.corpus)} chunks, {len(gold.cases)} cases, {len(gold.errors)} problem(s){drafts}")
    if gold.unreadable is not None:  # nothing could be read: the input cannot be used
        return 2
    return 1 if gold.errors else 0


def _load_judge(args: argparse.Namespace) -> Any:
    """The judge --judge names, built with --judge-option KEY=VALUE; None (after saying why) when it cannot be."""
    from citeline.analyzer.judges import JudgeNotFound, available, load

    if args.judge == "list":
        for name, where in sorted(available().items()):
            print(f"{name}\t{where}")
        return None
    options = _judge_options(args)
    if options is None:
        return None
    try:
        return load(args.judge, **options)
    except (JudgeNotFound, ValueError, TypeError, ImportError) as exc:
        _err(f"citeline: --judge {args.judge}: {exc}")
        return None


def _judge_options(args: argparse.Namespace) -> dict[str, str] | None:
    """--judge-option KEY=VALUE as a dict; None (after saying why) for one not so written."""
    options: dict[str, str] = {}
    for opt in args.judge_option or []:
        key, sep, value = opt.partition("=")
        if not sep or not key.strip():
            _err(f"citeline: --judge-option {opt!r}: write KEY=VALUE, e.g. model=gpt-4o-mini")
            return None
        options[key.strip()] = value
    return options


def _calibrate(args: argparse.Namespace) -> int:
    from citeline.analyzer.labels.calibrate import agreement, examples, gold_examples

    judge = _load_judge(args)
    if judge is None:
        return 0 if args.judge == "list" else 2
    if args.against_gold:
        if not Path(args.db).is_file():
            _err(f"citeline: --against-gold reads a store: {args.db} does not exist")
            return 2
        found, left_out, problems, run = gold_examples(args.db, args.run)
        source = f"{args.db} run {run} (human labels)"
    else:
        if not args.labels_file or not Path(args.labels_file).is_file():
            _err(f"citeline: labelled file {args.labels_file!r} not found; give a CSV or JSONL file")
            return 2
        corpus = None
        if args.gold:
            from citeline.analyzer.gold.goldset import load_gold

            corpus = {cid: c.text for cid, c in load_gold(args.gold).corpus.items()}
        found, left_out, problems = examples(args.labels_file, corpus)
        source = args.labels_file
    result = agreement(judge, found, source)
    result.left_out, result.problems = left_out, problems
    for p in problems:
        _err(f"citeline: skipped: {p}")
    if args.format == "json":
        print(json.dumps(result.to_dict(), indent=2))
    else:
        from citeline.analyzer.escaping import term

        print("\n".join(term(line) for line in _agreement_table(result).splitlines()))
    return 0 if result.n else 1


def _agreement_table(a: Any) -> str:
    lines = [
        f"judge {a.judge} on {a.n} labelled claims from {a.source} ({a.left_out} left out, N/A or no evidence)",
        f"  accuracy {a.accuracy:.3f}   Cohen's kappa {a.kappa:.3f}   "
        f"false support {a.false_support:.3f}   missed support {a.missed_support:.3f}",
        f"  claims with numbers, dates or amounts (n={a.with_values.n}): accuracy {a.with_values.accuracy:.3f}   "
        f"kappa {a.with_values.kappa:.3f}   false support {a.with_values.false_support:.3f}   "
        f"missed support {a.with_values.missed_support:.3f}",
        "  people \\ judge   " + "  ".join(f"{lb:>14}" for lb in a.confusion["supported"]),
    ]
    for human, row in a.confusion.items():
        lines.append(f"  {human:<15} " + "  ".join(f"{n:>14}" for n in row.values()))
    if a.judge_errors:
        lines.append(f"  the judge failed on {a.judge_errors} claim(s): counted as not_applicable (not entailed)")
    return "\n".join(lines)


def _phoenix_url(args: argparse.Namespace) -> str | None:
    import os

    url = getattr(args, "phoenix", None) or os.environ.get("CITELINE_PHOENIX_URL")
    return url.rstrip("/") if url else None


def _pull(args: argparse.Namespace) -> int:
    from citeline.analyzer.phoenix.annotate import PhoenixError, pull
    from citeline.analyzer.store import connect

    con = connect(args.db)
    try:
        folder = Path(args.db).resolve().parent / "citeline-pulled"
        report = pull(con, args.phoenix, args.project, since=args.since, folder=folder)
    except PhoenixError as exc:
        _err(f"citeline: {exc}")
        return 1
    finally:
        con.close()
    print(
        f"pulled {report.spans} span(s) in {report.traces} trace(s) from project {args.project!r}; "
        f"{report.ingest.spans_added} new in {args.db}" + (f" (copy: {report.file})" if report.file else "")
    )
    for p in report.ingest.problems:
        _err(f"citeline: skipped: {p}")
    return 0


def _gold(args: argparse.Namespace) -> int:
    from citeline.analyzer.drafting.draft import draft_from_traces, dump, import_phoenix_dataset
    from citeline.analyzer.phoenix.annotate import PhoenixError

    try:
        if args.gold_command == "import":
            drafted = import_phoenix_dataset(
                args.phoenix,
                args.phoenix_dataset,
                question_key=args.question_key,
                answer_key=args.answer_key,
                support_key=args.support_key,
                id_key=args.id_key,
                corpus=args.corpus,
            )
            header = f"gold set imported by citeline from Phoenix dataset {args.phoenix_dataset!r} at {args.phoenix}"
        elif getattr(args, "from_feedback", False):
            from citeline.analyzer.drafting.feedback import draft_from_feedback
            from citeline.analyzer.reports.report import ReportError

            if args.traces:
                _err("citeline: gold draft takes --traces or --from-feedback, not both")
                return 2
            if not Path(args.db).is_file():
                _err(f"citeline: --from-feedback reads a store: {args.db} does not exist")
                return 2
            try:
                drafted = draft_from_feedback(args.db, args.run, corpus=args.corpus)
            except ReportError as exc:
                _err(f"citeline: {exc}")
                return 2
            header = (
                f"DRAFT gold cases by citeline from the user reports in {args.db} (run {args.run}).\n"
                "Each case is a report's claim with the chunks it cited as proposed support, and the incident "
                "as it happened;\nfix the support, then delete 'status: draft'."
            )
        else:
            if not args.traces:
                _err("citeline: gold draft needs --traces DIR (or --from-feedback)")
                return 2
            for t in args.traces:
                if not Path(t).exists():
                    _err(f"citeline: --traces {t}: no such file or folder")
                    return 2
            drafted = draft_from_traces(args.traces, corpus=args.corpus)
            header = (
                f"DRAFT gold set by citeline from the traces under {', '.join(args.traces)}.\n"
                "Every case is status: draft: check its claims and support chunks, then delete that line."
            )
    except (PhoenixError, ValueError) as exc:
        _err(f"citeline: {exc}")
        return 2
    text = dump(drafted, header)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    for p in drafted.problems:
        _err(f"citeline: {p}")
    where = args.out or "standard output"
    _err(f"{len(drafted.cases)} case(s), {len(drafted.corpus)} chunk(s) written to {where}")
    return 0 if drafted.cases else 1


def _annotate(args: argparse.Namespace) -> int:
    from citeline.analyzer.phoenix.annotate import PhoenixError, annotate
    from citeline.analyzer.reports.report import ReportError, resolve_run
    from citeline.analyzer.store import connect

    if not Path(args.db).exists():
        _err(
            f"citeline: no store at {args.db}; run `citeline analyze --db {args.db} ...` first",
        )
        return 2
    con = connect(args.db)
    try:
        run_id, _ = resolve_run(con, args.run)
        report = annotate(con, args.phoenix.rstrip("/"), run_id, documents_as_llm=args.documents_as_llm)
    except (PhoenixError, ReportError) as exc:
        _err(f"citeline: {exc}")
        return 1
    finally:
        con.close()
    print(f"run {run_id}: {report.annotations} annotation(s) named 'citeline' written in {report.batches} batch(es)")
    print(f"run {run_id}: {report.trace_annotations} trace summary annotation(s) named 'citeline.trace' written")
    print(
        f"run {run_id}: {report.document_annotations} retrieved document(s) marked support or not "
        "('citeline.gold_relevance')"
    )
    if report.documents_not_held:
        print(
            f"run {run_id}: {report.documents_not_held} retrieved chunk(s) have no OpenInference document on their "
            "span (its attribute limit), so Phoenix holds none to annotate: left out"
        )
    for span, why in report.rejected:
        _err(f"citeline: Phoenix refused the annotations of span {span}: {why}")
    if report.invalid_spans:
        _err(
            f"citeline: {len(report.invalid_spans)} span id(s) in the store are not OTLP span ids (16 hex digits) "
            "and were not annotated: " + ", ".join(repr(s) for s in report.invalid_spans[:10])
        )
    if report.missing_spans:
        _err(
            f"citeline: {len(report.missing_spans)} span(s) are not in that Phoenix (traces not sent there?): "
            + ", ".join(report.missing_spans[:10]),
        )
    return 1 if report.rejected else 0  # something Phoenix refused is lost: say so in the exit code


def _rejudge(args: argparse.Namespace) -> int:
    from citeline.analyzer.escaping import term
    from citeline.analyzer.reports.report import ReportError, resolve_run
    from citeline.analyzer.run.rejudge import rejudge

    if not Path(args.db).exists():
        _err(f"citeline: no store at {args.db}; run `citeline analyze --db {args.db} ...` first")
        return 2
    judge = _load_judge(args)
    if judge is None:
        return 0 if args.judge == "list" else 2
    con = _open_for_reading(args.db)
    try:
        run_id, _ = resolve_run(con, args.run)
    except ReportError as exc:
        _err(f"citeline: {exc}")
        return 2
    finally:
        con.close()
    done = rejudge(args.db, run_id, judge, args.gold)
    if args.format == "json":
        print(json.dumps({"run_id": done.run_id, "judge_before": done.before, "judge_now": done.now,
                          "claims": done.claims, "changes": done.changes}, indent=2, default=str))  # fmt: skip
        return 0
    head = f"run {run_id}: {len(done.changes)} of {done.claims} claim(s) change, judge {done.before} -> {done.now}"
    print(term(head))
    for c in done.changes:
        print(
            term(
                f"  {c['case_id'] or '-'} / {c['claim']}: label {c['label_before']} -> {c['label_now']}, "
                f"bucket {c['bucket_before']} -> {c['bucket_now']}"
            )
        )
    return 0


def _sample(args: argparse.Namespace) -> int:
    from citeline.analyzer.labels.sample import draw, write
    from citeline.analyzer.reports.report import ReportError, resolve_run

    if not Path(args.db).exists():
        _err(f"citeline: no store at {args.db}; run `citeline analyze --db {args.db} ...` first")
        return 2
    con = _open_for_reading(args.db)
    try:
        run_id, _ = resolve_run(con, args.run)
        sheet = draw(con, run_id, args.n, args.stratify, args.seed)
    except (ReportError, ValueError) as exc:
        _err(f"citeline: {exc}")
        return 2
    finally:
        con.close()
    write(sheet, Path(args.out))
    shares = ", ".join(f"{n} {s}" for s, n in sorted(sheet.strata.items()))
    print(
        f"{len(sheet.rows)} of {sheet.population} claim(s) of run {run_id} written to {args.out}"
        + (f" ({shares})" if shares else "")
        + "; fill in the label column, then: citeline analyze --labels "
        + args.out
    )
    return 0 if sheet.rows else 1


def _open_for_reading(db: str) -> Any:
    """Read-only (a report writes nothing, so a read-only store is fine); a store made by an older
    citeline is opened once for writing to gain the tables reports read."""
    from citeline.analyzer.store import connect

    con = connect(db, read_only=True)
    tables = {t for (t,) in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
    has_flags = con.execute(  # the bucket table's columns (a store no analyze of this version opened yet)
        "SELECT count(*) FROM information_schema.columns WHERE table_name = 'bucket_order' AND column_name = 'flag'"
    ).fetchall()[0][0]
    has_basis = con.execute(  # claim_results.basis (a store no analyze of this version opened yet)
        "SELECT count(*) FROM information_schema.columns WHERE table_name = 'claim_results' AND column_name = 'basis'"
    ).fetchall()[0][0]
    if {"unmatched_traces", "missing_cases"} <= tables and has_flags and has_basis:
        return con
    con.close()
    return connect(db)


def _report(args: argparse.Namespace) -> int:

    from citeline.analyzer.reports.html import render_html
    from citeline.analyzer.reports.report import (
        ReportError,
        build_report,
        check_gates,
        parse_gate,
        render_json,
        render_markdown,
        render_table,
    )

    if not Path(args.db).exists():
        _err(
            f"citeline: no store at {args.db}; run `citeline analyze --db {args.db} ...` first",
        )
        return 2
    try:
        gates = [parse_gate(g) for g in args.fail_on or []]
        con = _open_for_reading(args.db)
        try:
            report = build_report(
                con, args.run, previous=args.baseline, phoenix_url=_phoenix_url(args), basis=args.basis
            )
        finally:
            con.close()
    except ReportError as exc:
        _err(f"citeline: {exc}")
        return 2
    report.gates = check_gates(report, gates, allow_empty=args.allow_empty)
    if args.format == "table" and not args.out:
        render_table(report)
    else:
        text = {
            "markdown": render_markdown,
            "html": render_html,
            "json": render_json,
            "table": render_markdown,
        }[args.format](report)
        if args.out:
            Path(args.out).write_text(text, encoding="utf-8")
            _err(f"report written to {args.out}")
        else:
            print(text, end="")
    for line in report.gates:
        _err(f"citeline: {line}")
    return 1 if report.gates else 0


def _demo(args: argparse.Namespace) -> int:
    from citeline.analyzer.run.analyze import analyze
    from citeline.examples.demo import gold_path, run_scenarios
    from citeline.instrumentation import configure

    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S%f")
    trace_dir = Path(args.traces) / f"run-{stamp}"
    handle = configure(service_name="policy-bot", trace_dir=trace_dir)
    try:
        run_scenarios(fixed=set(args.fix or []))
    except KeyError as exc:
        _err(f"citeline: {exc.args[0]}")
        return 2
    finally:
        handle.shutdown()
    _err(f"example app: traces written to {trace_dir}/")
    result = analyze(args.db, gold=gold_path(), traces=[trace_dir], judge="rules", progress=None)
    _print_result(result, args.format)
    _err(f"store: {args.db} (run {result.run_id})")
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser; every command has help with an example."""
    parser = argparse.ArgumentParser(
        prog="citeline",
        description="Find which component of a RAG pipeline broke a citation.",
        epilog=DOCS,
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def add(name: str, help_: str, example: str) -> argparse.ArgumentParser:
        p = sub.add_parser(
            name,
            help=help_,
            description=help_,
            epilog=f"example: {example}",
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        return p

    demo = add(
        "demo",
        "run the bundled example app over its gold set, analyze it and print the buckets",
        "citeline demo",
    )
    demo.add_argument("--traces", default="citeline-demo-traces", help="folder for the demo's trace files")
    demo.add_argument("--db", default=DEFAULT_DB, help=f"store file (default {DEFAULT_DB})")
    demo.add_argument("--format", choices=("table", "json"), default="table")
    demo.add_argument(
        "--fix",
        action="append",
        metavar="SCENARIO",
        help="run this broken scenario with its fix (repeatable), e.g. --fix wrong-number",
    )
    demo.set_defaults(func=_demo)

    rep = add(
        "report",
        "print the reports of a run: buckets, stage funnel, citation metrics, trend, regressions",
        "citeline report --format html --out report.html --fail-on 'grounding>0' --fail-on 'uncited>5%'",
    )
    rep.add_argument("--db", default=DEFAULT_DB, help=f"store file (default {DEFAULT_DB})")
    rep.add_argument("--run", default="latest", help="run id, or 'latest' (default)")
    rep.add_argument("--format", choices=("table", "markdown", "html", "json"), default="table")
    rep.add_argument("--out", help="write to this file instead of standard output")
    rep.add_argument(
        "--fail-on",
        action="append",
        metavar="NAME>N[%]",
        help="exit 1 when a bucket exceeds N claims or N%% of claims ('failing' = any bucket but ok); "
        "on the input: unmatched>N (traces that joined no case), coverage<N%% (joined/traces), "
        "missing_cases>N (gold cases no trace answered); a citation metric, e.g. aligned_precision<0.9 or "
        "validity<95%%; regressions>0 (app regressions since the run compared with: a judge or gold change is "
        "never one). A bucket gate counts one basis with @gold or @corpus, e.g. 'grounding>0@corpus'. "
        "Repeatable. A run with no claims fails every gate",
    )
    rep.add_argument(
        "--allow-empty",
        action="store_true",
        help="let gates pass on a run that classified no claims (otherwise that is a failure)",
    )
    rep.add_argument("--phoenix", help="Phoenix base URL for span links (or CITELINE_PHOENIX_URL)")
    rep.add_argument(
        "--basis",
        choices=("gold", "corpus"),
        help="only the claims judged on this basis: gold (traces that joined a gold case) or corpus (the rest, "
        "judged against the corpus alone); coverage always counts both",
    )
    rep.add_argument(
        "--baseline",
        metavar="RUN",
        help="compare with this run instead of the previous one: after a judge or gold change, the first run "
        "of the new evaluator is the baseline the app's regressions are read against",
    )
    rep.set_defaults(func=_report)

    pl = add(
        "pull",
        "copy spans from a running Phoenix into the store (incremental)",
        "citeline pull --phoenix http://localhost:6006 --project policy-bot --since 24h",
    )
    pl.add_argument("--phoenix", required=True, help="Phoenix base URL (API key from PHOENIX_API_KEY)")
    pl.add_argument("--project", required=True, help="Phoenix project name")
    pl.add_argument("--since", help="first pull only: how far back, e.g. 24h, 7d, or an ISO time")
    pl.add_argument("--db", default=DEFAULT_DB, help=f"store file (default {DEFAULT_DB})")
    pl.set_defaults(func=_pull)

    an2 = add(
        "annotate",
        "write each failing claim onto its breaking span in Phoenix, as an annotation",
        "citeline annotate --phoenix http://localhost:6006 --run latest",
    )
    an2.add_argument("--phoenix", required=True, help="Phoenix base URL (API key from PHOENIX_API_KEY)")
    an2.add_argument("--run", default="latest", help="run id, or 'latest' (default)")
    an2.add_argument(
        "--documents-as-llm",
        action="store_true",
        help="write each retrieved document's gold relevance with annotator kind LLM: Phoenix computes its "
        "retrieval metrics (NDCG, precision, hit) only from LLM document annotations (default CODE)",
    )
    an2.add_argument("--db", default=DEFAULT_DB, help=f"store file (default {DEFAULT_DB})")
    an2.set_defaults(func=_annotate)

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
    an.add_argument("--db", default=DEFAULT_DB, help=f"store file (default {DEFAULT_DB})")
    _judge_args(an)
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
        "transition, question, meta, heading, table_header, list_number, bibliography",
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
    an.add_argument("--format", choices=("table", "json"), default="table")
    an.add_argument("--quiet", action="store_true", help="no progress output")
    an.add_argument("--phoenix", help="Phoenix base URL: failing claims get span links (or CITELINE_PHOENIX_URL)")
    an.set_defaults(func=_analyze)

    va = add(
        "validate",
        "check a gold file; every problem names file, line/record and field",
        "citeline validate gold.yaml",
    )
    va.add_argument("gold_file")
    va.add_argument("--db", default=DEFAULT_DB, help="accepted for symmetry; validate reads no store")
    va.set_defaults(func=_validate)

    go = add(
        "gold",
        "make a gold set from a Phoenix dataset (import) or from real traces (draft)",
        "citeline gold draft --traces traces/ --out gold.yaml",
    )
    go.add_argument(
        "--db", default=DEFAULT_DB, help="the store `gold draft --from-feedback` reads (gold writes a YAML file)"
    )
    gsub = go.add_subparsers(dest="gold_command", required=True, metavar="SUBCOMMAND")
    gi = gsub.add_parser(
        "import",
        help="a Phoenix dataset's examples as gold cases",
        description="a Phoenix dataset's examples as gold cases: question, expected answer (split into claims), "
        "and the ids of the documents that support it; each field is looked up in the example's input, "
        "then output, then metadata",
        epilog="example: citeline gold import --phoenix http://localhost:6006 --phoenix-dataset policy-qa "
        "--support-key doc_ids --corpus corpus.yaml --out gold.yaml",
    )
    gi.add_argument("--phoenix", required=True, help="Phoenix base URL (API key from PHOENIX_API_KEY)")
    gi.add_argument("--phoenix-dataset", required=True, metavar="NAME", help="the dataset's name")
    gi.add_argument("--question-key", default="question", help="field with the question (default question)")
    gi.add_argument("--answer-key", default="answer", help="field with the expected answer (default answer)")
    gi.add_argument("--support-key", default="support", help="field with the supporting document ids (default support)")
    gi.add_argument("--id-key", help="field with the case id (default: the example's id)")
    gi.add_argument("--corpus", help="a gold file whose corpus the cases cite (ids, text, lifecycle)")
    gi.add_argument("--out", help="write the gold YAML here instead of standard output")
    gd = gsub.add_parser(
        "draft",
        help="a draft gold set from real traces, for a person to confirm",
        description="one case per distinct question in the traces, drafted from its newest trace: the "
        "answer's claims with the chunks each cited as proposed support; every case is marked "
        "status: draft, which validate and analyze warn about until a person confirms it",
        epilog="example: citeline gold draft --traces traces/ --out gold.yaml",
    )
    gd.add_argument("--traces", action="append", help="trace file or folder (repeatable)")
    gd.add_argument(
        "--from-feedback",
        action="store_true",
        help="one draft case per user report (citeline.feedback) in a run of --db, instead of --traces",
    )
    gd.add_argument("--run", default="latest", help="with --from-feedback: the run (default latest)")
    gd.add_argument("--corpus", help="a gold file whose corpus to start from (documents join it by content)")
    gd.add_argument("--out", help="write the gold YAML here instead of standard output")
    go.set_defaults(func=_gold)

    rj = add(
        "rejudge",
        "judge a stored run's claims again with another judge and show the label changes (the run is kept)",
        "citeline rejudge --run latest --judge rules --judge-option version=2",
    )
    rj.add_argument("--run", default="latest", help="run id, or 'latest' (default)")
    _judge_args(rj)
    rj.add_argument("--gold", help="the gold set (default: the one the run was analyzed with)")
    rj.add_argument("--format", choices=("table", "json"), default="table")
    rj.add_argument("--db", default=DEFAULT_DB, help=f"store file (default {DEFAULT_DB})")
    rj.set_defaults(func=_rejudge)

    sa = add(
        "sample",
        "draw a blind, seeded sample of a run's claims for people to label (a CSV sheet)",
        "citeline sample --run latest --n 50 --stratify bucket --out sheet.csv   # then: analyze --labels sheet.csv",
    )
    sa.add_argument("--run", default="latest", help="run id, or 'latest' (default)")
    sa.add_argument("--n", type=int, default=50, help="rows to draw (default 50)")
    sa.add_argument("--stratify", choices=("bucket", "basis", "judge-label"), help="equal shares per stratum")
    sa.add_argument("--seed", type=int, default=0, help="same seed, same sheet (default 0)")
    sa.add_argument("--out", required=True, help="the CSV sheet to write")
    sa.add_argument("--db", default=DEFAULT_DB, help=f"store file (default {DEFAULT_DB})")
    sa.set_defaults(func=_sample)

    ca = add(
        "calibrate",
        "measure a judge against human support labels (accuracy, Cohen's kappa)",
        "citeline calibrate tests/data/expertqa/rand_test.jsonl",
    )
    ca.add_argument(
        "labels_file",
        nargs="?",
        help="CSV/JSONL rows {claim, evidence | chunks, label}; ExpertQA, WiCE and RGB files as published",
    )
    _judge_args(ca)
    ca.add_argument("--gold", help="gold set whose corpus gives the text of rows that name chunks instead of evidence")
    ca.add_argument(
        "--against-gold",
        action="store_true",
        help="measure the judge on the claims people labelled in a run (analyze --labels), read from --db",
    )
    ca.add_argument("--run", help="with --against-gold: the run to read (default: the latest with labels)")
    ca.add_argument("--format", choices=("table", "json"), default="table")
    ca.add_argument("--db", default=DEFAULT_DB, help=f"store for --against-gold (default {DEFAULT_DB})")
    ca.set_defaults(func=_calibrate)

    from citeline.analyzer.cli.perturb import register as register_perturb

    register_perturb(add)
    return parser


def _judge_args(p: argparse.ArgumentParser) -> None:
    from citeline.analyzer.judges import available

    p.add_argument(
        "--judge",
        default="rules",
        help=f"support judge (default rules); installed: {', '.join(sorted(available()))}; 'list' shows where from",
    )
    p.add_argument(
        "--judge-option",
        action="append",
        metavar="KEY=VALUE",
        help="an option for the judge (repeatable), e.g. model=gpt-4o-mini or coverage=0.6",
    )


def _check_paths(args: argparse.Namespace) -> str | None:
    """One line about a path argument that cannot work, before anything runs."""
    labels = getattr(args, "labels", None)
    if labels and not Path(labels).is_file():
        what = "a folder" if Path(labels).is_dir() else "missing"
        return f"--labels {labels}: {what}; give a CSV or JSONL file of human labels"
    out = getattr(args, "out", None)
    if out:
        if Path(out).is_dir():
            return f"--out {out} is a folder; give a file name such as report.html"
        if not Path(out).resolve().parent.is_dir():
            return f"--out {out}: the folder {Path(out).parent} does not exist"
    return None


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``citeline`` console script."""
    from citeline.analyzer.store import StoreError

    args = build_parser().parse_args(argv)
    problem = _check_paths(args)
    if problem:
        _err(f"citeline: {problem}")
        return 2
    try:
        return int(args.func(args))
    except StoreError as exc:
        _err(f"citeline: {exc}")
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
