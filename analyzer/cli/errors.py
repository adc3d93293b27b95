"""The command line's one error path and its exit codes (docs/design.md "Exit codes").

A command returns ``DONE`` or ``FAILED``, or raises: a ``CliError`` it builds itself, or one of the
library's errors in ``UNUSABLE_INPUT``. ``main`` catches both in one place, writes one line to
standard error and exits with the error's code.
"""

from __future__ import annotations

import sys
from typing import Any, Final

from citeline.analyzer.claims.policy import PolicyError
from citeline.analyzer.escaping import term
from citeline.analyzer.exporters.otel import ExportError
from citeline.analyzer.phoenix import PhoenixError
from citeline.analyzer.reports.report import ReportError
from citeline.analyzer.run.analyze import InputError
from citeline.analyzer.scaleout.cluster import EngineError
from citeline.analyzer.sources.structured import AnswerKeysError
from citeline.analyzer.store import StoreError
from citeline.analyzer.testing.perturb import PerturbError

DONE: Final = 0
"""The command did what it was asked."""
FAILED: Final = 1
"""The input was usable and the command ran, but its result is not a pass: a gate failed, or the work
came out empty or incomplete (nothing classified, a partition failed, Phoenix refused annotations)."""
UNUSABLE: Final = 2
"""The input cannot be used, so the command did not run: a missing or unreadable file or store, an
option written wrong, an unknown run or judge, a Phoenix that cannot be reached or refuses us."""

UNUSABLE_INPUT: Final[tuple[type[Exception], ...]] = (
    AnswerKeysError,  # --answer-key names a role no answer has
    EngineError,  # --engine dask: no cluster to run on
    ExportError,  # export: a wrong --otlp URL, a backend that cannot be reached or refuses us
    InputError,  # no trace files, an unreadable gold set; nothing is stored
    PerturbError,  # perturb cannot run the gold cases through the app
    PhoenixError,  # Phoenix unreachable, refuses the key, has no such project or dataset
    PolicyError,  # --attach or --exempt names no policy
    ReportError,  # no such run, a gate written wrong
    StoreError,  # --db is a folder, another program's file, or in use
)
"""The library's errors that say the input cannot be used: each exits ``UNUSABLE`` with its message."""


class CliError(Exception):
    """What a command says when it cannot go on: the message (what happened, what to do) and the exit code."""

    def __init__(self, message: str, code: int = UNUSABLE) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


def err(*parts: Any, end: str = "\n") -> None:
    """A line for people on standard error: paths, ids and messages in it come from someone
    else's files, so escape sequences and control characters are removed (docs/security.md)."""
    sys.stderr.write(term(" ".join(str(p) for p in parts)) + end)
    sys.stderr.flush()
