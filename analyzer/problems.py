"""What a run skipped or noted in its input, with its place: one type for every step that reads input
(ingest, the gold set, joining, storing)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Problem:
    """Something in the input that was skipped, with its place."""

    source: str
    place: str
    field: str
    message: str
    skipped: bool = True
    """False for what was read but is worth saying (a stage that could not be read stays in the chain
    and makes its claims not_evaluable; chunk ids joined by content): a note, not a skip."""

    def __str__(self) -> str:
        return f"{self.source}:{self.place}: {self.field}: {self.message}"
