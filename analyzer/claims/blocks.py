"""How an answer is cut before its claims are read: blocks (paragraphs, list items, tables, headings, reference
lists) and the sentences of a block.

``_claims`` reads each block under the run's policy; this module only finds them. Decimals (4.5),
abbreviations (e.g., U.S.) and initials do not end a sentence; markers right after a sentence's end
(``... days. [2]``) belong to that sentence.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from dataclasses import dataclass

from citeline.analyzer.claims import tables
from citeline.analyzer.claims.policy import BIBLIOGRAPHY_HEAD
from citeline.instrumentation.labels import Marker

LIST_ITEM = re.compile(r"^\s*(?:[-*+\u2022]|\d{1,3}[.)])\s+")
_END = re.compile(r"[.!?]+[\"')\u201d\u2019]*")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+\S|^\s*(\*\*|__)[^*_\n.!?\[\u3010]{1,80}\1\s*:?\s*$")
_SETEXT = re.compile(r"^\s*(?:=+|-{2,})\s*$")
FOOTNOTE_DEF = re.compile(r"^\s*\[\^([^\]\s]{1,16})\]:\s*(.*)$")
ENTRY = re.compile(r"^\s*(?:[-*+\u2022]\s*)?(?:\[\^?([^\]\s]{1,16})\]:?|\^?(\d{1,4})[.):])\s*(\S.*)$")
_URL = re.compile(r"https?://|www\.", re.IGNORECASE)
_ABBREV = frozenset(
    "e.g i.e etc vs dr mr mrs ms prof no nos fig figs approx inc ltd co corp st jr sr u.s u.k "
    "a.m p.m cf al ca est dept govt jan feb mar apr jun jul aug sep sept oct nov dec mt ft".split()
)


@dataclass
class Block:
    kind: str  # para | item | heading | table | biblio
    start: int
    end: int
    lead: str = ""  # an item's lead-in ("Refund windows (days):") or a table's heading
    table: tables.Table | None = None


def _lines(masked: str) -> list[tuple[int, int]]:
    out, pos = [], 0
    for line in masked.splitlines(keepends=True):
        out.append((pos, pos + len(line)))
        pos += len(line)
    return out


def blocks(text: str, masked: str) -> list[Block]:
    """Paragraphs, list items (with their indented continuation lines), tables, headings and reference
    lists, in order."""
    html = [(m.start(), m.end()) for m in tables.HTML_TABLE.finditer(masked)] if "<table" in masked.lower() else []
    lines = _lines(masked)
    out: list[Block] = []
    para: Block | None = None
    lead = ""
    biblio = False
    i = 0

    def close() -> None:
        nonlocal para, lead
        if para is not None:
            out.append(para)
            last = masked[para.start : para.end].strip().splitlines()[-1].strip()
            lead = last if last.endswith(":") else ""
            para = None

    while i < len(lines):
        start, end = lines[i]
        line = masked[start:end]
        stripped = line.strip()
        if html and html[0][0] < end:
            close()
            t_start, t_end = html.pop(0)
            out.append(Block("table", t_start, t_end, lead, tables.html_rows(text, t_start, t_end)))
            while i < len(lines) and lines[i][1] <= t_end:
                i += 1
            continue
        if not stripped:
            close()
            i += 1
            continue
        if biblio or BIBLIOGRAPHY_HEAD.match(stripped) or FOOTNOTE_DEF.match(line):
            is_entry = bool(ENTRY.match(line) or FOOTNOTE_DEF.match(line) or _URL.search(line))
            if biblio and not is_entry:
                biblio = False
            else:
                close()
                biblio = biblio or bool(BIBLIOGRAPHY_HEAD.match(stripped))
                out.append(Block("biblio", start, end))
                i += 1
                continue
        if _HEADING.match(line):
            close()
            out.append(Block("heading", start, end))
            lead = stripped
            i += 1
            continue
        one_line_above = para is not None and para.end == start and masked[para.start : para.end].count("\n") <= 1
        if _SETEXT.match(line) and para is not None and one_line_above:  # "Returns\n=======": a heading
            para.kind = "heading"
            lead = masked[para.start : para.end].strip()
            out.append(para)
            para = None
            i += 1
            continue
        is_table = stripped.startswith("|") or (
            "|" in stripped and i + 1 < len(lines) and tables.SEPARATOR.match(masked[lines[i + 1][0] : lines[i + 1][1]])
        )
        if is_table:
            close()
            rows = [lines[i]]
            i += 1
            while (
                i < len(lines)
                and "|" in masked[lines[i][0] : lines[i][1]]
                and masked[lines[i][0] : lines[i][1]].strip()
            ):
                rows.append(lines[i])
                i += 1
            out.append(Block("table", rows[0][0], rows[-1][1], lead, tables.markdown_rows(text, masked, rows)))
            continue
        if LIST_ITEM.match(line):
            if para is not None:
                close()
            item = Block("item", start, end, lead)
            i += 1
            while i < len(lines):  # indented continuation lines belong to the item
                c_start, c_end = lines[i]
                cont = masked[c_start:c_end]
                if not cont.strip() or not cont[:1].isspace() or LIST_ITEM.match(cont):
                    break
                item.end = c_end
                i += 1
            out.append(item)
            continue
        if para is None:
            para = Block("para", start, end)
        else:
            para.end = end
        i += 1
    close()
    _trailing_references(masked, out)
    return out


def _trailing_references(masked: str, blocks: list[Block]) -> None:
    """A reference list at the end without a heading: the answer's last lines, each "[n] <source>" with a link."""
    if "http" not in masked and "www." not in masked:
        return
    for b in reversed(blocks):
        if b.kind not in ("para", "item"):
            return
        body = masked[b.start : b.end].strip().splitlines()
        if not body or not all(ENTRY.match(x) and _URL.search(x) for x in body):
            return
        b.kind = "biblio"


