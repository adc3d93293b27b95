"""The rules judge's qualifier readers (v3): what a claim says about its numbers and its subject beyond
the words themselves. Each reader is one function with the example that motivates it; each reads a claim
sentence and its evidence window as folded text (``text.fold``) and answers a verdict, or None when it
has nothing to say. They only take back what the word coverage would call entailed.

- ``comparison``: "orders under $50" vs "orders over $50"; "at least" vs "at most"; "before" vs "since";
- ``direction``: "fees fell 5%" vs "fees rose 5%"; "an increase" vs "a decrease"; "+5%" vs "-5%";
- ``per``: "$20 per day" vs "$20 per month"; "per user" vs "per account";
- ``quantifiers``: "all plans" vs "some plans" or "the Pro plan"; "always" vs "usually"; "every" vs "some";
- ``scope``: "in every country" vs "in the EU"; "domestic" vs "international";
- ``counts``: a count or an ordinal written as a word ("nine tackles", "the fourth team");
- ``clauses``: "Refunds take 5 business days and include the original shipping fee" against a passage
  with only the first half: the uncovered clause is named.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import NamedTuple

from citeline.analyzer.judges._api import Judgment
from citeline.analyzer.text import _STOP, Value, _stem, value_present, value_spans

_WORD = re.compile(r"[a-z][a-z\-']{2,}")
_CLAUSE = re.compile(r"[,.;:!?()\[\]\"“”]|\b(?:but|which|that|because|while|although|though|whereas|if|when)\b")
_PIECE = re.compile(r"[a-z]+|\d+")
# punctuation read as a space when a claim's words are looked up (a hyphen is kept: "in-store", "two-hour")
_SPACES = str.maketrans(dict.fromkeys(".,;:!?()[]{}\"“”‘’'/+*$%&=<>|#@", " "))


def _content(text: str) -> list[str]:
    """The stemmed content words of a stretch of folded text, in order."""
    return [_stem(w.strip("-'")) for w in _WORD.findall(text) if w not in _STOP]


def _clause_bounds(t: str, at: int) -> tuple[int, int]:
    """The clause around position ``at``: from the last clause mark before it to the next one after."""
    start = 0
    for m in _CLAUSE.finditer(t, 0, at):
        start = m.end()
    end = _CLAUSE.search(t, at)
    return start, end.start() if end else len(t)


# --- comparison and threshold operators ------------------------------------------------------------------

_ABOVE, _BELOW = "above", "below"
_BOUND_WORDS = {
    _ABOVE: "more than|greater than|higher than|larger than|longer than|later than|at least|no less than|"
    "not less than|no fewer than|no earlier than|in excess of|upwards of|over|above|exceeding|beyond|after|since",
    _BELOW: "less than|fewer than|lower than|smaller than|shorter than|earlier than|at most|no more than|"
    "not more than|no later than|up to|under|below|within|before|until|till|prior to",
}
# the longest first, so "no more than" is read before "more than"
_BOUND_BEFORE = re.compile(
    r"\b("
    + "|".join(sorted((w for ws in _BOUND_WORDS.values() for w in ws.split("|")), key=len, reverse=True))
    + r")\s+(?:the\s+|a\s+|an\s+)?$"
)
_BOUND_DIR = {w: d for d, ws in _BOUND_WORDS.items() for w in ws.split("|")}
# after the value, perhaps past its noun: "$50 or more", "2 guests or fewer", "18+"
_BOUND_AFTER = re.compile(
    r"^(?:\+|(?:\s+[a-z]+)?\s+(?:or|and)\s+(?:(?P<up>more|above|higher|greater|longer|later|over|up)"
    r"|(?P<down>less|fewer|below|under|lower|shorter|earlier|sooner)))\b"
)
# a time word after before/after/since/until: "before the meeting" vs "after the meeting"
_TEMPORAL = re.compile(
    r"\b(before|after|since|until|prior to)\s+(?:(?:the|a|an|his|her|their|its)\s+)?([a-z][a-z\-']{2,})"
)
_TEMPORAL_DIR = {"before": _BELOW, "until": _BELOW, "prior to": _BELOW, "after": _ABOVE, "since": _ABOVE}


class _Bound(NamedTuple):
    direction: str
    value: Value | None  # the bounded value, or None for a bounded word
    word: str  # the bounded word's stem ("" for a value)
    shown: str  # as written: "under $50"


def _bounds(t: str) -> tuple[_Bound, ...]:
    """Every bound the text puts on a value ("over $50", "$50 or more", "since 2010") or on an event
    ("before the meeting")."""
    out = []
    for start, end, v in value_spans(t):
        before = _BOUND_BEFORE.search(t, max(0, start - 24), start)
        if before is not None:
            cue = before.group(1)
            out.append(_Bound(_BOUND_DIR[cue], v, "", t[before.start() : end]))
            continue
        after = _BOUND_AFTER.match(t[end : end + 32])
        if after is not None:
            direction = _BELOW if after.group("down") else _ABOVE
            out.append(_Bound(direction, v, "", t[start : end + after.end()].strip()))
    if not ("before" in t or "after" in t or "since" in t or "until" in t or "prior to" in t):
        return tuple(out)  # no word _TEMPORAL opens with (most texts): its scan is skipped
    for m in _TEMPORAL.finditer(t):
        word = m.group(2)
        if word not in _STOP and not word[0].isdigit():
            out.append(_Bound(_TEMPORAL_DIR[m.group(1)], None, _stem(word), m.group(0)))
    return tuple(out)


bounds = lru_cache(maxsize=65536)(_bounds)  # evidence sentences recur (a gold chunk meets many claims)


def _same_bounded(a: _Bound, b: _Bound) -> bool:
    if a.value is not None:
        return b.value is not None and value_present(a.value, (b.value,))
    return b.value is None and a.word == b.word


def comparison(claim: str, window: Sequence[str]) -> Judgment | None:
    """A value (or event) bounded one way in the claim and only the other way in the evidence: contradicted.

    *Example*: "Orders under $50 ship free." against "Orders over $50 ship free." (v2: entailed, every
    word and value agrees). Not caught: a strict against a loose bound ("over $50" vs "$50 or more")."""
    theirs = [b for s in window for b in bounds(s)]  # cached: a window sentence meets many claims
    if not theirs:  # nothing bounded in the evidence: nothing to contradict, the claim need not be read
        return None
    mine = _bounds(claim)  # a claim is read once: not cached, so evidence readings stay in the cache
    for b in mine:
        same = [o for o in theirs if _same_bounded(b, o)]
        if same and all(o.direction != b.direction for o in same):
            return Judgment("contradicted", f"the claim says {b.shown!r}, the evidence says {same[0].shown!r}")
    return None


# --- direction verbs and signs -------------------------------------------------------------------------------

_UP_WORDS = (
    "rise rises rose risen rising increase increased increases increasing grow grows grew grown growing climb "
    "climbs climbed gain gains gained jump jumps jumped surge surges surged soar soars soared raise raises raised "
    "raising boost boosts boosted higher expand expands expanded"
).split()
_DOWN_WORDS = (
    "fall falls fell fallen falling decrease decreased decreases decreasing decline declines declined declining "
    "drop drops dropped dropping shrink shrinks shrank shrunk plunge plunges plunged slump slumps slumped lower "
    "lowered reduce reduces reduced reducing reduction cut cuts lose loses lost"
).split()
# "up" and "down" only before a number ("up 5%"): elsewhere they are particles ("set up", "down the road")
_UP = re.compile(r"\b(?:" + "|".join(_UP_WORDS) + r"|up(?=\s+\d))\b")
_DOWN = re.compile(r"\b(?:" + "|".join(_DOWN_WORDS) + r"|down(?=\s+\d))\b")
# the cue words that can say a claim moves up or down (signs are read from the text: "+", "plus")
_UP_CUES = frozenset(_UP_WORDS) | {"up", "plus", "+"}
_DOWN_CUES = frozenset(_DOWN_WORDS) | {"down", "minus", "-"}
_ALL_MOVES = _UP_CUES | _DOWN_CUES  # when the claim's cue words are not known: read it
_SIGNED = re.compile(r"(?:^|(?<=[\s(]))(?P<sign>[+\-−]|minus\s|plus\s)\s?(?=\d)")
_REACH = (4, 6)  # a direction word governs the content words of its clause: the few before it, the few after


class _Moves(NamedTuple):
    up: frozenset[str]  # what the text says goes up: content-word stems and "\0" value keys
    down: frozenset[str]
    cue: dict[str, str]  # a governed word -> the direction word that governs it (for the rationale)
    written: dict[str, str]  # a value key -> the value as written ("5%")


def _key(v: Value) -> str:
    return f"\0{v[0]}:{v[2]:g}"


def _governed_by(t: str, at: int, end: int, written: dict[str, str]) -> set[str]:
    start, stop = _clause_bounds(t, at)
    before = _content(t[start:at])[-_REACH[0] :]
    after = _content(t[end:stop])[: _REACH[1]]
    keys = set()
    for s, e, v in value_spans(t):
        if start <= s < stop:
            keys.add(_key(v))
            written.setdefault(_key(v), t[s:e])
    return set(before) | set(after) | keys


def _moves(t: str) -> _Moves:
    """Which words and values the text says rise and which fall."""
    up: set[str] = set()
    down: set[str] = set()
    cue: dict[str, str] = {}
    written: dict[str, str] = {}
    for pattern, side in ((_UP, up), (_DOWN, down)):
        for m in pattern.finditer(t):
            got = _governed_by(t, m.start(), m.end(), written) - {_stem(m.group(0))}
            side.update(got)
            for g in got:
                cue.setdefault(g, m.group(0))
    for m in _SIGNED.finditer(t):
        sign = m.group("sign").strip()
        into = up if sign in ("+", "plus") else down
        for s, e, v in value_spans(t[m.end() : m.end() + 24])[:1]:
            if s == 0:
                into.add(_key(v))
                cue.setdefault(_key(v), sign)
                written.setdefault(_key(v), m.group(0).strip() + t[m.end() : m.end() + e])
    return _Moves(frozenset(up), frozenset(down), cue, written)


moves = lru_cache(maxsize=65536)(_moves)


def direction(claim: str, window: Sequence[str], short: bool, cues: frozenset[str] = _ALL_MOVES) -> Judgment | None:
    """A word or value said to go one way in the claim and only the other way in the evidence: contradicted.
    A value decides, or one word in a short claim (four words or fewer), or three: a direction word is a
    weaker cue than a negator (a passage that says a figure rose often says what fell beside it).

    *Example*: "Fees fell 5% last year." against "Fees rose 5% last year." (v2: entailed)."""
    theirs = [moves(s) for s in window]
    w_up = frozenset().union(*(m.up for m in theirs))
    w_down = frozenset().union(*(m.down for m in theirs))
    if not w_up and not w_down:  # the evidence says nothing rises or falls: the claim need not be read
        return None
    # a flip needs the claim to move a way the evidence also moves the other way: its cue words tell
    if not ((w_down and not cues.isdisjoint(_UP_CUES)) or (w_up and not cues.isdisjoint(_DOWN_CUES))):
        return None
    mine = _moves(claim)
    flipped = ((mine.up & w_down) - w_up) | ((mine.down & w_up) - w_down)
    if not flipped:
        return None
    if not (any(f.startswith("\0") for f in flipped) or short or len(flipped) >= 3):
        return None
    key = sorted(flipped)[0]
    said = mine.cue.get(key, "")
    other = next((m.cue[key] for m in theirs if key in m.cue), "")
    shown = ", ".join(sorted(mine.written.get(f, f) for f in flipped)[:3])
    return Judgment("contradicted", f"direction differs: the claim says {said!r}, the evidence {other!r} ({shown})")


# --- aggregation windows and denominators -------------------------------------------------------------------

_PERIODS = {
    "day": "day",
    "days": "day",
    "daily": "day",
    "week": "week",
    "weekly": "week",
    "wk": "week",
    "month": "month",
    "monthly": "month",
    "mo": "month",
    "year": "year",
    "yearly": "year",
    "annual": "year",
    "annually": "year",
    "annum": "year",
    "yr": "year",
    "hour": "hour",
    "hourly": "hour",
    "hr": "hour",
    "night": "night",
    "nightly": "night",
    "quarter": "quarter",
    "quarterly": "quarter",
    "minute": "minute",
    "min": "minute",
}
_NOT_DENOMINATORS = frozenset({"cent", "se", "the", "a", "an"})
_SAME_DENOMINATOR = {"capita": "person", "head": "person", "people": "person", "persons": "person"}
_PER = re.compile(
    r"\bper\s+(?P<per>[a-z][a-z\-]*)"
    r"|(?:\d\S*|\btimes|\bonce|\btwice)\s+(?:a|an|each|every)\s+(?P<rate>day|week|month|year|hour|night|quarter|minute)\b"
    r"|(?<=[\d%])\s?/\s?(?P<slash>[a-z]{2,})\b"  # "$20/month"; not "and/or"
    r"|\b(?P<adj>daily|weekly|monthly|yearly|annual|annually|hourly|nightly|quarterly)\b"
)


class _Per(NamedTuple):
    periods: frozenset[str]  # day, week, month, year, ...
    denominators: frozenset[str]  # user, account, person, order, ...


def _pers(t: str) -> _Per:
    """The aggregation windows (per day, monthly) and denominators (per user, /seat) the text counts by."""
    periods: set[str] = set()
    denominators: set[str] = set()
    for m in _PER.finditer(t):
        word = m.group("per") or m.group("rate") or m.group("slash") or m.group("adj")
        if word in _PERIODS:
            periods.add(_PERIODS[word])
        elif (m.group("per") or m.group("slash")) and word not in _NOT_DENOMINATORS:
            denominators.add(_SAME_DENOMINATOR.get(word, _stem(word)))
    return _Per(frozenset(periods), frozenset(denominators))


pers = lru_cache(maxsize=65536)(_pers)


def per(claim: str, window: Sequence[str]) -> Judgment | None:
    """The claim counts per one window or denominator, the evidence only per others: contradicted.

    *Examples*: "The plan costs $20 per day." against "The plan costs $20 per month."; "Limits apply per
    user." against "Limits apply per account." (v2: entailed, the words and the amount agree)."""
    theirs = [pers(s) for s in window]
    if not any(p.periods or p.denominators for p in theirs):
        return None
    mine = _pers(claim)
    for axis in ("periods", "denominators"):
        c: frozenset[str] = getattr(mine, axis)
        w = frozenset().union(*(getattr(p, axis) for p in theirs))
        if c and w and not c & w:
            mine_shown, theirs_shown = ", ".join(sorted(c)), ", ".join(sorted(w))
            return Judgment("contradicted", f"the claim counts per {mine_shown}, the evidence per {theirs_shown}")
    return None


