"""Text the judges read: folding, values (money, percent, dates, quantities, numbers), words.

Shared by the rules judge, the ensemble's veto and the claim matcher.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from functools import lru_cache


def fold(text: str) -> str:
    """NFKC, whitespace collapsed, case folded; punctuation kept."""
    return " ".join(unicodedata.normalize("NFKC", text).split()).casefold()


def led_by(first: str, pattern: str) -> re.Pattern[str]:
    """``pattern``, tried only where one of the characters ``first`` stands: every match of ``pattern`` must
    open with one of them. A pattern that opens with ``\\b`` or an alternation of words is otherwise tried
    alternative by alternative at every position; the lookahead turns most positions away in one step
    (a claim's negation and modality cues: 13 -> 7 us)."""
    return re.compile(f"(?=[{re.escape(first)}])(?:{pattern})")


_CURRENCY_SYMBOLS = {"$": "USD", "€": "EUR", "£": "GBP", "¥": "JPY", "₦": "NGN", "₺": "TRY", "₹": "INR"}
_CURRENCY_CODES = ("usd", "eur", "gbp", "jpy", "ngn", "try", "inr", "cad", "aud", "chf", "tl")
_MONTHS = {
    m: i + 1
    for i, m in enumerate(
        "january february march april may june july august september october november december".split()
    )
}
_MONTHS.update({m[:3]: i for m, i in list(_MONTHS.items())})
_MONTHS["sept"] = 9
_UNITS = {
    "day": "day",
    "days": "day",
    "business day": "bday",
    "business days": "bday",
    "week": "week",
    "weeks": "week",
    "month": "month",
    "months": "month",
    "year": "year",
    "years": "year",
    "hour": "hour",
    "hours": "hour",
    "minute": "minute",
    "minutes": "minute",
    "km": "km",
    "kg": "kg",
    "mb": "mb",
    "gb": "gb",
    "nights": "night",
    "night": "night",
}
_WORD_NUMBERS = {
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "twelve": 12,
    "thirty": 30,
    "sixty": 60,
    "ninety": 90,
}

# every pattern that opens with a number says so with (?=\d): the regex engine then skips the positions
# that cannot start one (3x faster on prose, same matches)
_NUM = r"(?=\d)(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d+))?"
_MONEY_PRE = re.compile(r"([$€£¥₦₺₹])\s?" + _NUM)
_MONEY_POST = re.compile(_NUM + r"\s?(" + "|".join(_CURRENCY_CODES) + r")\b")
_PERCENT = re.compile(_NUM + r"\s?(%|percent\b)")
_ISO_DATE = re.compile(r"(?=\d)\b(\d{4})-(\d{2})-(\d{2})\b")
_MONTH_DAY = re.compile(
    r"\b("
    + "|".join(sorted(_MONTHS, key=len, reverse=True))
    + r")\.?\s+(\d{1,2})(?:st|nd|rd|th)?\b(?:,?\s+(\d{4})(?!-))?"
)
# "2 May" is a date; "section 2 may be returned" is not: "may" followed by what a modal takes is the verb
_MODAL_MAY = r"may(?!\s+(?:be|not|never|also|only|still|have|need|apply|vary|take|get|require|include)\b)"
_DAY_MONTH = re.compile(
    r"(?=\d)\b(\d{1,2})(?:st|nd|rd|th)?\s+("
    + "|".join(_MODAL_MAY if m == "may" else m for m in sorted(_MONTHS, key=len, reverse=True))
    + r")\b(?:,?\s+(\d{4})(?!-))?"
)
_UNIT_WORDS = "|".join(sorted(_UNITS, key=len, reverse=True))
# a quantity opens with digits or a word number; both keep the same four groups
_QTY_DIGITS = re.compile(_NUM + r"()(?:-|\s)?(" + _UNIT_WORDS + r")\b")
_QTY_WORDS = re.compile(r"()()\b(" + "|".join(_WORD_NUMBERS) + r")(?:-|\s)?(" + _UNIT_WORDS + r")\b")
_BARE = re.compile(r"(?<![\w.])" + _NUM + r"(?![\w%])")
_WORD = re.compile(r"[a-z][a-z\-']{2,}")
_STOP = frozenset(
    "the and for are was were with that this from have has had its their they them there which what when "
    "where who will would can could may might must shall should into onto than then also only such per "
    "any all each both more most other some very our your you his her not but does did done being been "
    "about after before over under within without between these those because while".split()
)


def _num(whole: str, frac: str | None) -> float:
    return float(whole.replace(",", "") + ("." + frac if frac else ""))


Value = tuple[str, str, float]  # (kind, unit, amount)


_ALTERNATIVES = (  # in priority order: where two readings overlap, the earlier kind wins
    ("money_pre", _MONEY_PRE),
    ("money_post", _MONEY_POST),
    ("percent", _PERCENT),
    ("iso", _ISO_DATE),
    ("month_day", _MONTH_DAY),
    ("day_month", _DAY_MONTH),
    ("qty", _QTY_DIGITS),
    ("qty_words", _QTY_WORDS),
    ("bare", _BARE),
)
# one scan finds where each value starts and its kind; the kind's own pattern then reads its groups
# (the leading test only skips positions where no kind can start: mid-word letters, spaces, punctuation,
# and words whose first letter opens no month name and no number word)
_ANY_VALUE = re.compile(
    r"(?:(?=[\d$€£¥₦₺₹])|(?<![a-z0-9])(?=["
    + "".join(sorted({w[0] for w in (*_MONTHS, *_WORD_NUMBERS)}))
    + r"]))(?:"
    + "|".join(f"(?P<{k}>{re.sub(r'[(](?![?])', '(?:', p.pattern)})" for k, p in _ALTERNATIVES)
    + ")"
)
_BY_KIND = dict(_ALTERNATIVES)


def _value_of(kind: str, m: re.Match[str]) -> Value:
    g = m.group
    if kind == "money_pre":
        return ("money", _CURRENCY_SYMBOLS[g(1)], _num(g(2), g(3)))
    if kind == "money_post":
        code = g(3).upper()
        return ("money", "TRY" if code == "TL" else code, _num(g(1), g(2)))
    if kind == "percent":
        return ("percent", "%", _num(g(1), g(2)))
    if kind == "iso":
        return ("date", g(1), float(int(g(2)) * 100 + int(g(3))))
    if kind == "month_day":
        return ("date", g(3) or "", float(_MONTHS[g(1)] * 100 + int(g(2))))
    if kind == "day_month":
        return ("date", g(3) or "", float(_MONTHS[g(2)] * 100 + int(g(1))))
    if kind in ("qty", "qty_words"):
        amount = _num(g(1), g(2)) if g(1) else float(_WORD_NUMBERS[g(3)])
        return ("qty", _UNITS[g(4)], amount)
    return ("num", "", _num(g(1), g(2)))


def values(text: str, folded: bool = False) -> list[Value]:
    """Numbers that mean something, read as values: money, percent, dates, quantities, bare numbers.

    One scan of the text (a regex pass costs about 30 ns a character; nine passes were most of the judge's
    time on long evidence)."""
    return list(_values_of_folded(text if folded else fold(text)))


# a claim's values are read by the gold-fact check and again as its sentence; a gold fact ("30 days")
# is read for every claim that must state it: a small cache serves both. Small on purpose (here and in
# value_spans): a run's claims are mostly distinct, and a large cache kept tens of thousands of readings
# nobody asks for again, which the judge paid for in memory traffic (a pair 118-129 -> 114-119 us, alternating)
@lru_cache(maxsize=1024)
def _values_of_folded(t: str) -> tuple[Value, ...]:
    return tuple(v for _start, _end, v in value_spans(t))


Span = tuple[int, int, Value]  # where a value is written (start, end) in the folded text, and the value


# the rules judge reads an evidence sentence's values, and v3's qualifiers then read where they are
# written ("under $50"): one scan serves both, asked one after the other (a passage's reading is kept whole)
@lru_cache(maxsize=1024)
def value_spans(t: str) -> tuple[Span, ...]:
    """The values of folded text ``t`` with where each is written: what a qualifier next to it ("under",
    "per day", "or more") is read against. The same scan as ``values``."""
    out: list[Span] = []
    pos = 0
    while (m := _ANY_VALUE.search(t, pos)) is not None:
        kind = m.lastgroup or "bare"
        exact = _BY_KIND[kind].match(t, m.start())
        if exact is None:  # cannot happen (same pattern); step on rather than loop
            pos = m.start() + 1
            continue
        if kind == "day_month" and not exact.group(3):
            # "20:15 April 17, 2016": the month opens a dated "April 17, 2016"; 15 is a number before it
            dated = _MONTH_DAY.match(t, exact.start(2))
            if dated is not None and dated.group(3):
                out.append((exact.start(1), exact.end(1), ("num", "", float(exact.group(1)))))
                pos = exact.start(2)
                continue
        out.append((exact.start(), exact.end(), _value_of(kind, exact)))
        pos = max(exact.end(), m.start() + 1)
    return tuple(out)


def _same_value(a: Value, b: Value) -> bool:
    if a[0] != b[0] or abs(a[2] - b[2]) > 1e-9:
        return False
    if a[0] == "date":  # a year on one side only still matches
        return not a[1] or not b[1] or a[1] == b[1]
    return a[1] == b[1]


def value_present(v: Value, found: Iterable[Value]) -> bool:
    """Is ``v`` among ``found`` as the value rule reads it: the same value, or a bare number (a year, a
    count) written the same in any value, or as a date's year."""
    for e in found:
        if _same_value(v, e):
            return True
        if v[0] == "num" and (abs(e[2] - v[2]) < 1e-9 or (e[0] == "date" and e[1] == f"{v[2]:g}")):
            return True
    return False


def _comparable(a: Value, b: Value) -> bool:
    """Same kind and unit: a different amount is then a contradiction."""
    if a[0] != b[0]:
        return False
    return a[0] == "date" or a[1] == b[1]


def _content_words(text: str) -> set[str]:
    return {w.strip("-'") for w in _WORD.findall(fold(text)) if w not in _STOP}


@lru_cache(maxsize=200_000)
def _stem(w: str) -> str:
    for suffix in ("ing", "ed", "es", "s"):
        if len(w) > len(suffix) + 3 and w.endswith(suffix):
            return w[: -len(suffix)]
    return w


def _show(v: Value) -> str:
    kind, unit, amount = v
    n = f"{amount:g}"
    if kind == "money":
        return f"{n} {unit}"
    if kind == "percent":
        return f"{n}%"
    if kind == "date":
        month, day = divmod(int(amount), 100)
        return f"{unit + '-' if unit else ''}{month:02d}-{day:02d}"
    return f"{n} {unit}".strip()


_NUMBER = re.compile(r"\d+(?:\.\d+)?")


def numbers(text: str) -> frozenset[str]:
    """The numbers written in ``text`` (as written)."""
    return frozenset(_NUMBER.findall(text))


def stems(text: str) -> frozenset[str]:
    """The stemmed content words of ``text``: each word as written to its stem ("" for a stop word) in one
    dict lookup, not a strip, a stop-word test and a cached call per word (a claim's set 4.3 -> 3.9 us)."""
    known = _WORD_STEMS
    out = {known[w] if w in known else _word_stem(w) for w in _WORD.findall(fold(text))}
    out.discard("")
    return frozenset(out)


_WORD_STEMS: dict[str, str] = {}  # a word as _WORD finds it -> its stem, "" for a stop word (a vocabulary's size)


def _word_stem(w: str) -> str:
    """What :func:`_content_words` and :func:`_stem` make of one found word (the stop-word test on it as found)."""
    if len(_WORD_STEMS) >= 200_000:  # a bound for a run over endless distinct tokens
        _WORD_STEMS.clear()
    stem = _WORD_STEMS[w] = "" if w in _STOP else _stem(w.strip("-'"))
    return stem


def overlap(wa: frozenset[str], wb: frozenset[str]) -> float:
    """lexical_similarity of two ``stems`` sets (matching makes each text's set once)."""
    if not wa or not wb:
        return 0.0
    return len(wa & wb) / len(wa | wb)


def shared_numbers(na: frozenset[str], nb: frozenset[str]) -> float:
    """number_agreement of two ``numbers`` sets."""
    return len(na & nb) / len(nb) if nb else 0.0


def number_agreement(a: str, b: str) -> float:
    """Share of the numbers written in ``b`` that ``a`` writes too (a tie-breaker for matching)."""
    return shared_numbers(numbers(a), numbers(b))


def lexical_similarity(a: str, b: str) -> float:
    """Word overlap ignoring numbers (so '60 days' still meets the '30 days' claim it gets wrong)."""
    return overlap(stems(a), stems(b))


# A sentence ends at . ! ? or a line break; "Dec." "U.S." "Mr." and initials do not end one (see split_sentences).
_SENT_END = re.compile(r"(?<=[.!?])\s+|(?<=[.!?][\"'”’)\]])\s+|\s*\n+\s*")
# every place _SENT_END can match is one of these (opening with a character class, it is found fast)
_MAY_END = re.compile(r"[.!?][\"'”’)\]]?\s|\n")
_SHORT_TAIL = re.compile(r"(?:\b[A-Za-z]{1,3}|\b(?:[A-Z]\.)+)\.$")


def sentences(text: str) -> list[str]:
    """Split prose into sentences, keeping abbreviations and initials inside theirs."""
    if _MAY_END.search(text) is None:  # no place a sentence can end inside it (most claims): one sentence
        return [text] if text.strip() else []
    return split_sentences(text)


def split_sentences(text: str) -> list[str]:
    parts = [p for p in _SENT_END.split(text) if p and p.strip()]
    out: list[str] = []
    for p in parts:
        if out and _SHORT_TAIL.search(out[-1]) and not out[-1].endswith(("!", "?")):
            out[-1] = f"{out[-1]} {p}"
        else:
            out.append(p)
    return out