# --- sentences ---------------------------------------------------------------------------------------

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


class Marks:
    """The answer's markers, looked up by position."""

    def __init__(self, marks: list[Marker]) -> None:
        self.marks = marks
        self.starts = [m.start for m in marks]
        self.at = {m.start: m for m in marks}

    def within(self, start: int, end: int) -> list[Marker]:
        i = bisect_left(self.starts, start)
        out = []
        while i < len(self.marks) and self.marks[i].start < end:
            out.append(self.marks[i])
            i += 1
        return out

    def run_end(self, masked: str, pos: int, end: int) -> int:
        """The end of the markers that follow ``pos`` (spaces between them allowed), or ``pos``."""
        out = pos
        while True:
            p = out
            while p < end and masked[p] in " \t":
                p += 1
            m = self.at.get(p)
            if m is None or m.end > end or m.inline:  # "... observations. Passage 3 notes ...": a new sentence
                return out
            out = m.end


def sentences(masked: str, start: int, end: int, marks: Marks) -> list[tuple[int, int]]:
    """Sentence spans inside one block, markers after the full stop included."""
    out: list[tuple[int, int]] = []
    cur = start
    for m in _END.finditer(masked, start, end):
        stop = marks.run_end(masked, m.end(), end) if marks.marks else m.end()
        rest = masked[stop:end]
        nxt = rest.lstrip()
        if nxt and (len(rest) == len(nxt)):
            continue  # "4.5", "U.S.A": no space after the stop
        if m.group(0).startswith(".") and len(m.group(0)) == 1 and _is_abbreviation(masked, m.start()):
            continue
        if nxt and not (nxt[0].isupper() or nxt[0].isdigit() or nxt[0] in "\"'(\u201c[*_\u3010"):
            continue
        out.append((cur, stop))
        cur = stop
    if masked[cur:end].strip():
        out.append((cur, end))
    return out