# --- quantifiers and frequency adverbs ----------------------------------------------------------------------

_ALL = re.compile(
    r"\b(?:all(?! but\b)|every|each(?! other\b)|always|everyone|everybody|everything|everywhere|invariably)\b"
)
_NOT_ALL = re.compile(r"\b(?:at|after|above|of) all\b")
_SOME = re.compile(
    r"(?<!\bthe )(?<!\ba )\b(?:some|most|many|several|few|certain|select|selected|usually|often|typically|"
    r"generally|sometimes|frequently|occasionally|normally|mostly|mainly|largely|rarely|seldom)\b"
)
_EVERY_NOUN = re.compile(r"\b(?:all|every|each|any)\s+(?:of\s+(?:the\s+|our\s+|your\s+)?)?([a-z][a-z\-]{2,})")
_TOKENS = re.compile(r"[a-z0-9][a-z0-9'\-]*")
_SCOPE = 6  # a quantifier governs the next few content words of its clause


class _Quantified(NamedTuple):
    every: dict[str, str]  # a governed stem -> the universal word governing it ("all", "always")
    some: dict[str, str]  # a governed stem -> the partial word governing it ("some", "usually")


def _governs(t: str, pattern: re.Pattern[str], skip: re.Pattern[str] | None = None) -> dict[str, str]:
    out: dict[str, str] = {}
    for m in pattern.finditer(t):
        if skip is not None and skip.search(t, max(0, m.start() - 6), m.end()):
            continue
        _start, stop = _clause_bounds(t, m.end())
        for w in _content(t[m.end() : stop])[:_SCOPE]:
            out.setdefault(w, m.group(0))
    return out


