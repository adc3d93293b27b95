"""The perturbation catalogue: what each one changes, and what must follow from it.

Each perturbation changes one stage's real return value for one gold case
(the support chunks are the case's gold support bundles) and declares what
must follow:

- a **bucket**: that flag must be raised on every gold claim of the case, and
  when it is the claim's primary bucket, at the span the perturbation changed
  (an earlier bucket may win when the app reacts, e.g. it cites an archived
  chunk: the flag is still raised);
- **nothing changes**: every claim keeps its bucket (shuffle and relabel);
- or only an **app reaction** (follow the newer version), reported apart from
  whether the instrumentation saw the change.

A perturbation that cannot apply to a case says why (no support chunk, no
archived version in the gold corpus, no number in the answer): the cell is
``n/a`` with that reason, never a pass.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from citeline.analyzer.testing.edits import (
    RELABEL_FROM,
    CaseContext,
    Change,
    Edited,
    archived_swap,
    change_number,
    drop_context,
    drop_markers,
    drop_support,
    neighbour_label,
    old_version_link,
    shuffle_relabel,
    supersede,
    truncate,
    wrong_chunk,
)

ExpectKind = Literal["bucket", "unchanged", "none"]
Reaction = Literal["abstain_or_qualify", "follow_newer", "same_answer"]


@dataclass(frozen=True)
class Expect:
    """What the instrumentation must show after the perturbation."""

    kind: ExpectKind
    bucket: str | None = None
    stage: str | None = None

    def __str__(self) -> str:
        if self.kind == "bucket":
            return f"{self.bucket} at {self.stage}"
        return "nothing changes" if self.kind == "unchanged" else "(app reaction only)"


@dataclass(frozen=True)
class Perturbation:
    """One metamorphic perturbation of one stage, with what must follow it."""

    name: str
    stage: str
    does: str
    expect: Expect
    reaction: Reaction | None
    fn: Callable[..., Edited | str]
    needs: Callable[[CaseContext], str | None]

    def prepare(self, ctx: CaseContext) -> Change | str:
        """The change for this case, or why it does not apply."""
        reason = self.needs(ctx)
        if reason is not None:
            return reason
        return Change(self.name, self.stage, ctx, self.fn)


def _needs_support(ctx: CaseContext) -> str | None:
    return None if ctx.support else f"case {ctx.case.case_id} has no support chunks (expect: {ctx.case.expect})"


def _needs_archived(ctx: CaseContext) -> str | None:
    return _needs_support(ctx) or (None if ctx.archived else "no support chunk has an archived version in the gold")


def _always(ctx: CaseContext) -> str | None:
    return None


def _needs_numbers(ctx: CaseContext) -> str | None:
    return _needs_support(ctx) or (None if ctx.facts_numbers else "the gold claims state no number")


CATALOGUE: tuple[Perturbation, ...] = (
    Perturbation(
        "retrieval.drop_support",
        "retrieval",
        "drop the support chunk(s), leaving the hard negatives",
        Expect("bucket", "retrieval_miss", "retrieval"),
        "abstain_or_qualify",
        lambda ctx, v, view: drop_support(ctx, v, view, "retrieval"),
        _needs_support,
    ),
    Perturbation(
        "retrieval.archived_version",
        "retrieval",
        "swap a support chunk for its archived version from the gold corpus",
        Expect("bucket", "retrieval_miss", "retrieval"),
        None,
        archived_swap,
        _needs_archived,
    ),
    Perturbation(
        "retrieval.supersede",
        "retrieval",
        "put a newer version of the support chunk before it (the old one superseded today)",
        Expect("none"),
        "follow_newer",
        supersede,
        _needs_support,
    ),
    Perturbation(
        "context.drop_support",
        "context",
        "drop the support chunk(s) from what reaches the model",
        Expect("bucket", "context_drop", "context"),
        "abstain_or_qualify",
        drop_context,
        _needs_support,
    ),
    Perturbation(
        "context.shuffle_relabel",
        "context",
        f"reverse the chunks' order and label them {RELABEL_FROM}, {RELABEL_FROM + 1}, ...",
        Expect("unchanged"),
        "same_answer",
        shuffle_relabel,
        _always,
    ),
    Perturbation(
        "context.truncate",
        "context",
        "keep only the chunks before the first support chunk (a token budget cut)",
        Expect("bucket", "context_drop", "context"),
        None,
        truncate,
        _needs_support,
    ),
    Perturbation(
        "generation.remove_marker",
        "generation",
        "remove the answer's citation markers (structured: its evidence)",
        Expect("bucket", "uncited", "generation"),
        None,
        drop_markers,
        _needs_support,
    ),
    Perturbation(
        "generation.change_number",
        "generation",
        "raise a number of the gold facts by one where the answer states it",
        Expect("bucket", "grounding", "generation"),
        None,
        change_number,
        _needs_numbers,
    ),
    Perturbation(
        "generation.neighbour_label",
        "generation",
        "cite the neighbouring context label instead of the support's",
        Expect("bucket", "attribution", "generation"),
        None,
        neighbour_label,
        _needs_support,
    ),
    Perturbation(
        "resolution.wrong_chunk",
        "resolution",
        "resolve the support's marker to the neighbouring chunk",
        Expect("bucket", "resolution", "resolution"),
        None,
        wrong_chunk,
        _needs_support,
    ),
    Perturbation(
        "render.old_version",
        "render",
        "link the support's archived version (from the gold corpus) on the page",
        Expect("bucket", "resolution", "render"),
        None,
        old_version_link,
        _needs_support,
    ),
)


BY_NAME = {p.name: p for p in CATALOGUE}


def select(names: Sequence[str] | None) -> list[Perturbation]:
    """The perturbations named (all when None); an unknown name raises ValueError listing the known ones."""
    if not names:
        return list(CATALOGUE)
    unknown = [n for n in names if n not in BY_NAME]
    if unknown:
        raise ValueError(f"unknown perturbation(s) {', '.join(unknown)}; known: {', '.join(BY_NAME)}")
    return [BY_NAME[n] for n in names]
