"""The per-pattern value reader the rules judge used before its single-scan one: the test oracle for it."""

from __future__ import annotations

import re
from collections.abc import Iterator

from citeline.analyzer.text import (
    _BARE,
    _CURRENCY_CODES,
    _CURRENCY_SYMBOLS,
    _DAY_MONTH,
    _ISO_DATE,
    _MONEY_POST,
    _MONEY_PRE,
    _MONTH_DAY,
    _MONTHS,
    _PERCENT,
    _QTY_DIGITS,
    _QTY_WORDS,
    _UNITS,
    _WORD_NUMBERS,
    Value,
    _num,
    fold,
)

_DIGIT = re.compile(r"\d")
_CODE_CUE = re.compile(r"\d\s?(?:" + "|".join(_CURRENCY_CODES) + r")\b")
_MONTH_CUE = re.compile(r"\b(?:" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\b")


def values_by_pattern(text: str, folded: bool = False) -> list[Value]:
    """Numbers that mean something, read as values: money, percent, dates, quantities, bare numbers."""
    t = text if folded else fold(text)
    found: list[tuple[int, int, Value]] = []
    if not _DIGIT.search(t):  # only "two weeks"-like quantities can be written without a digit
        for m in _QTY_WORDS.finditer(t):
            found.append((m.start(), m.end(), ("qty", _UNITS[m.group(4)], float(_WORD_NUMBERS[m.group(3)]))))
        return [v for _, _, v in found]
    for read in _READERS:  # in this order: a match that overlaps one found before is not a value
        for m, value in read(t):
            if not any(s < m.end() and m.start() < e for s, e, _ in found):
                found.append((m.start(), m.end(), value))
    return [v for _, _, v in sorted(found)]


# each pattern runs only when its cue is in the text (most sentences have none): same values, fewer scans


def _money(t: str) -> Iterator[tuple[re.Match[str], Value]]:
    if any(c in t for c in _CURRENCY_SYMBOLS):
        for m in _MONEY_PRE.finditer(t):
            yield m, ("money", _CURRENCY_SYMBOLS[m.group(1)], _num(m.group(2), m.group(3)))
    if _CODE_CUE.search(t):
        for m in _MONEY_POST.finditer(t):
            code = m.group(3).upper()
            yield m, ("money", "TRY" if code == "TL" else code, _num(m.group(1), m.group(2)))


def _percents(t: str) -> Iterator[tuple[re.Match[str], Value]]:
    if "%" in t or "percent" in t:
        for m in _PERCENT.finditer(t):
            yield m, ("percent", "%", _num(m.group(1), m.group(2)))


def _dates(t: str) -> Iterator[tuple[re.Match[str], Value]]:
    if "-" in t:
        for m in _ISO_DATE.finditer(t):
            yield m, ("date", m.group(1), float(int(m.group(2)) * 100 + int(m.group(3))))
    if _MONTH_CUE.search(t):
        for m in _MONTH_DAY.finditer(t):
            yield m, ("date", m.group(3) or "", float(_MONTHS[m.group(1)] * 100 + int(m.group(2))))
        for m in _DAY_MONTH.finditer(t):
            yield m, ("date", m.group(3) or "", float(_MONTHS[m.group(2)] * 100 + int(m.group(1))))


def _quantities(t: str) -> Iterator[tuple[re.Match[str], Value]]:
    for m in sorted([*_QTY_DIGITS.finditer(t), *_QTY_WORDS.finditer(t)], key=lambda m: m.start()):
        amount = _num(m.group(1), m.group(2)) if m.group(1) else float(_WORD_NUMBERS[m.group(3)])
        yield m, ("qty", _UNITS[m.group(4)], amount)


def _bare(t: str) -> Iterator[tuple[re.Match[str], Value]]:
    for m in _BARE.finditer(t):
        yield m, ("num", "", _num(m.group(1), m.group(2)))


_READERS = (_money, _percents, _dates, _quantities, _bare)