def _quantified(t: str) -> _Quantified:
    return _Quantified(_governs(t, _ALL, _NOT_ALL), _governs(t, _SOME))


quantified = lru_cache(maxsize=65536)(_quantified)


# a capitalised word inside a sentence: after a space that follows anything but the end of a sentence, a
# colon or a list mark
_INNER_CAPITAL = re.compile(r"(?<=[^\s.!?:*\-•#])\s+([A-Z][\w'’\-]*)")


@lru_cache(maxsize=65536)
def capitalised(text: str) -> frozenset[str]:
    """The (folded) words written with a capital inside a sentence of the raw evidence: what names a plan,
    a region or a product ("the Pro plan", "in the EU")."""
    return frozenset(w.casefold() for w in _INNER_CAPITAL.findall(text))


def quantifiers(claim: str, window: Sequence[str], w_words: frozenset[str], evidence: Sequence[str]) -> Judgment | None:
    """A universal claim ("all", "every", "always") against evidence that says less: insufficient.

    Two readings: the evidence governs the same words with a partial word ("Some plans include..."; "The
    office is usually open..."), or it speaks of the claim's noun under a name the claim does not give
    ("all plans" against "the Pro plan"), with no universal word of its own for it.
    *Examples*: "All plans include phone support." against "The Pro plan includes phone support."; "The
    office is always open on Sundays." against "The office is usually open on Sundays." (v2: entailed)."""
    theirs = [quantified(s) for s in window]  # cached, and read first: the claim only when they may differ
    w_every = set().union(*(q.every for q in theirs))
    w_some = any(q.some for q in theirs)
    nouns = {_stem(m.group(1)): m.group(0) for m in _EVERY_NOUN.finditer(claim) if m.group(1) not in _STOP}
    nouns = {n: shown for n, shown in nouns.items() if n not in w_every and n in w_words}
    if not w_some and not nouns:
        return None
    mine = _quantified(claim)
    if not mine.every:
        return None
    for word, cue in mine.every.items():
        if word in w_every:
            continue
        said = next((q.some[word] for q in theirs if word in q.some), None)
        if said is not None:
            return Judgment("insufficient", f"the claim says {cue!r} ({word}), the evidence only {said!r}")
    if not nouns:
        return None
    names = frozenset().union(*(capitalised(e) for e in evidence))
    mine_tokens = set(_TOKENS.findall(claim))
    for s in window:
        toks = _TOKENS.findall(s)
        for i in range(1, len(toks)):
            noun = _stem(toks[i])
            if noun in nouns and toks[i - 1] in names and toks[i - 1] not in mine_tokens:
                shown = f"{toks[i - 1]} {toks[i]}"
                return Judgment("insufficient", f"the claim says {nouns[noun]!r}, the evidence only {shown!r}")
    return None


