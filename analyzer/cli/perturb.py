"""``citeline perturb``: the perturbation harness from the command line (registered by ``_cli``)."""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from citeline.analyzer.testing.perturbations import CATALOGUE

EXAMPLE = (
    "citeline perturb --app citeline.examples.perturb_apps:answer_case --gold examples/policy_gold.yaml "
    "--format html --out perturb.html"
)


def register(add: Callable[[str, str, str], argparse.ArgumentParser]) -> None:
    """Add the ``perturb`` command to the parser (``add`` is the CLI's own sub-command maker)."""
    p = add(
        "perturb",
        "run every gold case as is and under each perturbation of each stage; say whether each stage is seen",
        EXAMPLE,
    )
    p.add_argument(
        "--app",
        required=True,
        metavar="MODULE:FUNCTION",
        help="the request function: called with one gold case (case_id, question, principal, as_of), it "
        "answers it through the decorated pipeline inside one request(...); the current folder is importable",
    )
    p.add_argument("--gold", required=True, help="gold YAML/JSON file, or a folder with corpus.jsonl + cases.jsonl")
    p.add_argument(
        "--perturbation",
        action="append",
        choices=[x.name for x in CATALOGUE],
        metavar="NAME",
        help="run only this perturbation (repeatable); default all: " + ", ".join(x.name for x in CATALOGUE),
    )
    p.add_argument("--case", action="append", metavar="CASE_ID", help="run only this gold case (repeatable)")
    p.add_argument("--format", choices=("table", "json", "html"), default="table")
    p.add_argument("--out", help="write to this file instead of standard output")
    p.add_argument(
        "--fail-on-reaction",
        action="store_true",
        help="also exit 1 when the app reacts badly (keeps a claim whose support is gone, ignores a newer version)",
    )
    p.add_argument("--db", default=None, help="accepted for symmetry; the run keeps its store in memory")
    p.set_defaults(func=run)


def load_app(spec: str) -> Callable[..., Any]:
    """``module:function`` -> the function; ValueError saying what is wrong otherwise."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"--app {spec!r}: write MODULE:FUNCTION, e.g. myapp.ci:answer_case")
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ValueError(f"--app {spec!r}: cannot import {module_name}: {exc}") from exc
    fn = getattr(module, attr, None)
    if not callable(fn):
        raise ValueError(f"--app {spec!r}: {module_name} has no function {attr!r}")
    return fn  # type: ignore[no-any-return]


def run(args: argparse.Namespace) -> int:
    from citeline.analyzer.testing.perturb import PerturbError, perturb
    from citeline.analyzer.testing.perturb_render import render_html, render_text

    if not Path(args.gold).exists():
        print(f"citeline: gold file {args.gold} does not exist; pass --gold FILE", file=sys.stderr)
        return 2
    try:
        app = load_app(args.app)
        result = perturb(app, args.gold, perturbations=args.perturbation, cases=args.case)
    except (ValueError, PerturbError) as exc:
        print(f"citeline: {exc}", file=sys.stderr)
        return 2
    if args.format == "json":
        text = json.dumps(result.to_json(), indent=2, default=str) + "\n"
    elif args.format == "html":
        text = render_html(result)
    else:
        text = render_text(result)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
        print(f"perturbation matrix written to {args.out}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    unseen = [s for s, v in result.stages.items() if v.verdict == "not seen"]
    if unseen:
        print(f"citeline: stage(s) not seen: {', '.join(unseen)}; see the cells listed", file=sys.stderr)
    bad = [c for c in result.reactions if not c.reaction_good]
    if bad and args.fail_on_reaction:
        print(f"citeline: {len(bad)} app reaction(s) are findings about the app", file=sys.stderr)
    return 1 if unseen or (bad and args.fail_on_reaction) else 0
