"""The ``citeline`` command line: a thin layer over the library, one module per family of commands.

``build_parser`` assembles the families (each module's ``register(add)`` adds its commands);
``main`` runs one command and is the one place errors become a line on standard error and an exit
code (``errors.py``, docs/design.md "Exit codes").
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from citeline.analyzer.cli import demo, export, gold, labels, perturb, phoenix, reports, run
from citeline.analyzer.cli.errors import UNUSABLE, UNUSABLE_INPUT, CliError, err
from citeline.analyzer.cli.options import DOCS, check_paths

FAMILIES = (demo, run, reports, phoenix, export, gold, labels, perturb)
"""The command families, in the order ``citeline --help`` lists their commands."""


def build_parser() -> argparse.ArgumentParser:
    """The argument parser; every command has help with an example."""
    parser = argparse.ArgumentParser(
        prog="citeline",
        description="Find which component of a RAG pipeline broke a citation.",
        epilog=DOCS,
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def add(name: str, help_: str, example: str) -> argparse.ArgumentParser:
        return sub.add_parser(
            name,
            help=help_,
            description=help_,
            epilog=f"example: {example}",
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )

    for family in FAMILIES:
        family.register(add)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``citeline`` console script: 0 done, 1 a gate failed or nothing came out,
    2 the input cannot be used (``errors.py``)."""
    args = build_parser().parse_args(argv)
    try:
        check_paths(args)
        return int(args.func(args))
    except CliError as exc:
        err(f"citeline: {exc.message}")
        return exc.code
    except UNUSABLE_INPUT as exc:
        err(f"citeline: {exc}")
        return UNUSABLE


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