# --- scoped entities ----------------------------------------------------------------------------------------

_WIDE = re.compile(
    r"\b(?:worldwide|globally|everywhere|anywhere|internationally|nationwide|around the world"
    r"|across the (?:world|globe)|(?:in|across|throughout|within|at|to)\s+(?:all|every|any|each)\s+[a-z]+)\b"
)
_NARROW = re.compile(r"\b(?:in|across|throughout|within|outside)\s+(?:the\s+)?([a-z][\w.\-]*)")
# scopes of the same kind that exclude each other (a passage about domestic stays does not cover international ones)
_OPPOSITES = (
    ("domestic", "international"),
    ("domestic", "foreign"),
    ("online", "in-store"),
    ("online", "offline"),
    ("full-time", "part-time"),
    ("residential", "commercial"),
    ("inbound", "outbound"),
    ("prepaid", "postpaid"),
)


def scope(claim: str, window: Sequence[str], w_tokens: frozenset[str], evidence: Sequence[str]) -> Judgment | None:
    """The claim's scope (region, plan, product) wider than, or other than, the evidence's: insufficient.

    The name rule already wants every name of the claim in the evidence; this extends it to the claim's
    qualifying phrases: a claim scoped everywhere ("in every country", "worldwide") against evidence
    scoped to a named place or plan ("in the EU") with no wide scope of its own; a claim scoped to one of
    two exclusive kinds (domestic) against evidence about the other (international).
    *Examples*: "Returns are free in every country." against "Returns are free in the EU."; "Approval is
    required for domestic hotels above 4,000 TRY." against "Approval is required for international hotels
    above 4,000 TRY per night." (v2: entailed)."""
    mine_tokens = frozenset(_TOKENS.findall(claim))
    for a, b in (*_OPPOSITES, *((b, a) for a, b in _OPPOSITES)):
        if a in mine_tokens and b in w_tokens and a not in w_tokens and b not in mine_tokens:
            return Judgment("insufficient", f"the claim is about {a!r}, the evidence about {b!r}")
    wide = _WIDE.search(claim)
    if wide is None or any(_WIDE.search(s) for s in window):
        return None
    names = frozenset().union(*(capitalised(e) for e in evidence))
    for s in window:
        for m in _NARROW.finditer(s):
            name = m.group(1).rstrip(".")
            if name in names and name not in mine_tokens:
                shown = m.group(0).rstrip(".")
                return Judgment("insufficient", f"the claim says {wide.group(0)!r}, the evidence {shown!r}")
    return None


