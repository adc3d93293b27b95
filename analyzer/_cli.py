"""The ``citeline`` command line: a thin layer over the library."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path


def _demo(args: argparse.Namespace) -> int:
    from citeline.examples.policy_bot import PolicyBot, run_sample
    from citeline.instrumentation import configure

    handle = configure(service_name="policy-bot", trace_dir=args.traces)
    answers = run_sample(PolicyBot())
    handle.shutdown()
    for answer in answers:
        print(f"answer: {answer}")
    files = sorted(Path(args.traces).glob("*.jsonl"))
    print(f"traces written to {args.traces}/ ({len(files)} file(s))")
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser; every command has help with an example."""
    parser = argparse.ArgumentParser(
        prog="citeline",
        description="Find which component of a RAG pipeline broke a citation.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    demo = sub.add_parser(
        "demo",
        help="run the bundled example app and write its traces",
        description="Run the bundled policy assistant over its sample questions and write "
        "OTLP/JSON trace files.",
        epilog="example: citeline demo --traces demo-traces",
    )
    demo.add_argument("--traces", default="citeline-demo-traces", help="folder for trace files")
    demo.set_defaults(func=_demo)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``citeline`` console script."""
    args = build_parser().parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
