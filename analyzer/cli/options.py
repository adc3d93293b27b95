"""Options several commands share, each declared once, and the checks every command makes on them the same way."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import duckdb

from citeline.analyzer.cli.errors import CliError
from citeline.analyzer.judges import JudgeNotFound, available, load
from citeline.analyzer.store import DEFAULT_DB, connect
from citeline.instrumentation.settings import PHOENIX_URL

DOCS = "see README.md and docs/ for more"
OUT_HELP = "write to this file instead of standard output"
RUN_HELP = "run id, or 'latest' (default)"

AddCommand = Callable[[str, str, str], argparse.ArgumentParser]
"""The CLI's sub-command maker: ``add(name, help, example)``; a family's ``register(add)`` calls it per command."""


# --- declared once ------------------------------------------------------------------------------


def add_db(p: argparse.ArgumentParser, help_: str | None = None, default: str | None = DEFAULT_DB) -> None:
    """``--db FILE``: the store (every command takes it, also those that read none, so scripts can pass it)."""
    p.add_argument("--db", default=default, help=help_ or f"store file (default {DEFAULT_DB})")


def add_run(p: argparse.ArgumentParser, help_: str = RUN_HELP, default: str | None = "latest") -> None:
    """``--run ID``: a stored run, ``latest`` by default."""
    p.add_argument("--run", default=default, help=help_)


def add_phoenix(p: argparse.ArgumentParser, links_help: str | None = None) -> None:
    """``--phoenix URL``: the Phoenix a command talks to (required), or, with ``links_help``, the one
    failing claims link to (optional, else CITELINE_PHOENIX_URL)."""
    if links_help is None:
        p.add_argument("--phoenix", required=True, help="Phoenix base URL (API key from PHOENIX_API_KEY)")
    else:
        p.add_argument("--phoenix", help=links_help)


def add_format(p: argparse.ArgumentParser, *choices: str) -> None:
    """``--format``: the first choice is the default."""
    p.add_argument("--format", choices=choices, default=choices[0])


def add_out(p: argparse.ArgumentParser, help_: str = OUT_HELP, required: bool = False) -> None:
    """``--out FILE`` (checked before the command runs: see ``check_paths``)."""
    p.add_argument("--out", required=required, help=help_)


def add_judge(p: argparse.ArgumentParser) -> None:
    """``--judge NAME`` and ``--judge-option KEY=VALUE``."""
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


# --- read the same way everywhere ---------------------------------------------------------------


def key_values(
    values: Sequence[str] | None, option: str, form: str, example: str, value_required: bool = False
) -> dict[str, str]:
    """A repeated ``option KEY=VALUE`` as a dict. The key is stripped and must not be empty; with
    ``value_required`` the value too (else it is kept as written, empty or not)."""
    found: dict[str, str] = {}
    for opt in values or []:
        key, sep, value = opt.partition("=")
        if value_required:
            value = value.strip()
        if not sep or not key.strip() or (value_required and not value):
            raise CliError(f"{option} {opt!r}: write {form}, e.g. {example}")
        found[key.strip()] = value
    return found


def judge_options(args: argparse.Namespace) -> dict[str, str]:
    """``--judge-option KEY=VALUE`` as a dict."""
    return key_values(args.judge_option, "--judge-option", "KEY=VALUE", "model=gpt-4o-mini")


def load_judge(args: argparse.Namespace) -> Any:
    """The judge ``--judge`` names, built with its options; None after listing them for ``--judge list``."""
    if args.judge == "list":
        for name, where in sorted(available().items()):
            print(f"{name}\t{where}")
        return None
    options = judge_options(args)
    try:
        return load(args.judge, **options)
    except (JudgeNotFound, ValueError, TypeError, ImportError) as exc:
        raise CliError(f"--judge {args.judge}: {exc}") from exc


def require_store(db: str, reader: str | None = None) -> None:
    """The store a command reads must exist: it is made by ``analyze``, never by a reader."""
    if not Path(db).exists():
        what = f" ({reader} reads one)" if reader else ""
        raise CliError(f"no store at {db}{what}; run `citeline analyze --db {db} ...` first")


def open_for_reading(db: str) -> duckdb.DuckDBPyConnection:
    """Read-only (a report writes nothing, so a read-only store is fine); a store made by an older
    citeline is opened once for writing to gain the tables reports read."""
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


def phoenix_url(args: argparse.Namespace) -> str | None:
    """``--phoenix``, else CITELINE_PHOENIX_URL; without a trailing slash."""
    url = getattr(args, "phoenix", None) or PHOENIX_URL.get()
    return url.rstrip("/") if url else None


def check_paths(args: argparse.Namespace) -> None:
    """A path argument that cannot work is said before anything runs."""
    labels = getattr(args, "labels", None)
    if labels and not Path(labels).is_file():
        what = "a folder" if Path(labels).is_dir() else "missing"
        raise CliError(f"--labels {labels}: {what}; give a CSV or JSONL file of human labels")
    out = getattr(args, "out", None)
    if out:
        if Path(out).is_dir():
            raise CliError(f"--out {out} is a folder; give a file name such as report.html")
        if not Path(out).resolve().parent.is_dir():
            raise CliError(f"--out {out}: the folder {Path(out).parent} does not exist")