# --- counts and ordinals written as words ---------------------------------------------------------------------

_UNITS_WORDS = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen"
).split()
_ORDINALS = (
    "zeroth first second third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth thirteenth "
    "fourteenth fifteenth sixteenth seventeenth eighteenth nineteenth"
).split()
_NUMBER_WORDS = {w: i for i, w in enumerate(_UNITS_WORDS)} | {w: i for i, w in enumerate(_ORDINALS)}
for _i, _tens in enumerate("twenty thirty forty fifty sixty seventy eighty ninety".split(), start=2):
    _NUMBER_WORDS[_tens] = _i * 10
    _NUMBER_WORDS[_tens[:-1] + "ieth"] = _i * 10
# "one" is as often a pronoun ("one of the best") as a count, "first" an adverb ("to first expose") as an
# ordinal; "zero" is rarely a count
_NOT_COUNTS = frozenset({"zero", "zeroth", "one", "first"})
_ORDINAL = re.compile(r"\d+(?:st|nd|rd|th)")


def _number(token: str, claim: bool) -> int | None:
    if token[0].isdigit():
        return int(token[:-2])
    found = [_NUMBER_WORDS[p] for p in token.split("-") if p in _NUMBER_WORDS and not (claim and p in _NOT_COUNTS)]
    return sum(found) if found else None


