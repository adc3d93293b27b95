"""``citeline sample`` and ``calibrate``: a sheet for people to label, and a judge measured against their labels."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from citeline.analyzer.cli.errors import DONE, FAILED, CliError, err
from citeline.analyzer.cli.options import (
    AddCommand,
    add_db,
    add_format,
    add_judge,
    add_out,
    add_run,
    load_judge,
    open_for_reading,
    require_store,
)
from citeline.analyzer.escaping import term
from citeline.analyzer.gold.goldset import load_gold
from citeline.analyzer.labels.calibrate import Agreement, agreement, examples, gold_examples
from citeline.analyzer.labels.sample import draw, write
from citeline.analyzer.reports.report import resolve_run
from citeline.analyzer.store import DEFAULT_DB


def register(add: AddCommand) -> None:
    """Add ``sample`` and ``calibrate`` to the parser."""
    sa = add(
        "sample",
        "draw a blind, seeded sample of a run's claims for people to label (a CSV sheet)",
        "citeline sample --run latest --n 50 --stratify bucket --out sheet.csv   # then: analyze --labels sheet.csv",
    )
    add_run(sa)
    sa.add_argument("--n", type=int, default=50, help="rows to draw (default 50)")
    sa.add_argument("--stratify", choices=("bucket", "basis", "judge-label"), help="equal shares per stratum")
    sa.add_argument("--seed", type=int, default=0, help="same seed, same sheet (default 0)")
    add_out(sa, "the CSV sheet to write", required=True)
    add_db(sa)
    sa.set_defaults(func=sample_command)

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
    add_judge(ca)
    ca.add_argument("--gold", help="gold set whose corpus gives the text of rows that name chunks instead of evidence")
    ca.add_argument(
        "--against-gold",
        action="store_true",
        help="measure the judge on the claims people labelled in a run (analyze --labels), read from --db",
    )
    add_run(ca, "with --against-gold: the run to read (default: the latest with labels)", default=None)
    add_format(ca, "table", "json")
    add_db(ca, f"store for --against-gold (default {DEFAULT_DB})")
    ca.set_defaults(func=calibrate_command)


def sample_command(args: argparse.Namespace) -> int:
    require_store(args.db)
    con = open_for_reading(args.db)
    try:
        run_id, _ = resolve_run(con, args.run)
        sheet = draw(con, run_id, args.n, args.stratify, args.seed)
    except ValueError as exc:  # --n or --stratify that cannot draw
        raise CliError(str(exc)) from exc
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
    return DONE if sheet.rows else FAILED


def calibrate_command(args: argparse.Namespace) -> int:
    judge = load_judge(args)
    if judge is None:  # --judge list
        return DONE
    if args.against_gold:
        require_store(args.db, "--against-gold")
        found, left_out, problems, run = gold_examples(args.db, args.run)
        source = f"{args.db} run {run} (human labels)"
    else:
        if not args.labels_file or not Path(args.labels_file).is_file():
            raise CliError(f"labelled file {args.labels_file!r} not found; give a CSV or JSONL file")
        corpus = None
        if args.gold:
            corpus = {cid: c.text for cid, c in load_gold(args.gold).corpus.items()}
        found, left_out, problems = examples(args.labels_file, corpus)
        source = args.labels_file
    result = agreement(judge, found, source)
    result.left_out, result.problems = left_out, problems
    for p in problems:
        err(f"citeline: skipped: {p}")
    if args.format == "json":
        print(json.dumps(result.to_dict(), indent=2))
    else:
        print("\n".join(term(line) for line in _agreement_table(result).splitlines()))
    return DONE if result.n else FAILED


def _agreement_table(a: Agreement) -> str:
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
