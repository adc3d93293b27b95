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
_DIGIT_NEXT = re.compile(r"\s*\d")
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
    return _Cut(text, masked).run()


class _Cut:
    """One pass over an answer's lines. A line starts the first of these it is (an HTML table, a blank, a
    reference entry, a heading, a setext underline, a Markdown table, a list item) and its reader takes
    the lines that belong with it; any other line continues the open paragraph."""

    def __init__(self, text: str, masked: str) -> None:
        self.text, self.masked = text, masked
        self.html = (
            [(m.start(), m.end()) for m in tables.HTML_TABLE.finditer(masked)] if "<table" in masked.lower() else []
        )
        self.lines = _lines(masked)
        self.out: list[Block] = []
        self.para: Block | None = None
        self.lead = ""  # the last heading, or a paragraph's last line that ends with ":"
        self.biblio = False  # inside a reference list
        self.i = 0  # the next line

    def run(self) -> list[Block]:
        while self.i < len(self.lines):
            start, end = self.lines[self.i]
            line = self.masked[start:end]
            stripped = line.strip()
            if self.html and self.html[0][0] < end:
                self._html_table()
            elif not stripped:
                self._close()
                self.i += 1
            elif (self.biblio or BIBLIOGRAPHY_HEAD.match(stripped) or FOOTNOTE_DEF.match(line)) and self._reference(
                start, end, line, stripped
            ):
                pass
            elif _HEADING.match(line):
                self._heading(start, end, stripped)
            elif _SETEXT.match(line) and self._setext(start):
                pass
            elif stripped.startswith("|") or ("|" in stripped and self._separator_below()):
                self._table()
            elif LIST_ITEM.match(line):
                self._item(start, end)
            else:
                self._paragraph(start, end)
        self._close()
        _trailing_references(self.masked, self.out)
        return self.out

    def _line(self, i: int) -> str:
        return self.masked[self.lines[i][0] : self.lines[i][1]]

    def _close(self) -> None:
        """End the open paragraph; its last line is the next block's lead-in when it ends with ":"."""
        if self.para is not None:
            self.out.append(self.para)
            last = self.masked[self.para.start : self.para.end].strip().splitlines()[-1].strip()
            self.lead = last if last.endswith(":") else ""
            self.para = None

    def _html_table(self) -> None:
        self._close()
        t_start, t_end = self.html.pop(0)
        self.out.append(Block("table", t_start, t_end, self.lead, tables.html_rows(self.text, t_start, t_end)))
        while self.i < len(self.lines) and self.lines[self.i][1] <= t_end:
            self.i += 1

    def _reference(self, start: int, end: int, line: str, stripped: str) -> bool:
        """A reference list's heading or entry, or a footnote definition; a line that is no entry ends the list
        (and is read as what else it is)."""
        is_entry = bool(ENTRY.match(line) or FOOTNOTE_DEF.match(line) or _URL.search(line))
        if self.biblio and not is_entry:
            self.biblio = False
            return False
        self._close()
        self.biblio = self.biblio or bool(BIBLIOGRAPHY_HEAD.match(stripped))
        self.out.append(Block("biblio", start, end))
        self.i += 1
        return True

    def _heading(self, start: int, end: int, stripped: str) -> None:
        self._close()
        self.out.append(Block("heading", start, end))
        self.lead = stripped
        self.i += 1

    def _setext(self, start: int) -> bool:
        """A "=======" line under a one-line paragraph makes that paragraph a heading ("Returns" over "===")."""
        para = self.para
        if para is None or not (para.end == start and self.masked[para.start : para.end].count("\n") <= 1):
            return False
        para.kind = "heading"
        self.lead = self.masked[para.start : para.end].strip()
        self.out.append(para)
        self.para = None
        self.i += 1
        return True

    def _separator_below(self) -> bool:
        return self.i + 1 < len(self.lines) and bool(tables.SEPARATOR.match(self._line(self.i + 1)))

    def _table(self) -> None:
        """A Markdown table: a line that starts with "|", or has one above a separator row; rows run to a
        line without "|"."""
        i, lines = self.i, self.lines
        self._close()
        rows = [lines[i]]
        i += 1
        while i < len(lines) and "|" in self._line(i) and self._line(i).strip():
            rows.append(lines[i])
            i += 1
        self.i = i
        self.out.append(
            Block("table", rows[0][0], rows[-1][1], self.lead, tables.markdown_rows(self.text, self.masked, rows))
        )

    def _item(self, start: int, end: int) -> None:
        """A list item with its indented continuation lines."""
        self._close()
        item = Block("item", start, end, self.lead)
        self.i += 1
        while self.i < len(self.lines):
            cont = self._line(self.i)
            if not cont.strip() or not cont[:1].isspace() or LIST_ITEM.match(cont):
                break
            item.end = self.lines[self.i][1]
            self.i += 1
        self.out.append(item)

    def _paragraph(self, start: int, end: int) -> None:
        if self.para is None:
            self.para = Block("para", start, end)
        else:
            self.para.end = end
        self.i += 1


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
        return bool(_DIGIT_NEXT.match(masked, dot + 1))
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
        nxt = stop  # the first character after the stop and its spaces: walked to, not sliced (a slice of the
        while nxt < end and masked[nxt].isspace():  # rest at every stop made a long block quadratic)
            nxt += 1
        if nxt == stop < end:
            continue  # "4.5", "U.S.A": no space after the stop
        if m.group(0).startswith(".") and len(m.group(0)) == 1 and _is_abbreviation(masked, m.start()):
            continue
        if nxt < end and not (masked[nxt].isupper() or masked[nxt].isdigit() or masked[nxt] in "\"'(\u201c[*_\u3010"):
            continue
        out.append((cur, stop))
        cur = stop
    if masked[cur:end].strip():
        out.append((cur, end))
    return out
