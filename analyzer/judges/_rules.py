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

import itertools
import re
from collections.abc import Mapping, Sequence
from functools import cached_property, lru_cache
from typing import Any, NamedTuple

from citeline.analyzer import workers as _workers
from citeline.analyzer.judges import _qualifiers as qual
from citeline.analyzer.judges import _structure as struct
from citeline.analyzer.judges._api import BaseJudge, JudgeItem, Judgment, as_item
from citeline.analyzer.text import (
    _STOP,
    Value,
    _comparable,
    _same_value,
    _show,
    _stem,
    _values_of_folded,
    fold,
    led_by,
    value_present,
)

# A sentence ends at . ! ? or a line break; "Dec." "U.S." "Mr." and initials do not end one (see _merge_abbreviations).
_SENT_END = re.compile(r"(?<=[.!?])\s+|(?<=[.!?][\"'”’)\]])\s+|\s*\n+\s*")
# every place _SENT_END can match is one of these (opening with a character class, it is found fast)
_MAY_END = re.compile(r"[.!?][\"'”’)\]]?\s|\n")
_SHORT_TAIL = re.compile(r"(?:\b[A-Za-z]{1,3}|\b(?:[A-Z]\.)+)\.$")
_TOKEN = re.compile(r"[a-z0-9][a-z0-9\-']*")
_WORDISH = re.compile(r"[a-z][a-z\-']{2,}")
# a capitalised span: Joey Cape, Rebel Heart Tour, University of Texas, McDonald's
_NAME = re.compile(
    r"(?<![\w'])[A-Z][\w'’\-.]*(?:\s+(?:(?:of|the|de|del|da|van|von|der|la|le|and|&)\s+)?[A-Z][\w'’\-.]*)*"
)
_NAME_GLUE = frozenset("of the de del da van von der la le and &".split())
# capitalised because they open a sentence or are titles of address, not because they name something
_NOT_NAMES = _STOP | frozenset(
    "a an in on at as by to of if it he she we i is be or so no yes however although though after before "
    "since during while when where there here this that these those then thus also but and yet what which "
    "who whom whose why how sure well oh hi hello yeah okay ok mr mrs ms dr st both either each every many "
    "most some such other another moreover furthermore additionally similarly likewise nonetheless "
    "nevertheless therefore hence thus overall finally firstly secondly thirdly lastly instead meanwhile "
    "consequently ultimately generally typically specifically notably importantly alternatively conversely "
    "otherwise accordingly besides still today currently recently historically traditionally "
    # months and days are read as dates (values), not as names
    "january february march april may june july august september october november december jan feb mar apr "
    "jun jul aug sep sept oct nov dec monday tuesday wednesday thursday friday saturday sunday".split()
)
# v3: closed classes that are never names when capitalised alone: prepositions ("Upon announcing his
# retirement", "Following the premiere") and number words ("One of the first...")
_NOT_NAMES_V3 = _NOT_NAMES | frozenset(
    "aboard about above across against along alongside amid amidst among amongst around atop behind below "
    "beneath beside besides beyond despite down following from inside into near off onto opposite outside over "
    "past per regarding round through throughout toward towards under underneath unlike until unto upon versus "
    "via within without according including excluding concerning considering "
    "one two three four five six seven eight nine ten first second third fourth fifth".split()
)
# words a reply adds around its content (dialogue, chat): not evidence for or against anything
_FILLER = frozenset(
    "yes yeah sure well okay think know like really actually great good nice love lot lots just kind "
    "sort maybe probably heard hear guess believe pretty quite indeed definitely absolutely certainly "
    "interesting fun cool awesome".split()
)
_NEGATOR = re.compile(r"\b(?:not|no|never|none|nobody|nothing|neither|nor|cannot|without)\b|n't\b")
_MAY = re.compile(r"\b(?:may|might|can|could|optional|optionally|allowed|permitted)\b")
_MUST = re.compile(r"\b(?:must|required|requires|require|shall|mandatory|obliged|have to|has to|need to|needs to)\b")
_SCOPE = 6  # a negator or modal governs the next few content words of its clause ("and", "or" continue it)
_CLAUSE_END = re.compile(r"[,.;:!?()\[\]\"“”]|\b(?:but|which|that|because|while|although|though|whereas|if|when)\b")