@lru_cache(maxsize=65536)
def numbers_in(t: str) -> frozenset[int]:
    """Every number the text writes, as digits, words or ordinals ("nine", "9", "ninth", "9th"), and the
    sum of a compound ("twenty-first", "thirty-two")."""
    out = {int(p) if p.isdigit() else _NUMBER_WORDS[p] for p in _PIECE.findall(t) if p.isdigit() or p in _NUMBER_WORDS}
    if "-" in t:
        for word in t.translate(_SPACES).split():
            if "-" in word and word[0].isalpha() and (n := _number(word, claim=False)) is not None:
                out.add(n)
    return frozenset(out)


def counts(claim: str, window: Sequence[str]) -> Judgment | None:
    """A count or an ordinal the claim writes as a word must be in the window, in any form.

    *Example*: "The crossing will be replaced with an overpass with two elevators." against "... replaced
    with a pedestrian overpass." (v2: entailed, the value rule reads digits only). An ordinal opening the
    sentence before a comma ("Second, ...") orders the text, not the facts."""
    found: frozenset[int] | None = None
    words = claim.translate(_SPACES).split()
    for i, token in enumerate(words):
        if token[0].isdigit():
            if not _ORDINAL.fullmatch(token):
                continue
        elif token not in _NUMBER_WORDS and not ("-" in token and any(p in _NUMBER_WORDS for p in token.split("-"))):
            continue
        n = _number(token, claim=True)
        if n is None or (i == 0 and claim.lstrip().startswith(token + ",")):
            continue
        if found is None:
            found = frozenset().union(*(numbers_in(s) for s in window))
        parts = [_NUMBER_WORDS[p] for p in token.split("-") if p in _NUMBER_WORDS]
        if n not in found and not (len(parts) > 1 and all(p in found for p in parts)):
            return Judgment("insufficient", f"the evidence does not state {token!r}")
    return None


# --- partial support: every clause covered ----------------------------------------------------------------------

_COORDINATION = re.compile(r";\s*|,?\s+(?:and|but|while|whereas)\s+")
CLAUSE_WORDS = 3  # a clause of fewer content words is a list item or a phrase, not a statement of its own


def clauses(claim: str, words_of: Callable[[str], frozenset[str]], absent: frozenset[str]) -> Judgment | None:
    """Each clause a conjunction adds ("..., and ...", "; ", "but") must share a word with the evidence: one
    whose words are all ``absent`` from it is a statement the evidence does not address (partial support).

    *Example*: "Refunds take 5 business days and include the original shipping fee." against "Refunds
    take 5 business days." (v2: entailed, 62% of the words are covered)."""
    if len(absent) < CLAUSE_WORDS:  # most claims: no clause can be wholly absent
        return None
    parts = _COORDINATION.split(claim)
    for part in parts[1:]:  # what the conjunction adds; the first part holds the subject, covered by the rest
        words = words_of(part)
        if len(words) >= CLAUSE_WORDS and words <= absent:
            return Judgment("insufficient", f"the evidence does not cover {part.strip(' .;,')!r}")
    return None


