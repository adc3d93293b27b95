"""``citeline perturb``: the perturbation harness from the command line."""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from citeline.analyzer.cli.errors import DONE, FAILED, CliError, err
from citeline.analyzer.cli.options import AddCommand, add_db, add_format, add_out
from citeline.analyzer.testing.perturb import perturb
from citeline.analyzer.testing.perturb_render import render_html, render_text
from citeline.analyzer.testing.perturbations import CATALOGUE

EXAMPLE = (
    "citeline perturb --app citeline.examples.perturb_apps:answer_case --gold examples/policy_gold.yaml "
    "--format html --out perturb.html"
)


def register(add: AddCommand) -> None:
    """Add ``perturb`` to the parser."""
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
    p.add_argument(
        "--case",
        action="append",
        metavar="CASE_ID",
        help="run only this gold case, or the cases a glob matches (returns-*; repeatable); a pattern that "
        "matches no case stops the run",
    )
    p.add_argument(
        "--ok-only",
        action="store_true",
        help="perturb only the cases whose baseline is all ok; the others are listed as not perturbed",
    )
    add_format(p, "table", "json", "html")
    add_out(p)
    p.add_argument(
        "--fail-on-reaction",
        action="store_true",
        help="also exit 1 when the app reacts badly (keeps a claim whose support is gone, ignores a newer version)",
    )
    add_db(p, "accepted for symmetry; the run keeps its store in memory", default=None)
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
    if not Path(args.gold).exists():
        raise CliError(f"gold file {args.gold} does not exist; pass --gold FILE")
    try:
        app = load_app(args.app)
        result = perturb(app, args.gold, perturbations=args.perturbation, cases=args.case, ok_only=args.ok_only)
    except ValueError as exc:  # --app written wrong, or not importable
        raise CliError(str(exc)) from exc
    if args.format == "json":
        text = json.dumps(result.to_json(), indent=2, default=str) + "\n"
    elif args.format == "html":
        text = render_html(result)
    else:
        text = render_text(result)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
        err(f"perturbation matrix written to {args.out}")
    else:
        sys.stdout.write(text)
    if not result.cases:
        err("citeline: no case's baseline is all ok, so nothing was perturbed; fix the baseline or drop --ok-only")
        return FAILED
    unseen = [s for s, v in result.stages.items() if v.verdict == "not seen"]
    if unseen:
        err(f"citeline: stage(s) not seen: {', '.join(unseen)}; see the cells listed")
    reached = [s for s, v in result.stages.items() if v.verdict in ("seen", "partly seen")]
    if not unseen and not reached:
        err("citeline: no stage could be perturbed here (each is n/a or unreachable; see the notes): nothing is shown")
    bad = [c for c in result.reactions if not c.reaction_good]
    if bad and args.fail_on_reaction:
        err(f"citeline: {len(bad)} app reaction(s) are findings about the app")
    return FAILED if unseen or not reached or (bad and args.fail_on_reaction) else DONE