class _Text:
    """One sentence (or claim sentence), read once: words and values at once (a window is chosen by them),
    tokens and negation/modality cues when first asked (most evidence sentences never are)."""

    def __init__(self, folded: str) -> None:
        self.text = folded
        self.words: frozenset[str] = frozenset(map(_word_key, _WORDISH.findall(folded))) - _NOT_A_WORD
        self.values: tuple[Value, ...] = _values_of_folded(folded)
        # what a window is chosen by: words and value keys
        self.units: frozenset[str] = self.words.union(*(_value_keys(v) for v in self.values))

    @cached_property
    def tokens(self) -> frozenset[str]:
        """Every folded token, and each pair run together (a name written "Tech Crunch" is found as "TechCrunch")."""
        toks = [w.strip("-'.").removesuffix("'s") for w in _TOKEN.findall(self.text.replace("’", "'"))]
        return frozenset(toks) | frozenset(a + b for a, b in itertools.pairwise(toks))

    @cached_property
    def _cues(self) -> dict[str, list[int]]:
        """Where each kind of cue ends (one scan); the words each governs are read when first asked."""
        return _cue_ends(self.text)

    # the words each kind of cue governs, read when first asked (most evidence sentences never are)
    @cached_property
    def negated(self) -> frozenset[str]:  # stemmed words a negator governs
        return _governed_after(self.text, self._cues.get("negated"))

    @cached_property
    def may(self) -> frozenset[str]:
        return _governed_after(self.text, self._cues.get("may"))

    @cached_property
    def must(self) -> frozenset[str]:
        return _governed_after(self.text, self._cues.get("must"))


_NOT_A_WORD = frozenset({""})


@lru_cache(maxsize=300_000)
def _word_key(w: str) -> str:
    """A content word's stem; "" for a stop word or a chat filler."""
    if w in _STOP or w in _FILLER:
        return ""
    return _stem(w.strip("-'"))


# every cue opens with one of these letters (negators: n, c, w; n't: n; may: m, c, o, a, p; must: m, r, s, o, h, n)
_CUES = led_by("ncwmoaprsh", f"(?P<negated>{_NEGATOR.pattern})|(?P<may>{_MAY.pattern})|(?P<must>{_MUST.pattern})")
_NOTHING = frozenset[str]()


def _cue_ends(t: str) -> dict[str, list[int]]:
    """For negators and may/must words: where each one ends, by kind."""
    found: dict[str, list[int]] = {}
    for m in _CUES.finditer(t):
        found.setdefault(m.lastgroup or "", []).append(m.end())
    return found


def _governed_after(t: str, ends: list[int] | None) -> frozenset[str]:
    """The stemmed words cues ending at ``ends`` govern: the next few content words of each one's clause."""
    if not ends:
        return _NOTHING
    out: set[str] = set()
    for at in ends:
        end = _CLAUSE_END.search(t, at, at + 80)
        following = [w for w in _WORDISH.findall(t, at, end.start() if end else at + 80) if w not in _STOP]
        out.update(_stem(w) for w in following[:_SCOPE])
    return frozenset(out)


def _read(sentence: str, folded: bool = False) -> _Text:
    return _Text(sentence if folded else fold(sentence))


def sentences(text: str) -> list[str]:
    """Split prose into sentences, keeping abbreviations and initials inside theirs."""
    if _MAY_END.search(text) is None:  # no place a sentence can end inside it (most claims): one sentence
        return [text] if text.strip() else []
    return _split_sentences(text)


