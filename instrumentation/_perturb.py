"""The perturbation hook: where a test harness may change what a stage hands on.

Every decorated stage passes its return value through :func:`hand_on` before
the next stage sees it. Nothing happens there unless a perturbation is
*active*, and one is active only inside :func:`perturbing`, a context manager
that the perturbation harness (``citeline.analyzer.testing.perturb``) enters
around one request and leaves when the request returns. The switch is a
``contextvars`` variable: no environment variable, no setting of
``configure()`` and no module global turns it on, a thread the harness did not
start never sees it, and it is reset when the ``with`` block ends, even on an
error. In production the hook is one ``ContextVar.get()`` returning ``None``.

A perturbation that changes a value says so on the stage's span
(``citeline.perturbation`` and ``citeline.perturbation.detail``), so the trace
records what the harness did and the analyzer never mistakes it for the app.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Protocol

from opentelemetry.trace import Span

from . import _guard
from . import schema as K
from ._stages import current_request
from .chunks import Columns
from .prompt import chunks_in_arguments


@dataclass(frozen=True)
class RequestView:
    """What the request has shown so far, for a perturbation that needs it (label map, retrieval)."""

    labels: list[str] = field(default_factory=list)
    chunk_ids: list[str] = field(default_factory=list)
    doc_ids: list[str] = field(default_factory=list)
    versions: list[str] = field(default_factory=list)
    retrieved: Columns | None = None
    #: the chunks a context step that returns a prompt chose from, as the decorator reads them: those handed
    #: to the step, else the request's last retrieval (None outside a context step)
    candidates: Columns | None = None


class Change(Protocol):
    """What one perturbation does to the stage it targets."""

    @property
    def name(self) -> str:
        """Its name, e.g. ``context.shuffle_relabel`` (written on the span)."""

    @property
    def stage(self) -> str:
        """The stage whose return value it changes (retrieval, context, generation, resolution, render)."""

    def apply(self, value: Any, view: RequestView) -> tuple[Any, str] | None:
        """The changed value and one line saying what changed, or None when it does not apply here."""


_active: ContextVar[Change | None] = ContextVar("citeline_perturbation", default=None)


@contextmanager
def perturbing(change: Change) -> Iterator[None]:
    """Make ``change`` active for the code run inside the block (this thread or task only)."""
    token = _active.set(change)
    try:
        yield
    finally:
        _active.reset(token)


def active() -> Change | None:
    """The perturbation in force here, if any (None everywhere but inside :func:`perturbing`)."""
    return _active.get()


def _view(stage: str, args: Sequence[Any], kwargs: Mapping[str, Any]) -> RequestView:
    state = current_request.get()
    if state is None:
        return RequestView()
    candidates = None
    if stage == "context":
        candidates = chunks_in_arguments(args, kwargs)
        if candidates is None:
            candidates = state.retrieved
    return RequestView(
        labels=list(state.labels),
        chunk_ids=list(state.chunk_ids),
        doc_ids=list(state.doc_ids),
        versions=list(state.versions),
        retrieved=state.retrieved,
        candidates=candidates,
    )


def hand_on(
    stage: str, span: Span, value: Any, args: Sequence[Any] = (), kwargs: Mapping[str, Any] | None = None
) -> Any:
    """The value the next stage gets: ``value`` itself unless a perturbation of ``stage`` is active.

    ``args`` and ``kwargs`` are the step's own arguments: a context step that returns a prompt chose
    from the chunks handed to it, and a perturbation edits the prompt by those."""
    change = _active.get()
    if change is None or change.stage != stage:
        return value
    try:
        changed = change.apply(value, _view(stage, args, kwargs or {}))
        if changed is None:
            return value
        new, detail = changed
        span.set_attribute(K.CL_PERTURBATION, change.name)
        span.set_attribute(K.CL_PERTURBATION_DETAIL, detail)
    except Exception as err:  # noqa: BLE001 - a broken perturbation is ours: the app gets its own value
        _guard.report(f"perturbation {change.name}", err)
        return value
    return new
