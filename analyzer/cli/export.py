"""``citeline export``: a run's verdicts as OpenTelemetry GenAI evaluation events (registered by ``main``)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

from citeline.analyzer.cli.errors import DONE, err
from citeline.analyzer.cli.options import add_db, add_run, require_store
from citeline.analyzer.escaping import term
from citeline.analyzer.exporters.otel import export_file, export_otlp
from citeline.analyzer.reports.report import resolve_run
from citeline.analyzer.store import connect

EXAMPLE = (
    "citeline export --otlp http://localhost:4318 --run latest\n"
    "  (credentials: OTEL_EXPORTER_OTLP_HEADERS='authorization=Bearer ...'; a file: --out verdicts.jsonl)"
)


def register(add: Callable[[str, str, str], argparse.ArgumentParser]) -> None:
    """Add the ``export`` command to the parser (``add`` is the CLI's own sub-command maker)."""
    p = add(
        "export",
        "send a run's verdicts to any OpenTelemetry backend as gen_ai.evaluation.result events on the spans "
        "they judge (docs/otel-export.md); a second export of a run sends nothing new",
        EXAMPLE,
    )
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument(
        "--otlp",
        nargs="?",
        const="",
        metavar="URL",
        help="OTLP/HTTP base URL (/v1/logs is added), e.g. http://localhost:4318; without URL: "
        "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT. Headers (credentials) only from "
        "OTEL_EXPORTER_OTLP_HEADERS / OTEL_EXPORTER_OTLP_LOGS_HEADERS, never a flag",
    )
    where.add_argument("--out", metavar="FILE", help="append OTLP/JSON log lines (resourceLogs) to this file")
    add_run(p)
    add_db(p)
    p.add_argument("--timeout", type=float, default=None, help="seconds per OTLP request (default: the OTel setting)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    require_store(args.db, "export")
    con = connect(args.db)
    try:
        run_id, _ = resolve_run(con, args.run)
        if args.out is not None:
            report = export_file(con, run_id, Path(args.out))
        else:
            report = export_otlp(con, run_id, args.otlp or None, timeout=args.timeout)
    finally:
        con.close()
    print(
        f"run {run_id}: {report.claims} claim verdict(s) and {report.traces} trace verdict(s) sent to "
        f"{term(report.target)} as gen_ai.evaluation.result"
    )
    if report.already:
        print(f"run {run_id}: {report.already} verdict(s) were sent there before: not sent again")
    for problem in report.problems[:20]:
        err(f"citeline: {problem}")
    if len(report.problems) > 20:
        err(f"citeline: ... and {len(report.problems) - 20} more verdict(s) not written")
    return DONE
