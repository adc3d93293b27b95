"""How a citation label is written: the one grammar the prompt reader and the answer parser share.

A label names a chunk the model was shown: ``"2"``, ``"S2"``, ``"D3"``. It is written

- in brackets: ``[2]``, ``[2, 3]`` / ``[2; 3]``, ``[2-4]`` (a range), ``[S2]`` / ``[D2]`` (a
  prefix), ``[^2]`` (a footnote), ``[Source 2]``;
- in full-width brackets: ``【2】``, ``【2, 3】``, ``【4:0†source】``;
- named: ``(Source 2)``, ``(Sources 2 and 3)``, ``Source 2``, ``Document #2``, ``passage 2`` (and
  the other words of ``NAMING_WORDS``);
- as a footnote caret after a word of three letters or more, or after punctuation: ``days^2``,
  ``days.^2`` (``S^2``, ``km^2`` and ``10^6`` are mathematics).

One canonical form: a number loses its leading zeros, its caret and its naming word (``[^02]``,
``Source 2`` and ``【2】`` are all ``"2"``); a letter prefix stays (``"S2"``). A bracketed token that
is no prefix + number (``[doc-a]``) is a label only as written.

A prompt may also label a chunk with ``(2)`` or a bare ``2.`` / ``2)`` / ``2:`` just before its
text (:func:`label_before`); in an answer those are list numbering or prose, never a citation.

An answer's bracket is a citation only when its tokens fit the **shape** of the label map the
model was given (:class:`Shape`): a label of the map, or a prefix + number of the map's kind with
at most one digit more than its longest label. ``[2026]`` before a map of eight labels is a year,
not an invalid citation; ``[12]`` before the same map is a label the model was never given.

A supported, public module of ``citeline.instrumentation`` (``citeline.instrumentation.labels``):
the context decorator reads prompts with it and the analyzer reads answers with it, so the two can
never disagree on what a label is. Standard library only: the instrumentation runs inside the host app.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

#: words that name a labelled chunk: "Source 2", "(Documents 1 and 3)", "passage #4"
NAMING_WORDS = (
    "source",
    "document",
    "doc",
    "passage",
    "chunk",
    "context",
    "reference",
    "ref",
    "citation",
    "excerpt",
    "snippet",
)
#: the most labels one range stands for ("[1-40]"); a longer span is prose ("[1-500]")
MAX_RANGE = 50
#: letter prefixes every shape accepts besides the map's own: citation conventions, not prose
COMMON_PREFIXES = ("S", "D")

_WORDS = "|".join(NAMING_WORDS)
_NAMED_WORD = rf"(?:{_WORDS})s?"
# one token of a bracket: "2", "^2", "S2", "Source 2", "doc #3"; group 1 the prefix letters, 2 the number
_TOKEN = re.compile(rf"\s*\^?\s*(?:{_NAMED_WORD}(?:\s+|\s*[#:]\s*))?([A-Za-z]{{0,10}}?)(\d{{1,6}})\s*", re.IGNORECASE)
_RANGE = re.compile(r"\s*(.+?)\s*(?:-|\u2013|\u2014|\bto\b)\s*(.+?)\s*")
_ITEM_SEP = re.compile(r"\s*(?:[,;]|\band\b|&)\s*")
_OTHER_TOKEN = re.compile(r"\s*([^\s\[\]\u3010\u3011,;]{1,16})\s*")
_FULLWIDTH_TAIL = re.compile(r"(?::\d+)?\u2020.*")  # 【4:0†source】: label 4

#: every place an answer may cite with punctuation, in one pass: brackets, full-width brackets, a named
#: source in parentheses, a footnote caret after a word (each branch opens with its own character, so the
#: scan skips to those characters)
CANDIDATES = re.compile(
    r"\[\s*(?P<br>[^\[\]\n]{1,80}?)\s*\]"
    r"|\u3010\s*(?P<fw>[^\u3010\u3011\n]{1,80}?)\s*\u3011"
    rf"|\(\s*(?:see\s+)?(?P<pn>{_NAMED_WORD}(?:\s+|\s*[#:]\s*)\d[^()\n]{{0,60}}?)\s*\)"
    r"|\^(?:(?<=[a-z]{3}\^)|(?<=[.,;:!?)\"'\u2019\u201d]\^))(?P<ct>\d{1,4})(?![\d\w])",
    re.IGNORECASE,
)
#: a named source in prose: "Source 2", "passage #3" (looked for only in text that names one)
NAMED = re.compile(rf"(?<![\w\[(])(?P<nm>{_NAMED_WORD}(?:\s+|\s*[#:]\s*)\d{{1,4}})(?![\w.,]\d|\w)", re.IGNORECASE)

# --- the prompt side: the label written just before a chunk's text ---------------------------------
_PROMPT_BRACKETED = re.compile(r"[\[\u3010]\s*([^\[\]\u3010\u3011\s]{1,16})\s*[\]\u3011]")
_PROMPT_NAMED = re.compile(
    rf"\b(?:{_WORDS})\s*(?:id\s*)?[#:]?\s*(\d{{1,4}})\b",
    re.IGNORECASE,
)
_PROMPT_PARENS = re.compile(r"\(\s*(\d{1,4})\s*\)")
_PROMPT_BARE = re.compile(r"(?:^|\s)(\d{1,4})\s*[.):]\s*$")
#: a labelled block header at a line start ("Source 2:", "[2]", "Document #2:"): group 1 or 2 the number
BLOCK_HEADER = re.compile(rf"(?im)^[ \t]*(?:\[\s*(\d{{1,4}})\s*\]|(?:{_WORDS})\s*#?\s*(\d{{1,4}})\s*:)")


def canonical(token: str) -> str:
    """The one form of a label as written anywhere: ``"^02"`` -> ``"2"``, ``"Source 3"`` -> ``"3"``,
    ``"S02"`` -> ``"S2"``; a token that is no prefix + number stays as it is."""
    m = _TOKEN.fullmatch(token)
    if m is None:
        return token.strip()
    return m.group(1) + str(int(m.group(2)))


def label_before(window: str) -> str | None:
    """The label written last in ``window`` (the text just before a chunk in a prompt), in canonical form.

    A bracketed label wins over a named one (``Source 2``), which wins over ``(2)``, which wins over a
    bare ``2.`` / ``2)`` / ``2:`` right before the chunk."""
    for pattern in (_PROMPT_BRACKETED, _PROMPT_NAMED, _PROMPT_PARENS):
        # a label names a source, so it has a digit: "[n]" or "[k]" in a prompt's instructions is a
        # placeholder, even when it stands just before the first chunk
        found = [f for f in pattern.findall(window) if any(c.isdigit() for c in f)]
        if found:
            return canonical(str(found[-1]))
    bare = _PROMPT_BARE.search(window)
    return canonical(bare.group(1)) if bare else None


@dataclass(frozen=True)
class Shape:
    """What a label of one label map looks like, so an answer's brackets can be told from prose.

    ``digits``: the most digits a label number may have (the map's longest, plus one, at least two);
    ``prefixes``: the letter prefixes a numbered label may carry, case-folded ("" = a plain number),
    always including ``COMMON_PREFIXES``; ``exact``: the map's labels that are no prefix + number.
    """

    digits: int = 2
    prefixes: tuple[tuple[str, str], ...] = (("", ""), ("d", "D"), ("s", "S"))  # (folded, as the map spells it)
    exact: frozenset[str] = frozenset()

    @classmethod
    def of(cls, labels: Iterable[str]) -> Shape:
        """The shape of a label map (its labels as recorded on the generation span)."""
        longest, spelled, exact = 1, {p.casefold(): p for p in ("", *COMMON_PREFIXES)}, set()
        for label in labels:
            m = _TOKEN.fullmatch(label)
            if m is None or m.group(0) != m.group(1) + m.group(2):  # "doc-a", "Source 2" as a label
                exact.add(label)
                continue
            longest = max(longest, len(str(int(m.group(2)))))
            spelled[m.group(1).casefold()] = m.group(1)
        return cls(max(2, longest + 1), tuple(sorted(spelled.items())), frozenset(exact))

    @property
    def key(self) -> str:
        """A stable text form (the analyzer keys a split answer by it)."""
        return json.dumps([self.digits, [p for _, p in self.prefixes], sorted(self.exact)], separators=(",", ":"))

    @classmethod
    def from_key(cls, key: str) -> Shape:
        digits, prefixes, exact = json.loads(key)
        return cls(int(digits), tuple(sorted((p.casefold(), p) for p in prefixes)), frozenset(exact))

    def label(self, prefix: str, number: str) -> str | None:
        """The canonical label for a prefix + number, or None when it does not fit this shape."""
        if len(number) > self.digits:
            return None
        n = str(int(number))
        folded = prefix.casefold()
        for f, spelling in self.prefixes:
            if f == folded:
                return spelling + n
        return None

    def token(self, token: str) -> list[str] | None:
        """The labels one bracket token stands for (a range stands for several), or None when it is prose."""
        if token.isdigit():  # the common case, "[2]"
            one = self.label("", token)
            return None if one is None else [one]
        o = _OTHER_TOKEN.fullmatch(token)
        if o is not None and o.group(1) in self.exact:
            return [o.group(1)]
        m = _TOKEN.fullmatch(token)
        if m is not None:
            one = self.label(m.group(1), m.group(2))
            return None if one is None else [one]
        r = _RANGE.fullmatch(token)
        if r is not None:
            a, b = _TOKEN.fullmatch(r.group(1)), _TOKEN.fullmatch(r.group(2))
            if a is None or b is None or (b.group(1) and b.group(1).casefold() != a.group(1).casefold()):
                return None
            first = self.label(a.group(1), a.group(2))
            last = self.label(b.group(1) or a.group(1), b.group(2))
            lo, hi = int(a.group(2)), int(b.group(2))
            if first is None or last is None or not lo < hi <= lo + MAX_RANGE:
                return None
            stem = first[: len(first) - len(str(lo))]
            return [f"{stem}{n}" for n in range(lo, hi + 1)]
        return None

    def group(self, content: str) -> list[str] | None:
        """The labels of one bracket's content (``"1, 3-5"``), or None unless every item is a label."""
        if content.isdigit():
            return self.token(content)
        out: list[str] = []
        for item in _ITEM_SEP.split(content):
            labels = self.token(item)
            if labels is None:
                return None
            out.extend(labels)
        return out or None


DEFAULT_SHAPE = Shape()


class Marker(NamedTuple):
    """One citation found in an answer: where it is and the labels it names.

    ``inline``: a named source in prose ("According to Source 2, ...") is words of the sentence, which
    the parser keeps in the claim's text."""

    start: int
    end: int
    labels: tuple[str, ...]
    inline: bool = False


def find_markers(text: str, shape: Shape = DEFAULT_SHAPE, start: int = 0, end: int | None = None) -> list[Marker]:
    """Every citation in ``text[start:end]`` that fits ``shape``, in order (code is the caller's to mask)."""
    stop = len(text) if end is None else end
    out: list[Marker] = []
    for m in CANDIDATES.finditer(text, start, stop):
        kind = m.lastgroup
        inner = m.group(kind) if kind else None
        if inner is None:
            continue
        labels: list[str] | None
        if kind == "ct":
            one = shape.label("", inner)
            labels = [one] if one else None
        else:  # a bracket's content, or a named source in parentheses: "Source 2", "Sources 1 and 3"
            labels = shape.group(_FULLWIDTH_TAIL.sub("", inner) if kind == "fw" else inner)
        if labels:
            out.append(Marker(m.start(), m.end(), tuple(labels)))
    low = text.lower()
    if any(w in low for w in NAMING_WORDS):
        taken = [(m.start, m.end) for m in out]
        for m in NAMED.finditer(text, start, stop):
            if any(a <= m.start() < b for a, b in taken):
                continue  # "(Source 2)" was read whole
            labels = shape.group(m.group("nm"))
            if labels:
                out.append(Marker(m.start(), m.end(), tuple(labels), inline=True))
        out.sort(key=lambda x: x.start)
    return out


def render(labels: Sequence[str], style: str) -> str:
    """``labels`` written as a citation in one of ``STYLES`` (the inverse of :func:`find_markers`;
    tests use it to check that every style reads back as written)."""
    numbers = [_TOKEN.fullmatch(x) for x in labels]
    if style == "brackets":
        return "".join(f"[{x}]" for x in labels)
    if style == "list":
        return "[" + ", ".join(labels) + "]"
    if style == "range":
        parts, run = [], [labels[0]]
        for prev, cur in itertools.pairwise(labels):
            a, b = _TOKEN.fullmatch(prev), _TOKEN.fullmatch(cur)
            if a and b and a.group(1) == b.group(1) and int(b.group(2)) == int(a.group(2)) + 1:
                run.append(cur)
                continue
            parts.append(run[0] if len(run) == 1 else f"{run[0]}-{run[-1]}")
            run = [cur]
        parts.append(run[0] if len(run) == 1 else f"{run[0]}-{run[-1]}")
        return "[" + ", ".join(parts) + "]"
    if style == "fullwidth":
        return "".join(f"\u3010{x}\u3011" for x in labels)
    if style == "footnote":
        return "".join(f"[^{x}]" for x in labels)
    if style == "caret":
        return "".join(f"^{x}" for x in labels)
    if style == "source":
        return "(" + "; ".join(f"Source {m.group(2) if m else x}" for x, m in zip(labels, numbers, strict=True)) + ")"
    if style == "named":
        return ", ".join(f"Source {m.group(2) if m else x}" for x, m in zip(labels, numbers, strict=True))
    raise ValueError(f"unknown citation style {style!r}; one of {', '.join(STYLES)}")


#: the citation styles :func:`render` writes and :func:`find_markers` reads
STYLES = ("brackets", "list", "range", "fullwidth", "footnote", "caret", "source", "named")
