"""The rules judge's structure readers (v4): what a sentence binds together, beyond which words it shares.

Each reader reads a claim sentence and its evidence as folded text (``text.fold``) and answers a verdict,
or None when it has nothing to say; like the v3 qualifiers they only take back what the word coverage
would call entailed.

- ``binding``: a value belongs to the subject of its clause. "domestic transfer fee is ₦150; international
  fee is ₦500" binds ₦150 to the domestic fee: "The international transfer fee is ₦150" has every word
  and number of the passage and is still contradicted (seed 004's FEE-2).
- ``split``: a sentence joined by and / but / while / whereas / a semicolon is read part by part; a part
  whose words the evidence mostly lacks is named, and the sentence is not supported as a whole (seed 001:
  "Source supports half the sentence | Partially supported").
- ``time``: before / until / since / from / as of / starting / in DATE read as intervals; a claim about
  the period before the one the evidence starts at (or after the one it ends at) is contradicted, one
  reaching outside the evidence's period insufficient (seed 000's "temporal qualifiers").
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import NamedTuple

from citeline.analyzer.judges._api import Judgment
from citeline.analyzer.text import _STOP, Value, _comparable, _show, _stem, value_present, value_spans

_WORD = re.compile(r"[a-z][a-z\-']{2,}")
# the clauses and list items of a sentence: a comma or colon that is not inside a number ("5,000", "20:15")
_SEGMENT = re.compile(r";|:(?!\d)|,(?!\d)|\s[-–—]\s|\b(?:and|but|while|whereas|or)\b")
# words that carry no subject: the copula and the verbs a value is stated with
_NOT_SUBJECT = _STOP | frozenset(
    "is are was were be been being costs cost priced charged set equals amounts totals stands remains "
    "will would now currently only just".split()
)


class Binding(NamedTuple):
    value: Value
    words: tuple[str, ...]  # the stemmed content words of its clause, in order
    shown: str  # the clause as written (folded)


def _subject_words(text: str) -> tuple[str, ...]:
    return tuple(_stem(w.strip("-'")) for w in _WORD.findall(text) if w.strip("-'") not in _NOT_SUBJECT)


def _segments(t: str) -> list[tuple[int, int]]:
    out, start = [], 0
    for m in _SEGMENT.finditer(t):
        out.append((start, m.start()))
        start = m.end()
    out.append((start, len(t)))
    return out


def _bindings(t: str) -> tuple[Binding, ...]:
    """Each value of the sentence with the words of its own clause. A clause that is only a value takes
    the words of the clause before it when that one has no value ("Domestic: ₦150")."""
    spans = value_spans(t)
    if not spans:
        return ()
    out: list[Binding] = []
    segs = _segments(t)
    prev_words: tuple[str, ...] = ()
    prev_had_value = True
    for a, b in segs:
        inside = [(s, e, v) for s, e, v in spans if a <= s < b]
        if not inside:
            prev_words, prev_had_value = _subject_words(t[a:b]), False
            continue
        # the words of the clause outside its values
        text, last = [], a
        for s, e, _v in inside:
            text.append(t[last:s])
            last = e
        text.append(t[last:b])
        words = _subject_words(" ".join(text))
        shown = t[a:b].strip(" .")
        if not words and not prev_had_value and prev_words:
            words = prev_words
            shown = f"{' '.join(prev_words)}: {shown}"
        out.extend(Binding(v, words, shown) for _s, _e, v in inside)
        prev_words, prev_had_value = words, True
    return tuple(out)


bindings = lru_cache(maxsize=65536)(_bindings)


def _leads(par: Sequence[Binding]) -> list[str] | None:
    """The word that tells each of a set of parallel bindings from the others: the first of its words no
    other has ("domestic" of "domestic transfer fee" beside "international fee"). None when one has none."""
    leads = []
    for i, b in enumerate(par):
        others = {w for j, o in enumerate(par) if j != i for w in o.words}
        lead = next((w for w in b.words if w not in others), None)
        if lead is None:
            return None
        leads.append(lead)
    return leads


def _all_leads(t: str) -> frozenset[str]:
    """Every lead of every set of parallel bindings in the sentence (of one kind and unit): a claim holding
    none of them cannot be bound to one, and is not read."""
    theirs = bindings(t)
    out: set[str] = set()
    for b in theirs:
        par = [o for o in theirs if _comparable(b.value, o.value)]
        if len(par) >= 2 and len({o.value for o in par}) >= 2:
            out.update(_leads(par) or ())
    return frozenset(out)


all_leads = lru_cache(maxsize=65536)(_all_leads)


def binding(claim: str, window: Sequence[str], claim_words: frozenset[str] | None = None) -> Judgment | None:
    """A value the claim binds to one subject, where the evidence binds it to another subject and gives the
    claim's subject a different value: contradicted, both bindings named.

    Read only where an evidence sentence states two or more values of the claim value's kind, each in its
    own clause with a word that tells it from the others. *Example* (seed 004, FEE-2): "The international
    transfer fee is ₦150." against "domestic transfer fee is ₦150; international fee is ₦500." (v3: entailed,
    every word and number is there). Not read: a subject the evidence leaves implicit ("by 2020 it was 7,000").
    ``claim_words`` (the claim's stemmed content words, when known): a window sentence none of whose leads
    the claim holds is passed over without reading the claim."""
    mine = None
    for s in window:
        theirs = bindings(s)
        if len(theirs) < 2 or (claim_words is not None and claim_words.isdisjoint(all_leads(s))):
            continue
        if mine is None:
            mine = _claim_bindings(claim)
            if not mine:
                return None
        for v, words, shown in mine:
            par = [b for b in theirs if _comparable(v, b.value)]
            if len(par) < 2 or len({b.value for b in par}) < 2:
                continue
            leads = _leads(par)
            if leads is None:
                continue
            hit = [b for b, lead in zip(par, leads, strict=True) if lead in words]
            if len(hit) != 1 or value_present(v, (hit[0].value,)):
                continue
            owner = next((b for b in par if value_present(v, (b.value,))), None)
            if owner is None:
                continue
            return Judgment(
                "contradicted",
                f"the claim binds {_show(v)} to {shown!r}; the evidence binds {_show(owner.value)} to "
                f"{owner.shown!r} and {_show(hit[0].value)} to {hit[0].shown!r}",
            )
    return None


def _claim_bindings(claim: str) -> list[tuple[Value, frozenset[str], str]]:
    """The claim's values, each with the words of its clause and of the claim's clauses that hold no value
    ("For international transfers, the fee is ₦150")."""
    own = _bindings(claim)
    if not own:
        return []
    free = frozenset(
        w
        for a, b in _segments(claim)
        if not any(a <= s < b for s, _e, _v in value_spans(claim))
        for w in _subject_words(claim[a:b])
    )
    return [(b.value, frozenset(b.words) | free, b.shown) for b in own]


# --- partial support: every part of a joined sentence --------------------------------------------------------

_JOINED = re.compile(r";\s*|,?\s+(?:and|but|while|whereas)\s+")
PART_WORDS = 2  # a part of fewer content words is a list item ("cats and dogs"), not a statement of its own


# a finite verb with words before it: the part states something of its own subject ("a 10% store credit is
# added"), not more of the first part's ("... and is adopted by the school", "a tour and new recordings")
_FINITE = re.compile(
    r"\S\s+(?:is|are|was|were|has|have|had|will|would|can|cannot|could|may|might|must|shall|should|does|do|did)\b"
)


def _has_own_subject(part: str) -> bool:
    return _FINITE.search(part.strip()) is not None


def split(
    claim: str, words_of: Callable[[str], frozenset[str]], known: Callable[[str], bool], coverage: float
) -> Judgment | None:
    """Each clause after the first of a joined sentence (one with a subject and a finite verb of its own, or
    after a semicolon) must have ``coverage`` of its words in the cited evidence; the first part holds the
    subject the others lean on and is covered by the sentence's check. A part that continues the first
    one's subject ("and is adopted by ...") or list ("a tour and new recordings") is left to v3's reader.

    *Example* (seed 001): "Refunds are issued within 5 business days and a 10% store credit is added."
    against "Refunds are issued within 5 business days. A 10% restocking fee is added to opened items."
    (v3: entailed, 71% of the words and every value are there; its clause reader wants a part with no
    word at all in the evidence)."""
    pieces = _JOINED.split(claim)
    if len(pieces) < 2:
        return None
    marks = _JOINED.findall(claim)
    for mark, part in zip(marks, pieces[1:], strict=True):
        if not (";" in mark or _has_own_subject(part)):
            continue
        words = words_of(part)
        if len(words) < PART_WORDS:
            continue
        have = sum(1 for w in words if known(w))
        if have / len(words) < coverage:
            first = pieces[0].strip(" .;,")
            return Judgment(
                "insufficient",
                f"partly supported: the evidence does not support {part.strip(' .;,')!r} "
                f"(only {first!r} and what it shares with it)",
            )
    return None


# --- time qualifiers as intervals ------------------------------------------------------------------------------

_MONTHS = {
    m: i
    for i, names in enumerate(
        (
            "january jan",
            "february feb",
            "march mar",
            "april apr",
            "may",
            "june jun",
            "july jul",
            "august aug",
            "september sep sept",
            "october oct",
            "november nov",
            "december dec",
        ),
        start=1,
    )
    for m in names.split()
}
_MONTH = "|".join(sorted(_MONTHS, key=len, reverse=True))
_WHEN = (
    r"(?:(?P<d1>\d{1,2})(?:st|nd|rd|th)?\s+(?P<m1>" + _MONTH + r")\.?,?\s+(?P<y1>(?:19|20)\d\d)"
    r"|(?P<m2>" + _MONTH + r")\.?\s+(?:(?P<d2>\d{1,2})(?:st|nd|rd|th)?,?\s+)?(?P<y2>(?:19|20)\d\d)"
    r"|(?P<y3>(?:19|20)\d\d)-(?P<m3>\d\d)(?:-(?P<d3>\d\d))?"
    r"|(?P<y4>(?:19|20)\d\d))\b"
)
_CUE = (
    r"(?P<cue>before|prior to|until|till|up to|through|since|after|from|as of|as from|starting(?: on| from| in)?|"
    r"beginning(?: on| in)?|effective(?: from| on| as of)?|in|during|throughout)"
)
_TIMED = re.compile(r"\b" + _CUE + r"\s+(?:(?:the\s+)?(?:start|end|beginning)\s+of\s+)?" + _WHEN)
_INF = 10**7


class Period(NamedTuple):
    start: int  # a day number (date.toordinal), inclusive
    end: int  # exclusive
    shown: str


def _point(m: re.Match[str]) -> tuple[int, int]:
    g = m.group
    year = int(g("y1") or g("y2") or g("y3") or g("y4"))
    month_word = g("m1") or g("m2")
    month = _MONTHS[month_word] if month_word else int(g("m3")) if g("m3") else 0
    day = int(g("d1") or g("d2") or g("d3") or 0)
    try:
        if not month:
            return dt.date(year, 1, 1).toordinal(), dt.date(year + 1, 1, 1).toordinal()
        first = dt.date(year, month, day or 1)
        if day:
            return first.toordinal(), first.toordinal() + 1
        nxt = dt.date(year + (month == 12), month % 12 + 1, 1)
        return first.toordinal(), nxt.toordinal()
    except ValueError:  # "31 February": not a date
        return 0, 0


def _kind(cue: str) -> str:
    if cue.startswith(("since", "from", "as of", "as from", "starting", "beginning", "effective", "after")):
        return "after" if cue == "after" else "from"
    if cue in ("before", "prior to"):
        return "before"
    if cue in ("until", "till", "up to", "through"):
        return "until"
    return "in"


def _periods(t: str) -> tuple[Period, ...]:
    """The periods a sentence's time qualifiers speak of: "since March 2024" is [1 March 2024, open)."""
    out = []
    for m in _TIMED.finditer(t):
        a, b = _point(m)
        if a == b:
            continue
        kind = _kind(m.group("cue"))
        start, end = {"from": (a, _INF), "after": (b, _INF), "before": (-_INF, a), "until": (-_INF, b)}.get(
            kind, (a, b)
        )
        out.append(Period(start, end, m.group(0)))
    return tuple(out)


periods = lru_cache(maxsize=65536)(_periods)
_YEAR = re.compile(r"(?:19|20)\d\d")
TIME_CUES = frozenset(
    "before prior until till through since after from as starting beginning effective in during throughout".split()
)


def time(claim: str, window: Sequence[str]) -> Judgment | None:
    """The claim's period against the evidence's, as intervals: inside it, nothing to say; wholly before a
    period the evidence opens ("since March 2024") or wholly after one it closes ("until 2020"): the
    opposite period, contradicted; reaching outside it: insufficient.

    *Example* (seed 000, temporal qualifiers): "Before 2024 the transfer fee was waived." against "Since
    March 2024 the transfer fee is waived." (v3: entailed, every word and the year are there)."""
    theirs = [p for s in window for p in periods(s)]
    # only a period the evidence opens or closes ("since", "until") says when a statement holds; "in 2010"
    # beside "by 2020 it was 7,000" dates one fact of several
    open_ = [e for e in theirs if e.end >= _INF or e.start <= -_INF]
    if not open_:
        return None
    for c in _periods(claim):
        if any(e.start <= c.start and c.end <= e.end for e in theirs):
            continue
        # the claim's year written elsewhere in the window ("Founded 2005, it has grown since 2010"): the
        # claim's period may be another fact's, and nothing is said
        year = _YEAR.search(c.shown)
        if year is not None and sum(s.count(year.group(0)) for s in window) > sum(
            e.shown.count(year.group(0)) for e in open_
        ):
            continue
        opposite = next(
            (e for e in open_ if (e.end >= _INF and c.end <= e.start) or (e.start <= -_INF and c.start >= e.end)),
            None,
        )
        if opposite is not None:
            return Judgment(
                "contradicted",
                f"the claim speaks of {c.shown!r}, the evidence of {opposite.shown!r} (the other period)",
            )
        return Judgment("insufficient", f"the claim speaks of {c.shown!r}, the evidence only of {open_[0].shown!r}")
    return None


#: the readings cached per text (a benchmark clears them to time a cold start)
CACHED = ("bindings", "all_leads", "periods")