def _split_sentences(text: str) -> list[str]:
    parts = [p for p in _SENT_END.split(text) if p and p.strip()]
    out: list[str] = []
    for p in parts:
        if out and _SHORT_TAIL.search(out[-1]) and not out[-1].endswith(("!", "?")):
            out[-1] = f"{out[-1]} {p}"
        else:
            out.append(p)
    return out


@lru_cache(maxsize=65536)
def _read_passage(text: str) -> tuple[_Text, ...]:
    return tuple(_read(s, folded=True) for s in sentences(fold(text)))


@lru_cache(maxsize=65536)
def _passage_vocab(text: str) -> frozenset[str]:
    read = _read_passage(text)
    return frozenset().union(*(s.tokens for s in read), *(s.words for s in read))


class _Vocab:
    """Every token and word of the cited texts, without building their union for each citation."""

    def __init__(self, evidence: Sequence[str]) -> None:
        self.texts = evidence
        self.sets = [_passage_vocab(e) for e in evidence]

    def __contains__(self, token: object) -> bool:
        return any(token in s for s in self.sets)


@lru_cache(maxsize=100_000)
def _token(word: str) -> str:
    return fold(word).replace("’", "'").strip("-'.").removesuffix("'s")


class _Name(NamedTuple):
    shown: str
    tokens: frozenset[str]
    loose: bool  # a lone word opening the sentence: any of its forms will do
    joined: str  # the words run together: "Tech Crunch" is found as "techcrunch"


@lru_cache(maxsize=4096)
def _names(claim: str, v3: bool = False) -> tuple[_Name, ...]:
    """Capitalised spans of the claim, each with the folded tokens that must be found.

    A lone capitalised word that opens a list item or a heading, or follows a colon, is usually an
    ordinary word written with a capital: it is not taken for a name. One that opens a sentence is
    ("Norway set the record"): news and encyclopedia prose open sentences with names.
    """
    not_names = _NOT_NAMES_V3 if v3 else _NOT_NAMES
    out = []
    for m in _NAME.finditer(claim):
        words = m.group(0).split()
        tokens = {t for t in map(_token, words) if t and t not in _NAME_GLUE}
        if len(words) == 1 and (
            not tokens or tokens <= not_names or _opens(claim, m.start()) or _discourse(claim, m.start(), m.end())
        ):
            continue
        tokens -= not_names
        if tokens:
            loose = len(words) == 1 and _opens_sentence(claim, m.start())  # "Returns within 30 days" may be a verb
            if loose:
                tokens |= {_stem(t) for t in tokens}
            joined = "".join(t for t in map(_token, words) if t and t not in _NAME_GLUE and t not in not_names)
            out.append(_Name(m.group(0).strip(".,;:"), frozenset(tokens), loose, joined))
    return tuple(out)


def _opens(text: str, at: int) -> bool:
    """Does the word at ``at`` open a list item, a heading or what follows a colon (markdown answers)?"""
    return text[:at].rstrip(" \t").endswith(("*", "-", "•", ":", "#", "_", "\n"))


# endings of ordinary words, on words of eight letters or more: shorter ones with these endings are often
# names (Italy, Beijing, France, Portugal, Lakers), so they stay names
_COMMON_ENDINGS = (
    "ly",
    "ing",
    "ed",
    "ive",
    "ous",
    "ment",
    "ness",
    "ity",
    "tion",
    "sion",
    "able",
    "ible",
    "ful",
    "less",
)
_NAME_SHAPE = re.compile(r".[A-Z]|\d|^[A-Z]{2,}")  # WhatsApp, McDonald, F1, NASA


def _opens_sentence(text: str, at: int) -> bool:
    return not text[:at].strip() or text[:at].rstrip()[-1] in ".!?"


def _discourse(text: str, start: int, end: int) -> bool:
    """A lone word opening a sentence that reads as an ordinary word: followed by a comma ("Similarly,"),
    or shaped like one ("Enhancing", "Numerous", "Improved") and not like a name (WhatsApp, NASA)."""
    word = text[start:end]
    if not _opens_sentence(text, start) or _NAME_SHAPE.search(word):
        return False
    return text[end : end + 1] == "," or (len(word) >= 8 and word.lower().endswith(_COMMON_ENDINGS))