# --- which readers a claim needs ---------------------------------------------------------------------------------


def _words(*patterns: str) -> frozenset[str]:
    """The words a set of alternatives is written with ("more than|at least" -> more, than, at, least)."""
    return frozenset(w for p in patterns for w in re.findall(r"[a-z]+", p))


# a claim's words that give each reader something to read; a word common in any prose (at, in, to, no)
# is left out when a rarer one of the same phrase is there to find it
_CUE_WORDS: dict[str, frozenset[str]] = {
    "comparison": _words(*_BOUND_WORDS.values(), "more above higher greater longer later over less fewer below")
    - frozenset({"no", "not", "at", "in", "of", "to"}),
    "direction": frozenset(_UP_WORDS) | frozenset(_DOWN_WORDS) | {"up", "down", "minus", "plus"},
    "per": frozenset(_PERIODS) | {"per"},
    "quantifiers": _words("all every each always everyone everybody everything everywhere invariably"),
    "scope": _words("worldwide globally everywhere anywhere internationally nationwide world globe all every any each")
    | frozenset(w for pair in _OPPOSITES for w in pair),
    "counts": frozenset(_NUMBER_WORDS) - _NOT_COUNTS,
    "partial": frozenset({"and", "but", "while", "whereas"}),
}


_ANY_CUE = frozenset().union(*_CUE_WORDS.values())
_READERS_OF = {w: frozenset(r for r, cues in _CUE_WORDS.items() if w in cues) for w in _ANY_CUE}


class Needs(NamedTuple):
    readers: frozenset[str]  # the readers with something to read in the claim
    words: frozenset[str]  # the claim's cue words (what a reader may check before reading the claim itself)


_NO_NEEDS = Needs(frozenset(), frozenset())
_SPACES_AND_HYPHENS = str.maketrans(dict.fromkeys(".,;:!?()[]{}\"“”‘’'/+*$%&=<>|#@-", " "))
# hyphenated cue words, found whole (their parts, "in", "time", are everywhere)
_HYPHENATED = tuple(w for w in _ANY_CUE if "-" in w)
_DIGIT = re.compile("[0-9]")  # one scan, not one per digit
# each its own pattern: one opening with a digit or a sign skips fast to where it can match; their
# alternation could not (8 us against 2 on a 190-character claim)
_ORDINAL_CUE = re.compile(r"\d(?:st|nd|rd|th)\b")
_SIGN_CUE = re.compile(r"[+\-−]\s?\d")
_SIGN_WORD_CUE = re.compile(r"\b(?:minus|plus)\s\d")


def needed(claim: str) -> Needs:
    """The readers with something to read in this claim, from one pass over its words (hyphenated words
    split: "two-hour"): most claims need none."""
    words = set(_ANY_CUE.intersection(claim.translate(_SPACES_AND_HYPHENS).split()))
    if "-" in claim:
        words.update(w for w in _HYPHENATED if w in claim)
    out: set[str] = set()
    for w in words:
        out |= _READERS_OF[w]
    if _DIGIT.search(claim) is not None:
        if _ORDINAL_CUE.search(claim):
            out.add("counts")
        signs = [m.group(0)[0] for m in _SIGN_CUE.finditer(claim)]
        if ("minus" in claim or "plus" in claim) and (word := _SIGN_WORD_CUE.search(claim)):
            signs.append("+" if word.group(0)[0] == "p" else "-")
        if signs:
            out.add("direction")
            words.update("+" if sign == "+" else "-" for sign in signs)
    if "+" in claim:
        out.add("comparison")
    if "/" in claim:
        out.add("per")
    if ";" in claim:
        out.add("partial")
    return Needs(frozenset(out), frozenset(words)) if out else _NO_NEEDS


#: the readings cached per text (a benchmark clears them to time a cold start)
CACHED = ("bounds", "moves", "pers", "quantified", "capitalised", "numbers_in")
