"""``citeline validate`` and ``gold import`` / ``gold draft``: check a gold set, or start one."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from citeline.analyzer.cli.errors import DONE, FAILED, UNUSABLE, CliError, err
from citeline.analyzer.cli.options import AddCommand, add_db, add_out, add_phoenix, add_run, require_store
from citeline.analyzer.drafting.draft import Drafted, draft_from_traces, dump, import_phoenix_dataset
from citeline.analyzer.drafting.feedback import draft_from_feedback
from citeline.analyzer.escaping import term
from citeline.analyzer.gold.goldset import load_gold


def register(add: AddCommand) -> None:
    """Add ``validate`` and ``gold`` (with ``import`` and ``draft``) to the parser."""
    va = add(
        "validate",
        "check a gold file; every problem names file, line/record and field",
        "citeline validate gold.yaml",
    )
    va.add_argument("gold_file")
    add_db(va, "accepted for symmetry; validate reads no store")
    va.set_defaults(func=validate_command)

    go = add(
        "gold",
        "make a gold set from a Phoenix dataset (import) or from real traces (draft)",
        "citeline gold draft --traces traces/ --out gold.yaml",
    )
    add_db(go, "the store `gold draft --from-feedback` reads (gold writes a YAML file)")
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
    add_phoenix(gi)
    gi.add_argument("--phoenix-dataset", required=True, metavar="NAME", help="the dataset's name")
    gi.add_argument("--question-key", default="question", help="field with the question (default question)")
    gi.add_argument("--answer-key", default="answer", help="field with the expected answer (default answer)")
    gi.add_argument("--support-key", default="support", help="field with the supporting document ids (default support)")
    gi.add_argument("--id-key", help="field with the case id (default: the example's id)")
    gi.add_argument("--corpus", help="a gold file whose corpus the cases cite (ids, text, lifecycle)")
    add_out(gi, "write the gold YAML here instead of standard output")
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
    add_run(gd, "with --from-feedback: the run (default latest)")
    gd.add_argument("--corpus", help="a gold file whose corpus to start from (documents join it by content)")
    add_out(gd, "write the gold YAML here instead of standard output")
    go.set_defaults(func=gold_command)


def validate_command(args: argparse.Namespace) -> int:
    gold = load_gold(args.gold_file, advise=True)
    for e in gold.errors:
        print(term(e))
    for w in gold.warnings:
        print(term(f"warning: {w}"))
    drafts = f", {len(gold.warnings)} warning(s)" if gold.warnings else ""
    print(f"{len(gold.corpus)} chunks, {len(gold.cases)} cases, {len(gold.errors)} problem(s){drafts}")
    if gold.unreadable is not None:  # nothing could be read: the input cannot be used (said in the lines above)
        return UNUSABLE
    return FAILED if gold.errors else DONE


def gold_command(args: argparse.Namespace) -> int:
    try:
        if args.gold_command == "import":
            drafted, header = _imported(args)
        elif args.from_feedback:
            drafted, header = _from_feedback(args)
        else:
            drafted, header = _from_traces(args)
    except ValueError as exc:  # an unreadable --corpus
        raise CliError(str(exc)) from exc
    text = dump(drafted, header)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    for p in drafted.problems:
        err(f"citeline: {p}")
    where = args.out or "standard output"
    err(f"{len(drafted.cases)} case(s), {len(drafted.corpus)} chunk(s) written to {where}")
    return DONE if drafted.cases else FAILED


def _imported(args: argparse.Namespace) -> tuple[Drafted, str]:
    drafted = import_phoenix_dataset(
        args.phoenix,
        args.phoenix_dataset,
        question_key=args.question_key,
        answer_key=args.answer_key,
        support_key=args.support_key,
        id_key=args.id_key,
        corpus=args.corpus,
    )
    return drafted, f"gold set imported by citeline from Phoenix dataset {args.phoenix_dataset!r} at {args.phoenix}"


def _from_feedback(args: argparse.Namespace) -> tuple[Drafted, str]:
    if args.traces:
        raise CliError("gold draft takes --traces or --from-feedback, not both")
    require_store(args.db, "--from-feedback")
    drafted = draft_from_feedback(args.db, args.run, corpus=args.corpus)
    header = (
        f"DRAFT gold cases by citeline from the user reports in {args.db} (run {args.run}).\n"
        "Each case is a report's claim with the chunks it cited as proposed support, and the incident "
        "as it happened;\nfix the support, then delete 'status: draft'."
    )
    return drafted, header


def _from_traces(args: argparse.Namespace) -> tuple[Drafted, str]:
    if not args.traces:
        raise CliError("gold draft needs --traces DIR (or --from-feedback)")
    for t in args.traces:
        if not Path(t).exists():
            raise CliError(f"--traces {t}: no such file or folder")
    drafted = draft_from_traces(args.traces, corpus=args.corpus)
    header = (
        f"DRAFT gold set by citeline from the traces under {', '.join(args.traces)}.\n"
        "Every case is status: draft: check its claims and support chunks, then delete that line."
    )
    return drafted, header