def _acronym_in(acronym: str, evidence: str) -> bool:
    """UN in "United Nations", EEOC in "Equal Employment Opportunity Commission"."""
    letters = acronym.upper()
    if not 2 <= len(letters) <= 6 or not letters.isalpha():
        return False
    glue = r"(?:\s+(?:of|the|and|for|on|&)){0,2}\s+"
    return re.search(r"\b" + glue.join(f"{c}[\\w'-]*" for c in letters) + r"\b", evidence) is not None


def _name_found(name: _Name, all_tokens: _Vocab, w_tokens: frozenset[str], evidence: str) -> bool:
    """Every word of the name in the evidence (an acronym spelled out counts), and one of them in the window.

    Every word, not most: "The Walt Disney Company" against "The Walt Warner Bros Company" differs in one.
    A lone word opening the sentence is ``loose``: any one of its forms (returns, return) will do.
    """
    tokens = name.tokens
    if name.loose:
        return any(t in all_tokens for t in tokens)
    if name.joined in all_tokens:
        return True
    if not all(t in all_tokens or _acronym_in(t, evidence) for t in tokens):
        return False
    return bool(tokens & w_tokens) or not all(t in all_tokens for t in tokens)


def _states_something(sentence: str, t: _Text, v3: bool) -> bool:
    return len(t.words) >= 2 or bool(t.values) or bool(_names(sentence, v3))


@lru_cache(maxsize=100_000)
def _value_keys(v: Value) -> frozenset[str]:
    """What a value is looked up by when choosing a window: its amount (a date's month and day), and a year."""
    if v[0] == "date" and v[1]:
        return frozenset((f"\0{v[0]}:{v[2]:g}", f"\0num:{v[1]}"))
    return frozenset((f"\0{v[0]}:{v[2]:g}",))


class _Window:
    """The evidence sentences a claim sentence is compared with (one is made per claim sentence: a plain class)."""

    __slots__ = ("sentences",)

    def __init__(self, sentences: tuple[_Text, ...]) -> None:
        self.sentences = sentences

    # a window is most often one sentence: its sets are then that sentence's own, not a union
    @property
    def words(self) -> frozenset[str]:
        ss = self.sentences
        return ss[0].words if len(ss) == 1 else frozenset().union(*(s.words for s in ss))

    @property
    def tokens(self) -> frozenset[str]:
        ss = self.sentences
        return ss[0].tokens if len(ss) == 1 else frozenset().union(*(s.tokens for s in ss))

    @property
    def values(self) -> list[Value]:
        return [v for s in self.sentences for v in s.values]

    def governed(self, attr: str) -> frozenset[str]:
        ss = self.sentences
        if len(ss) == 1:
            got: frozenset[str] = getattr(ss[0], attr)
            return got
        return frozenset().union(*(getattr(s, attr) for s in ss))


def _align(claim: _Text, passage: Sequence[_Text], most: int) -> _Window:
    """Greedy cover: the evidence sentences that add the most of the claim's words and values, up to ``most``."""
    target = claim.units
    units = [(i, u) for i, u in ((i, s.units & target) for i, s in enumerate(passage)) if u]
    if len(units) == 1 and most >= 1:  # one sentence shares anything with the claim (most claims): it is the window
        return _Window((passage[units[0][0]],))
    return _Window(tuple(passage[i] for i in _cover(units, target, most)))


