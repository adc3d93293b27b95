"""The ``rules`` judge, version 4: offline, deterministic, the default (``version=3`` and ``version=2`` load the
judges before it).

Each sentence of the claim is aligned to its best evidence window (the few
evidence sentences that together share the most of its words, names and
values) and compared with that window only. docs/judges.md lists every rule
with the labelled example that motivates it; in short, in order:

1. quotes must occur in the cited evidence;            -> contradicted
2. gold facts must be stated by the claim;             -> contradicted / insufficient
3. every value (money, percent, date, quantity, year, count) in the claim must
   be in the window; a different value of the same kind there contradicts;
4. every name (capitalised span) in the claim must be in the evidence, with a
   word of it in the window;                            -> insufficient
5. negation and may/must are compared within the window, and only where they
   govern a word the two share;                         -> contradicted
6. enough of the claim's content words must be in the window.  -> entailed, else insufficient
7. (v3) the qualifiers of ``_qualifiers``: comparisons, direction, aggregation windows and denominators,
   quantifiers, scope, counts written as words, and every clause covered; like 5, they only take back
   what 6 would call entailed.                          -> contradicted / insufficient
8. (v4) the structure readers of ``_structure``: a value bound to another subject in the evidence, a joined
   part the evidence does not support, a period outside the evidence's; after 7, so v3's reasons stand.
                                                        -> contradicted / insufficient
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from typing import Any

from citeline.analyzer import workers as _workers
from citeline.analyzer.judges import _qualifiers as qual
from citeline.analyzer.judges import _structure as struct
from citeline.analyzer.judges._api import BaseJudge, JudgeItem, Judgment, as_item
from citeline.analyzer.judges._reading import (
    Text,
    Vocab,
    Window,
    align,
    name_found,
    names,
    read,
    read_passage,
    states_something,
    words_of,
)
from citeline.analyzer.text import (
    Value,
    _comparable,
    _same_value,
    _show,
    _values_of_folded,
    fold,
    led_by,
    sentences,
    value_present,
)

VERSIONS = ("2", "3", "4")
#: the qualifier readers v3 adds (docs/judges.md, rule 7), each an option: off in v2, on in v3 and v4
READERS = ("comparison", "direction", "per", "quantifiers", "scope", "counts", "partial")
#: the structure readers v4 adds (docs/judges.md, rule 8), each an option: off in v2 and v3, on in v4
READERS_V4 = ("binding", "split", "time")


class RulesJudge(BaseJudge):
    """Deterministic, offline support judge: evidence windows, values, names, scoped negation, word coverage,
    (v3) the qualifiers: comparisons, direction, aggregation windows, quantifiers, scope, partial support, and
    (v4) the structure: value bindings, joined parts, time periods."""

    name = "rules"
    version = "4"

    # each keyword is one --judge-option: load() reads this signature to check and list them (docs/judges.md)
    def __init__(  # noqa: PLR0913
        self,
        coverage: float = 0.5,
        window: int = 4,
        values: bool = True,
        names: bool = True,
        negation: bool = True,
        modality: bool = True,
        comparison: bool | None = None,
        direction: bool | None = None,
        per: bool | None = None,
        quantifiers: bool | None = None,
        scope: bool | None = None,
        counts: bool | None = None,
        partial: bool | None = None,
        binding: bool | None = None,
        split: bool | None = None,
        time: bool | None = None,
        version: int | str = "4",
        workers: int | str = 0,
    ) -> None:
        self.rules_version = str(version).strip()  # which rules this judge applies
        if self.rules_version not in VERSIONS:
            raise ValueError(f"the rules judge has versions {', '.join(VERSIONS)}, not {version!r}")
        self.workers = int(workers) or min(_workers.cores(), 8)  # processes for a large batch; not a verdict
        self.coverage = float(coverage)
        self.window = int(window)
        self.check_values = _flag(values)
        self.check_names = _flag(names)
        self.check_negation = _flag(negation)
        self.check_modality = _flag(modality)
        if type(self).version == RulesJudge.version:  # a subclass that names its own version keeps it
            self.version = self.rules_version
        v3 = self.rules_version in ("3", "4")
        v4 = self.rules_version == "4"
        given = {
            "comparison": comparison,
            "direction": direction,
            "per": per,
            "quantifiers": quantifiers,
            "scope": scope,
            "counts": counts,
            "partial": partial,
            "binding": binding,
            "split": split,
            "time": time,
        }
        # a reader left unset is on from the version that added it: v2 is the judge it was, v3 the one with
        # the qualifiers, v4 the one with the structure readers
        self.readers = {k: (v4 if k in READERS_V4 else v3) if v is None else _flag(v) for k, v in given.items()}
        self._on = frozenset(k for k, v in self.readers.items() if v)
        self._v3 = v3

    @property
    def settings(self) -> Mapping[str, Any]:
        """The options set away from their version's defaults (the defaults are part of the version)."""
        defaults = _DEFAULTS[self.rules_version]
        return {k: v for k, v in self._raw().items() if defaults[k] != v}

    def _raw(self) -> dict[str, Any]:
        return {
            "coverage": self.coverage,
            "window": self.window,
            "values": self.check_values,
            "names": self.check_names,
            "negation": self.check_negation,
            "modality": self.check_modality,
            **self.readers,
        }

    def judge_many(self, items: Sequence[JudgeItem]) -> list[Judgment]:
        """A batch is judged with each distinct claim read once and each distinct set of cited texts put
        together once, for every item sharing it (``judge`` is the same decision for one item, and the oracle
        the batch is held equal to). Large batches are judged on every core: items citing the same evidence
        go to the same process, and each process is sent each evidence text once (not once per item). A
        subclass that overrides ``judge`` has every item asked of it, here (the base contract)."""
        items = [as_item(it) for it in items]
        if type(self).judge is not RulesJudge.judge:  # a subclass that judges its own way: each item through it
            with _workers.collector_paused():
                return [self.judge(*it) for it in items]
        if self.workers <= 1 or len(items) < PARALLEL_MIN:
            with _workers.collector_paused():
                return self._batch((it.claim, tuple(it.evidence), it.facts, it.quotes) for it in items)
        order = sorted(range(len(items)), key=lambda i: tuple(items[i].evidence))
        size = -(-len(order) // (self.workers * 4))
        chunks = [order[i : i + size] for i in range(0, len(order), size)]
        jobs = []
        for chunk in chunks:
            texts: dict[str, int] = {}
            packed = [
                (it.claim, [texts.setdefault(e, len(texts)) for e in it.evidence], it.facts, it.quotes)
                for it in (items[i] for i in chunk)
            ]
            jobs.append(({**self._raw(), "version": self.rules_version}, list(texts), packed))
        out: list[Judgment | None] = [None] * len(items)
        with _workers.pool(self.workers) as pool:
            for chunk, answers in zip(chunks, pool.map(_judge_chunk, jobs), strict=True):
                for i, (label, rationale) in zip(chunk, answers, strict=True):
                    out[i] = Judgment(label, rationale)
        return [a for a in out if a is not None]

    def judge(
        self, claim: str, evidence: Sequence[str], facts: Sequence[str] = (), quotes: Sequence[str] = ()
    ) -> Judgment:
        return self._decide(_Claim(claim, self._v3), _Cited(evidence), facts, quotes)

    def _batch(self, items: Iterable[tuple[str, tuple[str, ...], Sequence[str], Sequence[str]]]) -> list[Judgment]:
        """The items' answers, in order: the items of each distinct claim judged together from one reading of
        it (dropped after them: a run's claims are mostly distinct, its evidence is not), and each tuple of
        cited texts put together once for the whole batch."""
        items = list(items)
        by_claim: dict[str, list[int]] = {}
        for i, it in enumerate(items):
            by_claim.setdefault(it[0], []).append(i)
        cited: dict[tuple[str, ...], _Cited] = {}
        out: list[Judgment] = [_UNSET] * len(items)
        for claim, at in by_claim.items():
            c = _Claim(claim, self._v3)
            for i in at:
                _, evidence, facts, quotes = items[i]
                e = cited.get(evidence)
                if e is None:
                    e = cited[evidence] = _Cited(evidence)
                out[i] = self._decide(c, e, facts, quotes)
        return out

    def _decide(self, claim: _Claim, cited: _Cited, facts: Sequence[str], quotes: Sequence[str]) -> Judgment:
        """Rules 1-8 for one item, from its claim's and its evidence's readings."""
        if not cited.texts:
            return Judgment("not_applicable", "no evidence text to judge against")
        whole = fold(cited.joined) if quotes else ""
        for q in quotes:
            if q and fold(q) not in whole:
                return Judgment("contradicted", f"quote {q!r} does not occur in the cited evidence")
        if facts:
            verdict = _facts(claim, facts)
            if verdict is not None:
                return verdict
        passage, all_tokens, joined = cited.passage, cited.vocab, cited.joined
        verdicts = [self._sentence(s, read, passage, all_tokens, joined) for s, read in claim.checkable()] or [
            Judgment("insufficient", "the claim has no text")
        ]
        for label in ("contradicted", "insufficient"):
            for v in verdicts:
                if v.label == label:
                    return v
        return verdicts[0]

    def _sentence(self, text: str, claim: Text, passage: Sequence[Text], all_tokens: Vocab, evidence: str) -> Judgment:
        window = align(claim, passage, self.window)
        w_words = window.words
        if self.check_values:
            w_values = window.values
            for v in claim.values:
                if value_present(v, w_values):
                    continue
                rivals = [e for e in w_values if _comparable(v, e)]
                if rivals and v[0] != "num":
                    return Judgment("contradicted", f"claim says {_show(v)}, the evidence says {_show(rivals[0])}")
                return Judgment("insufficient", f"the evidence does not state {_show(v)}")
        if self.check_names:
            w_tokens = window.tokens
            for name in names(text, self._v3):
                if not name_found(name, all_tokens, w_tokens, evidence):
                    return Judgment("insufficient", f"the evidence does not name {name.shown!r}")
        shared = claim.words & w_words
        ratio = len(shared) / len(claim.words) if claim.words else 1.0
        if ratio >= self.coverage:  # negation and may/must can only take back what would be entailed
            w_negated = window.governed("negated")
            flipped = ((claim.negated & w_words) - w_negated) | ((w_negated & claim.words) - claim.negated)
            # one flipped word decides a short claim; a long one needs two (one is often a side clause)
            if self.check_negation and len(flipped) >= (1 if len(claim.words) <= 4 else 2):
                shown = ", ".join(sorted(flipped)[:3])
                return Judgment("contradicted", f"negation differs between the claim and its evidence ({shown})")
            if self.check_modality and _modality_differs(claim, window, w_words):
                return Judgment("contradicted", "obligation differs (may vs must)")
            read = self._qualifiers(claim, window, shared, all_tokens) if self._on else None
            if read is not None:
                return read
        if ratio >= self.coverage:
            return Judgment("entailed", f"{ratio:.0%} of the claim's words are in its evidence window; values agree")
        return Judgment("insufficient", f"only {ratio:.0%} of the claim's words are in its evidence window")

    def _qualifiers(self, claim: Text, window: Window, shared: frozenset[str], evidence: Vocab) -> Judgment | None:
        """Rule 7: the readers that are on and have something to read, contradictions first (a claim's label
        takes them first). Written out, not looped over: it runs for every sentence that would be entailed."""
        c = claim.text
        w = [s.text for s in window.sentences]
        found = self._v3_readers(c, claim, window, w, shared, evidence)
        # v4, rule 8: what the sentence binds together (values to subjects, periods, joined parts); after
        # rule 7, so a verdict v3 gave keeps its reason
        if (
            found is None
            and "binding" in self._on
            and claim.values
            and any(len(s.values) >= 2 for s in window.sentences)
        ):
            found = struct.binding(c, w, claim.words)
        if found is None and "time" in self._on and claim.values and _TIME_CUES.search(c):
            found = struct.time(c, w)
        if found is None and "split" in self._on and _JOINS.search(c):
            found = struct.split(c, words_of, evidence.__contains__, self.coverage)
        return found

    def _v3_readers(
        self, c: str, claim: Text, window: Window, w: list[str], shared: frozenset[str], evidence: Vocab
    ) -> Judgment | None:
        needs = qual.needed(c)
        todo = needs.readers & self._on
        if not todo:
            return None
        found = None
        if "comparison" in todo:
            found = qual.comparison(c, w)
        if found is None and "direction" in todo:
            found = qual.direction(c, w, short=len(claim.words) <= 4, cues=needs.words)
        if found is None and "per" in todo:
            found = qual.per(c, w)
        if found is None and "quantifiers" in todo:
            found = qual.quantifiers(c, w, window.words, evidence.texts)
        if found is None and "scope" in todo:
            found = qual.scope(c, w, window.tokens, evidence.texts)
        if found is None and "counts" in todo:
            found = qual.counts(c, w)
        if found is None and "partial" in todo:
            absent = frozenset(x for x in claim.words - shared if x not in evidence)
            found = qual.clauses(c, words_of, absent)
        return found


def _modality_differs(claim: Text, window: Window, w_words: frozenset[str]) -> bool:
    """The claim says must where its window says only may, or may where it says only must (of words they
    share). The claim's may and must are read only when the window's could differ from them."""
    e_may, e_must = window.governed("may") & claim.words, window.governed("must") & claim.words
    if e_may and not e_must:
        return bool(claim.must & w_words)
    if e_must and not e_may:
        return bool(claim.may & w_words)
    return False


_TIME_CUES = re.compile(r"\b(?:" + "|".join(sorted(struct.TIME_CUES)) + r")\s")
_JOINS = led_by(";abw", r";|\b(?:and|but|while|whereas)\b")


_DEFAULTS: dict[str, dict[str, Any]] = {}
_UNSET = Judgment("not_applicable", "not judged")  # a batch's placeholder, each replaced before it returns
PARALLEL_MIN = 4000  # below this, starting processes costs more than it saves


def _judge_chunk(job: tuple[dict[str, Any], list[str], list[tuple[str, list[int], Any, Any]]]) -> list[tuple[str, str]]:
    """One worker's share: items name their evidence by its index in ``texts``; answers go back as tuples."""
    settings, texts, items = job
    judge = RulesJudge(**settings, workers=1)
    with _workers.collector_paused():
        answers = judge._batch((c, tuple(texts[k] for k in e), f, q) for c, e, f, q in items)
    return [(j.label, j.rationale) for j in answers]


def _flag(v: object) -> bool:
    if isinstance(v, str):
        return v.strip().lower() not in {"0", "false", "no", "off"}
    return bool(v)


class _Claim:
    """A claim, read when first needed and then once for every item asking about it: folded with its values
    (for the gold facts), and its sentences that state something checkable, each read."""

    __slots__ = ("_checkable", "_values", "folded", "text", "v3")

    def __init__(self, text: str, v3: bool) -> None:
        self.text, self.v3 = text, v3
        self.folded = ""
        self._values: tuple[Value, ...] | None = None
        self._checkable: list[tuple[str, Text]] | None = None

    def values(self) -> tuple[Value, ...]:
        if self._values is None:
            self.folded = fold(self.text)
            self._values = _values_of_folded(self.folded)
        return self._values

    def checkable(self) -> list[tuple[str, Text]]:
        if self._checkable is None:
            parts = [(s, read(s)) for s in sentences(self.text)]
            # a sentence that states nothing checkable ("Yes, I love that movie!") is not judged, unless it is all
            self._checkable = [p for p in parts if states_something(*p, self.v3)] or parts
        return self._checkable


class _Cited:
    """The texts an item cites (the empty ones left out), put together for every item citing the same."""

    __slots__ = ("joined", "passage", "texts", "vocab")

    def __init__(self, evidence: Sequence[str]) -> None:
        self.texts = [e for e in evidence if e and e.strip()]
        self.joined = " ".join(self.texts)
        self.passage = [s for e in self.texts for s in read_passage(e)]
        self.vocab = Vocab(self.texts)


def _facts(claim: _Claim, facts: Sequence[str]) -> Judgment | None:
    claim_values = claim.values()
    claim_fold = claim.folded
    for fact in facts:
        fact_fold, fvals = _fact(fact)
        if fvals:
            if not all(any(_same_value(f, c) for c in claim_values) for f in fvals):
                wrong = [c for c in claim_values for f in fvals if _comparable(f, c)]
                if wrong:
                    return Judgment("contradicted", f"states {_show(wrong[0])} where the gold fact is {fact!r}")
                return Judgment("insufficient", f"does not state the gold fact {fact!r}")
        elif fact_fold not in claim_fold:
            return Judgment("insufficient", f"does not state the gold fact {fact!r}")
    return None


@lru_cache(maxsize=8192)
def _fact(fact: str) -> tuple[str, tuple[Value, ...]]:
    """A gold fact folded, and its values: read once for every claim that must state it."""
    folded = fold(fact)
    return folded, _values_of_folded(folded)


_DEFAULTS.update({v: RulesJudge(version=v, workers=1)._raw() for v in VERSIONS})
