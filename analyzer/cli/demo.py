"""``citeline demo``: the bundled example app over its gold set, analyzed, and with ``--phoenix`` sent to
Phoenix over OTLP and annotated there (docs/phoenix.md)."""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import sys
from pathlib import Path

from citeline.analyzer.cli.errors import DONE, CliError, err
from citeline.analyzer.cli.options import AddCommand, add_db, add_format, add_phoenix, open_for_reading, phoenix_url
from citeline.analyzer.cli.run import print_result
from citeline.analyzer.escaping import term
from citeline.analyzer.phoenix.arrival import project_id, reachable, wait_for_spans
from citeline.analyzer.run.analyze import analyze
from citeline.examples.demo import check_fixes, gold_path, run_scenarios
from citeline.instrumentation import configure
from citeline.instrumentation.redact import public_url, redact_url
from citeline.instrumentation.settings import PHOENIX_API_KEY, otlp_traces_endpoint

DEMO_PROJECT = "citeline-demo"
"""The Phoenix project ``citeline demo --phoenix`` sends to unless --project names another."""


def register(add: AddCommand) -> None:
    """Add ``demo`` to the parser."""
    demo = add(
        "demo",
        "run the bundled example app over its gold set, analyze it and print the buckets (with --phoenix: "
        "send it to Phoenix and annotate it there too)",
        "citeline demo --phoenix http://localhost:6006",
    )
    demo.add_argument("--traces", default="citeline-demo-traces", help="folder for the demo's trace files")
    add_db(demo)
    add_format(demo, "table", "json")
    demo.add_argument(
        "--fix",
        action="append",
        metavar="SCENARIO",
        help="run this broken scenario with its fix (repeatable), e.g. --fix wrong-number",
    )
    add_phoenix(
        demo,
        "a running Phoenix (or CITELINE_PHOENIX_URL): the spans also go there over OTLP/HTTP, then the run is "
        "annotated and the table links each failure, e.g. --phoenix http://localhost:6006 (docs/phoenix.md)",
    )
    demo.add_argument(
        "--project",
        default=DEMO_PROJECT,
        help=f"the Phoenix project the demo's spans land in (default {DEMO_PROJECT})",
    )
    demo.set_defaults(func=demo_command)


def demo_command(args: argparse.Namespace) -> int:
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S%f")
    trace_dir = Path(args.traces) / f"run-{stamp}"
    try:  # before anything is configured: a wrong --fix leaves no tracing behind
        check_fixes(set(args.fix or []))
    except KeyError as exc:  # --fix names no scenario
        raise CliError(str(exc.args[0])) from exc
    phoenix = phoenix_url(args)
    if phoenix is not None:  # a wrong URL or key stops here, before the app runs
        reachable(phoenix)
    # to Phoenix's OTLP receiver, else wherever the standard OTEL_EXPORTER_OTLP_* variables say (if anywhere)
    endpoint = f"{phoenix}/v1/traces" if phoenix else otlp_traces_endpoint()
    key = PHOENIX_API_KEY.get() if phoenix else None
    started = dt.datetime.now(dt.UTC)
    handle = configure(
        service_name="policy-bot",
        project=args.project,
        trace_dir=trace_dir,
        otlp_endpoint=endpoint,
        headers={"authorization": f"Bearer {key}"} if key else None,
    )
    try:
        run_scenarios(fixed=set(args.fix or []))
    finally:
        handle.shutdown()  # flushes: every span is sent before the run is analyzed
    sent = f" and sent to {redact_url(endpoint)} (project {args.project!r})" if endpoint else ""
    err(term(f"example app: traces written to {trace_dir}/{sent}"))
    result = analyze(args.db, gold=gold_path(), traces=[trace_dir], judge="rules", progress=None)
    result.phoenix_url = phoenix
    print_result(result, args.format)
    err(f"store: {args.db} (run {result.run_id})")
    if phoenix is None:
        return DONE
    return _demo_in_phoenix(args, phoenix, result.run_id, started - dt.timedelta(minutes=1))


def _demo_in_phoenix(args: argparse.Namespace, phoenix: str, run_id: str, since: dt.datetime) -> int:
    """Wait until the run's spans are in the project (Phoenix stores them a moment after the export),
    then ``citeline annotate`` it as that command would, and name the project's page."""
    from citeline.analyzer.cli import phoenix as phoenix_cli  # lazy: only the Phoenix path needs it

    con = open_for_reading(args.db)
    try:
        span_ids = [
            str(row[0])
            for row in con.execute(
                "SELECT span_id FROM spans WHERE trace_id IN (SELECT trace_id FROM case_results WHERE run_id = ?)",
                [run_id],
            ).fetchall()
        ]
    finally:
        con.close()
    wait_for_spans(phoenix, args.project, span_ids, since)
    parser = argparse.ArgumentParser(prog="citeline")
    commands = parser.add_subparsers()
    phoenix_cli.register(lambda name, help_, example: commands.add_parser(name))
    annotate_args = parser.parse_args(["annotate", "--phoenix", phoenix, "--run", run_id, "--db", str(args.db)])
    # with --format json, standard output is the run's JSON alone: what annotate says goes to stderr
    with contextlib.redirect_stdout(sys.stderr if args.format == "json" else sys.stdout):
        code = int(phoenix_cli.annotate_command(annotate_args))
        page = f"{public_url(phoenix)}/projects/{project_id(phoenix, args.project)}/spans"
        print(term(f"Phoenix: project {args.project!r}: {page}"))
    return code