def _cover(units: list[tuple[int, frozenset[str]]], target: frozenset[str], most: int) -> list[int]:
    """The sentences (by index) the greedy cover takes, in order, from each one's units shared with the claim."""
    covered: set[str] = set()
    chosen: list[int] = []
    shared = dict(units)
    for _ in range(most):
        best, gain = -1, 0
        for i, u in units:
            g = len(u - covered)
            if g > gain:
                best, gain = i, g
        # a further sentence must add two things (or a value): one shared word is coincidence
        picked = shared[best] if best >= 0 else frozenset()
        if best < 0 or (chosen and gain < 2 and not any(x.startswith("\0") for x in picked - covered)):
            break
        chosen.append(best)
        covered |= picked
        if covered >= target:
            break
    return sorted(chosen)


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
        """Large batches are judged on every core: items citing the same evidence go to the same process,
        and each process is sent each evidence text once (not once per item citing it)."""
        items = [as_item(it) for it in items]
        if self.workers <= 1 or len(items) < PARALLEL_MIN:
            with _workers.collector_paused():
                return [self.judge(*it) for it in items]
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
        evidence = [e for e in evidence if e and e.strip()]
        if not evidence:
            return Judgment("not_applicable", "no evidence text to judge against")
        whole = fold(" ".join(evidence)) if quotes else ""
        for q in quotes:
            if q and fold(q) not in whole:
                return Judgment("contradicted", f"quote {q!r} does not occur in the cited evidence")
        if facts:
            verdict = _facts(claim, facts)
            if verdict is not None:
                return verdict
        passage = [s for e in evidence for s in _read_passage(e)]
        all_tokens = _Vocab(evidence)
        joined = " ".join(evidence)
        parts = [(s, _read(s)) for s in sentences(claim)]
        # a sentence that states nothing checkable ("Yes, I love that movie!") is not judged, unless it is all
        checkable = [p for p in parts if _states_something(*p, self._v3)] or parts
        verdicts = [self._sentence(s, read, passage, all_tokens, joined) for s, read in checkable] or [
            Judgment("insufficient", "the claim has no text")
        ]
        for label in ("contradicted", "insufficient"):
            for v in verdicts:
                if v.label == label:
                    return v
        return verdicts[0]

    def _sentence(
        self, text: str, claim: _Text, passage: Sequence[_Text], all_tokens: _Vocab, evidence: str
    ) -> Judgment:
        window = _align(claim, passage, self.window)
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
            for name in _names(text, self._v3):
                if not _name_found(name, all_tokens, w_tokens, evidence):
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

    def _qualifiers(self, claim: _Text, window: _Window, shared: frozenset[str], evidence: _Vocab) -> Judgment | None:
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
            found = struct.split(c, _words_of, evidence.__contains__, self.coverage)
        return found

    def _v3_readers(
        self, c: str, claim: _Text, window: _Window, w: list[str], shared: frozenset[str], evidence: _Vocab
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
            found = qual.clauses(c, _words_of, absent)
        return found


def _modality_differs(claim: _Text, window: _Window, w_words: frozenset[str]) -> bool:
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


def _words_of(text: str) -> frozenset[str]:
    return frozenset(map(_word_key, _WORDISH.findall(text))) - _NOT_A_WORD


_DEFAULTS: dict[str, dict[str, Any]] = {}
PARALLEL_MIN = 4000  # below this, starting processes costs more than it saves


def _judge_chunk(job: tuple[dict[str, Any], list[str], list[tuple[str, list[int], Any, Any]]]) -> list[tuple[str, str]]:
    """One worker's share: items name their evidence by its index in ``texts``; answers go back as tuples."""
    settings, texts, items = job
    judge = RulesJudge(**settings, workers=1)
    out = []
    with _workers.collector_paused():
        for claim, evidence, facts, quotes in items:
            j = judge.judge(claim, [texts[k] for k in evidence], facts, quotes)
            out.append((j.label, j.rationale))
    return out


def _flag(v: object) -> bool:
    if isinstance(v, str):
        return v.strip().lower() not in {"0", "false", "no", "off"}
    return bool(v)


def _facts(claim: str, facts: Sequence[str]) -> Judgment | None:
    claim_fold = fold(claim)
    claim_values = _values_of_folded(claim_fold)
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
