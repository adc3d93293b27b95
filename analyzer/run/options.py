"""What one run is, as one frozen value: :class:`RunOptions` (its evidence, traces, judge, labels and policy).

Both engines take it: ``analyze`` (one process, ``run/analyze.py``) and ``analyze_partitioned`` (partitions
of whole traces on Dask, ``scaleout/partitioned.py``), whose workers run ``analyze`` with the driver's
options; the CLI builds it once from its arguments. An option is declared here, once, and reaches the
single run, the partitioned driver and every worker without another signature to thread it through.

A wrong setting raises when the value is made, naming the option, before anything runs (OpenTelemetry
SDK's "fail loudly at setup"). What is not the run itself stays each engine's own argument: where it is
stored (``db``, ``con``), how it is watched (``progress``, ``on_phase``, ``on_progress``), and how a
partitioned run is cut and where it runs (``scaleout/partitioned.Cluster``, ``client``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from citeline.analyzer import judges
from citeline.analyzer.claims.policy import attach_policy, exempt_kinds
from citeline.analyzer.gold.goldset import GoldSet
from citeline.analyzer.judges import Judge
from citeline.analyzer.sources import structured

DEFAULT_ABSTAIN_PHRASES = (
    "cannot verify",
    "can't verify",
    "do not specify",
    "does not specify",
    "not enough information",
    "unable to find",
    "could not find",
    "i don't know",
)


@dataclass(frozen=True)
class RunOptions:
    """What a run is: ``RunOptions(gold="gold.yaml", traces=["traces/"])``, handed to either engine.

    Made once and checked once: ``attach`` and ``exempt`` are normalised (``"Table_Cell"`` is
    ``"table-cell"``, ``"none"`` the empty set), ``answer_keys`` is checked, ``traces`` and
    ``abstain_phrases`` become tuples; a wrong value raises ``PolicyError`` or ``AnswerKeysError``
    naming the option. ``dataclasses.replace`` checks the new value again.
    """

    gold: str | Path | GoldSet | None = None
    """The gold set (a file or folder, or one already read); traces that join none of its cases, and
    every trace without it, are judged on the ``corpus`` basis (docs/analyzer.md "Corpus basis")."""
    corpus: str | Path | None = None
    """A corpus without cases, judged against alone; with ``gold``, merged into its corpus."""
    traces: Sequence[str | Path] | None = None
    """Trace files, folders or object-storage URLs; None runs over what is already in the store."""
    judge: str | Judge = "rules"
    """A judge's name, built by each engine (and each worker) with ``judge_options``, or a judge already
    built (a partitioned run ships it to its workers, so it must pickle)."""
    judge_options: Mapping[str, Any] | None = None
    labels: str | Path | None = None
    """People's labels (CSV or JSONL): they override the judge."""
    abstain_phrases: Sequence[str] = DEFAULT_ABSTAIN_PHRASES
    """Phrases that mark an answer as an abstention; the gold file's own are added to them."""
    answer_keys: Mapping[str, str] | None = None
    """The keys a JSON answer uses for each role (``{"claims": "statements"}``)."""
    attach: str | None = None
    """The attachment policy for this run, over the gold file's ``policy:`` (a case's ``attach:`` wins)."""
    exempt: Collection[str] | None = None
    """The kinds of text that need no citation, over the gold file's ``policy:`` (a list or ``"a,b"``)."""

    def __post_init__(self) -> None:
        put = object.__setattr__  # frozen: normalised here, once, and never changed after
        if self.attach is not None:
            put(self, "attach", attach_policy(self.attach, "attach"))
        if self.exempt is not None:
            listed = isinstance(self.exempt, Iterable) and not isinstance(self.exempt, str)
            put(self, "exempt", exempt_kinds(list(self.exempt) if listed else self.exempt, "exempt"))
        if self.answer_keys is not None:
            structured.keys_for(self.answer_keys)  # an unknown role raises here, not mid-run
            put(self, "answer_keys", dict(self.answer_keys))
        if self.traces is not None:
            put(self, "traces", tuple(self.traces))
        put(self, "abstain_phrases", tuple(self.abstain_phrases))
        put(self, "judge_options", dict(self.judge_options or {}))

    @classmethod
    def resolve(cls, options: RunOptions | None, settings: Mapping[str, Any], caller: str) -> RunOptions:
        """``options`` with ``settings`` (an engine's keywords) over it, or made from them alone: what
        ``analyze(db, gold=...)`` and ``analyze(db, options)`` both come down to. A keyword that is no
        option raises ``TypeError`` naming ``caller``, as Python would."""
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = [k for k in settings if k not in names]
        if unknown:
            raise TypeError(f"{caller}() got an unexpected keyword argument {unknown[0]!r}")
        if options is None:
            return cls(**settings)
        return dataclasses.replace(options, **settings) if settings else options

    def answer_roles(self) -> dict[str, tuple[str, ...]]:
        """The keys read for each role of a JSON answer, the user's first (``structured.keys_for``)."""
        return structured.keys_for(self.answer_keys)

    def build_judge(self) -> Judge:
        """The judge: built from its name and ``judge_options``, or the one given, as it is."""
        if isinstance(self.judge, str):
            return judges.load(self.judge, **(self.judge_options or {}))
        return self.judge


__all__ = ["DEFAULT_ABSTAIN_PHRASES", "RunOptions"]
