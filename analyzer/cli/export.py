"""``citeline export``: a run's verdicts as OpenTelemetry GenAI evaluation events (registered by ``main``)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from citeline.analyzer.store import DEFAULT_DB

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
    p.add_argument("--run", default="latest", help="run id, or latest (default)")
    p.add_argument("--db", default=DEFAULT_DB, help=f"store file (default {DEFAULT_DB})")
    p.add_argument("--timeout", type=float, default=None, help="seconds per OTLP request (default: the OTel setting)")
    p.set_defaults(func=run)


def _err(text: str) -> None:
    print(text, file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    from citeline.analyzer.escaping import term
    from citeline.analyzer.exporters.otel import ExportError, export_file, export_otlp
    from citeline.analyzer.reports.report import ReportError, resolve_run
    from citeline.analyzer.store import connect

    if not Path(args.db).exists():
        _err(f"citeline: no store at {args.db}; run `citeline analyze --db {args.db} ...` first")
        return 2
    con = connect(args.db)
    try:
        run_id, _ = resolve_run(con, args.run)
        if args.out is not None:
            report = export_file(con, run_id, Path(args.out))
        else:
            report = export_otlp(con, run_id, args.otlp or None, timeout=args.timeout)
    except ReportError as exc:
        _err(f"citeline: {exc}")
        return 2
    except ExportError as exc:
        _err(f"citeline: {term(exc)}")
        return 1
    finally:
        con.close()
    print(
        f"run {run_id}: {report.claims} claim verdict(s) and {report.traces} trace verdict(s) sent to "
        f"{term(report.target)} as gen_ai.evaluation.result"
    )
    if report.already:
        print(f"run {run_id}: {report.already} verdict(s) were sent there before: not sent again")
    for problem in report.problems[:20]:
        _err(f"citeline: {term(problem)}")
    if len(report.problems) > 20:
        _err(f"citeline: ... and {len(report.problems) - 20} more verdict(s) not written")
    return 0
