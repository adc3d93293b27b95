"""``citeline pull`` and ``annotate``: spans from a running Phoenix in, failing claims back onto its spans."""

from __future__ import annotations

import argparse
from pathlib import Path

from citeline.analyzer.cli.errors import DONE, FAILED, err
from citeline.analyzer.cli.options import AddCommand, add_db, add_phoenix, add_run, require_store
from citeline.analyzer.escaping import term
from citeline.analyzer.phoenix import annotate, pull
from citeline.analyzer.reports.report import resolve_run
from citeline.analyzer.store import connect


def register(add: AddCommand) -> None:
    """Add ``pull`` and ``annotate`` to the parser."""
    pl = add(
        "pull",
        "copy spans from a running Phoenix into the store (incremental)",
        "citeline pull --phoenix http://localhost:6006 --project policy-bot --since 24h",
    )
    add_phoenix(pl)
    pl.add_argument("--project", required=True, help="Phoenix project name")
    pl.add_argument("--since", help="first pull only: how far back, e.g. 24h, 7d, or an ISO time")
    add_db(pl)
    pl.set_defaults(func=pull_command)

    an = add(
        "annotate",
        "write each failing claim onto its breaking span in Phoenix, as an annotation",
        "citeline annotate --phoenix http://localhost:6006 --run latest",
    )
    add_phoenix(an)
    add_run(an)
    an.add_argument(
        "--documents-as-llm",
        action="store_true",
        help="write each retrieved document's gold relevance with annotator kind LLM: Phoenix computes its "
        "retrieval metrics (NDCG, precision, hit) only from LLM document annotations (default CODE)",
    )
    add_db(an)
    an.set_defaults(func=annotate_command)


def pull_command(args: argparse.Namespace) -> int:
    con = connect(args.db)
    try:
        folder = Path(args.db).resolve().parent / "citeline-pulled"
        report = pull(con, args.phoenix, args.project, since=args.since, folder=folder)
    finally:
        con.close()
    print(
        f"pulled {report.spans} span(s) in {report.traces} trace(s) from project {args.project!r}; "
        f"{report.ingest.spans_added} new in {args.db}" + (f" (copy: {report.file})" if report.file else "")
    )
    for p in report.ingest.problems:
        err(f"citeline: skipped: {p}")
    return DONE


def annotate_command(args: argparse.Namespace) -> int:
    require_store(args.db)
    con = connect(args.db)
    try:
        run_id, _ = resolve_run(con, args.run)
        report = annotate(con, args.phoenix.rstrip("/"), run_id, documents_as_llm=args.documents_as_llm)
    finally:
        con.close()
    if report.removed:
        print(
            f"run {run_id}: {report.removed} citeline annotation(s) of earlier runs removed "
            "(their claims are ok or gone in this run)"
        )
    if report.superseded:
        print(
            f"run {run_id}: {len(report.superseded)} trace(s) hold the verdicts of a newer run "
            f"({', '.join(report.newer_runs[:3])}) and were left as they are"
        )
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
    for name in report.configs_created:
        print(f"annotation config {name!r} created: reviewers pick its labels from a dropdown in Phoenix")
    for project in report.links:
        print(term(f"Phoenix project {project.name!r}: {project.url}"))
        for bucket, spans, link in project.buckets:
            print(term(f"  {bucket}: {spans} span(s): {link}"))
    for span, why in report.rejected:
        err(f"citeline: Phoenix refused the annotations of span {span}: {why}")
    if report.invalid_spans:
        err(
            f"citeline: {len(report.invalid_spans)} span id(s) in the store are not OTLP span ids (16 hex digits) "
            "and were not annotated: " + ", ".join(repr(s) for s in report.invalid_spans[:10])
        )
    for problem in report.not_own_spans[:20]:  # a span id another trace holds too: never annotated
        err(f"citeline: {problem}")
    if report.missing_spans:
        err(
            f"citeline: {len(report.missing_spans)} span(s) are not in that Phoenix (traces not sent there?): "
            + ", ".join(report.missing_spans[:10]),
        )
    return FAILED if report.rejected else DONE  # something Phoenix refused is lost: say so in the exit code
