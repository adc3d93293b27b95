"""Split a prose answer into claims and read the citation markers of each.

Claims are sentences; list items and table rows are claims of their own.
Decimals (4.5), abbreviations (e.g., U.S.), and initials do not end a
sentence. Markers: ``[2]``, ``[2][3]``, ``[2, 3]``, ``[12]``, ``[^2]``, before
or after the sentence's final punctuation. Nothing inside fenced code blocks
or inline code counts as a marker. Markers right after a sentence's end
(``... days. [2]``) belong to that sentence.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_FENCE = re.compile(r"```.*?(?:```|\Z)|~~~.*?(?:~~~|\Z)", re.S)
_INLINE = re.compile(r"`[^`\n]*`")
#: one bracket group of numeric labels: [2], [^2], [2, 3], [2;3], [^1,^2]
_MARKER = re.compile(r"\[\s*\^?\s*(\d{1,4}(?:\s*[,;]\s*\^?\s*\d{1,4})*)\s*\]")
_LABEL_NUM = re.compile(r"\d+")
_MARKER_RUN = re.compile(r"(?:\s*\[\s*\^?\s*\d{1,4}(?:\s*[,;]\s*\^?\s*\d{1,4})*\s*\])+")
_END = re.compile(r"[.!?]+[\"')\u201d\u2019]*")
_LIST_ITEM = re.compile(r"^\s*(?:[-*+\u2022]|\d{1,3}[.)])\s+")
_TABLE_SEP = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$")
_ABBREV = frozenset(
    "e.g i.e etc vs dr mr mrs ms prof no nos fig figs approx inc ltd co corp st jr sr u.s u.k "
    "a.m p.m cf al ca est dept govt jan feb mar apr jun jul aug sep sept oct nov dec mt ft".split()
)
_WS = re.compile(r"\s+")
_SPACE_BEFORE_STOP = re.compile(r"\s+([.,;:!?])")


@dataclass(frozen=True)
class Claim:
    """One sentence (or list item, or table row) of an answer."""

    text: str
    labels: tuple[str, ...] = field(default=())
    start: int = 0
    end: int = 0


def mask_code(text: str) -> str:
    """The text with code blocks and inline code blanked out (same length)."""

    def blank(m: re.Match[str]) -> str:
        return re.sub(r"[^\n]", " ", m.group(0))

    return _INLINE.sub(blank, _FENCE.sub(blank, text))


def markers(text: str) -> list[str]:
    """Every label cited in ``text``, in order, repeats kept (code ignored)."""
    out: list[str] = []
    for m in _MARKER.finditer(mask_code(text)):
        out.extend(str(int(n)) for n in _LABEL_NUM.findall(m.group(1)))
    return out


def _blocks(text: str) -> list[tuple[int, int]]:
    """(start, end) spans of paragraphs, list items and table rows."""
    spans: list[tuple[int, int]] = []
    para_start: int | None = None
    pos = 0
    for line in text.splitlines(keepends=True):
        start, end = pos, pos + len(line)
        pos = end
        stripped = line.strip()
        special = bool(_LIST_ITEM.match(line)) or stripped.startswith("|")
        if not stripped or special:
            if para_start is not None:
                spans.append((para_start, start))
                para_start = None
            if special and not _TABLE_SEP.match(stripped):
                spans.append((start, end))
            continue
        if para_start is None:
            para_start = start
    if para_start is not None:
        spans.append((para_start, pos))
    return spans


_LETTER_OR_DOT = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.")


def _word_before(text: str, at: int) -> str:
    """The letters-and-dots word that ends at ``at``, from its first letter ("U.S" before "U.S."); "" when none.

    Walks back from ``at``: a regex anchored at the end of ``text[:at]`` would try every earlier position.
    As that regex's ``$`` did, a word followed by one line break still counts ("Dr\n." reads "Dr")."""
    if at > 0 and text[at - 1] == "\n":
        at -= 1
    i = at
    while i > 0 and text[i - 1] in _LETTER_OR_DOT:
        i -= 1
    while i < at and text[i] == ".":
        i += 1
    return text[i:at]


def _is_abbreviation(masked: str, dot: int) -> bool:
    """Whether the '.' at ``dot`` ends an abbreviation or an initial rather than a sentence."""
    word = _word_before(masked, dot)
    if not word:
        return False
    low = word.lower().rstrip(".")
    if low in ("no", "nos"):  # "No. 5" abbreviates; "No." answering a question ends a sentence
        return bool(re.match(r"\s*\d", masked[dot + 1 :]))
    if low in _ABBREV:
        return True
    return len(word) == 1 and word.isupper()  # an initial such as "J."


def _sentences(masked: str, start: int, end: int) -> list[tuple[int, int]]:
    """Sentence spans inside one block, markers after the full stop included."""
    out: list[tuple[int, int]] = []
    cur = start
    for m in _END.finditer(masked, start, end):
        stop = m.end()
        run = _MARKER_RUN.match(masked, stop, end)
        if run:
            stop = run.end()
        rest = masked[stop:end]
        nxt = rest.lstrip()
        if nxt and (len(rest) == len(nxt)):
            continue  # "4.5", "U.S.A": no space after the stop
        if m.group(0).startswith(".") and len(m.group(0)) == 1 and _is_abbreviation(masked, m.start()):
            continue
        if nxt and not (nxt[0].isupper() or nxt[0].isdigit() or nxt[0] in "\"'(\u201c[*_"):
            continue
        out.append((cur, stop))
        cur = stop
    if masked[cur:end].strip():
        out.append((cur, end))
    return out


def _clean(text: str, masked: str) -> str:
    """Claim text: markers (found in the masked copy, so code keeps its brackets) removed."""
    parts: list[str] = []
    last = 0
    for m in _MARKER.finditer(masked):
        parts.append(text[last : m.start()])
        parts.append(" ")
        last = m.end()
    parts.append(text[last:])
    text = "".join(parts)
    text = _LIST_ITEM.sub("", text)
    if text.strip().startswith("|"):
        text = " ".join(c.strip() for c in text.strip().strip("|").split("|"))
    text = _WS.sub(" ", text).strip()
    return _SPACE_BEFORE_STOP.sub(r"\1", text)


def split_claims(text: str) -> list[Claim]:
    """Claims of a prose answer, each with the labels it cites."""
    masked = mask_code(text)
    claims: list[Claim] = []
    for b_start, b_end in _blocks(masked):
        for s, e in _sentences(masked, b_start, b_end):
            labels: list[str] = []
            for m in _MARKER.finditer(masked, s, e):
                labels.extend(str(int(n)) for n in _LABEL_NUM.findall(m.group(1)))
            body = _clean(text[s:e], masked[s:e])
            if not body and not labels:
                continue
            if not body and claims:
                # a marker group on its own line cites the sentence before it
                prev = claims[-1]
                claims[-1] = Claim(prev.text, prev.labels + tuple(labels), prev.start, e)
                continue
            claims.append(Claim(body, tuple(dict.fromkeys(labels)), s, e))
    return claims


_CONTENT = re.compile(r"[A-Za-z]{3,}")


def is_factual(claim: str) -> bool:
    """Whether a claim states something checkable (not "No." or "Here is what I found:")."""
    if re.search(r"\d", claim):
        return True
    words = _CONTENT.findall(claim)
    return len(words) >= 3 and not claim.rstrip().endswith(":")
