"""``citeline report``: a stored run's reports, and the gates CI reads from its exit code."""

from __future__ import annotations

import argparse
from pathlib import Path

from citeline.analyzer.cli.errors import DONE, FAILED, err
from citeline.analyzer.cli.options import (
    AddCommand,
    add_db,
    add_format,
    add_out,
    add_phoenix,
    add_run,
    open_for_reading,
    phoenix_url,
    require_store,
)
from citeline.analyzer.reports.gates import check_gates, gates_failed, parse_gate
from citeline.analyzer.reports.html import render_html
from citeline.analyzer.reports.report import build_report, render_json, render_markdown, render_table


def register(add: AddCommand) -> None:
    """Add ``report`` to the parser."""
    rep = add(
        "report",
        "print the reports of a run: buckets, stage funnel, citation metrics, trend, regressions",
        "citeline report --format html --out report.html --fail-on 'grounding>0' --fail-on 'uncited>5%'",
    )
    add_db(rep)
    add_run(rep)
    add_format(rep, "table", "markdown", "html", "json")
    add_out(rep)
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
    add_phoenix(rep, "Phoenix base URL for span links (or CITELINE_PHOENIX_URL)")
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
    rep.set_defaults(func=report_command)


def report_command(args: argparse.Namespace) -> int:
    require_store(args.db)
    gates = [parse_gate(g) for g in args.fail_on or []]
    con = open_for_reading(args.db)
    try:
        report = build_report(con, args.run, previous=args.baseline, phoenix_url=phoenix_url(args), basis=args.basis)
    finally:
        con.close()
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
            err(f"report written to {args.out}")
        else:
            print(text, end="")
    for line in gates_failed(report.run_id, report.gates, len(gates)):
        err(line if line.startswith(" ") else f"citeline: {line}")
    return FAILED if report.gates else DONE
