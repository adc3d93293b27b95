"""Tables in answers (Markdown and HTML): rows of cells, the header row, and what a header says about units.

A generated table states several facts a row, often with one citation at the row's end. Under
``auto`` the splitter makes each row one claim, its cells labelled by their column headers and joined
by :data:`PART` ("Plan: Pro; refund window: 12 days"), so a fact spanning cells is one claim's and
"12" is never judged as a bare number; each factual cell, named by its row header (the first cell)
and its column header ("Pro, refund window: 12 days"), is kept as a candidate beside it, and is a
claim of its own under ``table-cell`` and ``table-row``. This module only reads the table and
writes those texts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html.parser import HTMLParser

#: a Markdown separator row: |---|:---:|
SEPARATOR = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$")
#: an HTML table (the splitter looks for it only when the answer holds "<table")
HTML_TABLE = re.compile(r"<table\b.*?</table\s*>", re.IGNORECASE | re.DOTALL)
# a unit written in a header: "Refund window (days)", "Price [USD]", "Fee, per month"
_HEADER_UNIT = re.compile(r"^(?P<name>.*?)\s*(?:[(\[](?P<unit>[^()\[\]]{1,24})[)\]]|,\s*(?P<tail>per \w+|in \w+))\s*$")
_BARE_NUMBER = re.compile(r"(?<![\w$€£¥₦₹.,])([-+]?\d[\d,]*(?:\.\d+)?)\s*$")
_PREFIX_UNITS = frozenset("$ € £ ¥ ₦ ₹ ₺".split())
#: a currency code in a header becomes its symbol before the number ("Price (USD)", "12" -> "$12"): the
#: same money to a judge, and no word the evidence might not spell
_SYMBOL_OF = {"usd": "$", "eur": "€", "gbp": "£", "jpy": "¥", "ngn": "₦", "try": "₺", "inr": "₹"}


#: what joins the parts (labelled cells) of a row's claim: "Plan: Pro; price: $20; storage: 100 GB"
PART = "; "


def row_claim(parts: list[str]) -> str:
    """A row's claim from its labelled cells (:func:`labelled`)."""
    return PART.join(parts)


def row_parts(claim: str) -> list[str]:
    """The labelled cells of a row's claim (:func:`row_claim`)."""
    return claim.split(PART)


@dataclass(frozen=True)
class Cell:
    """One cell: its text as written (markers included) and where it is in the answer."""

    text: str
    start: int
    end: int


@dataclass
class Table:
    """A table of an answer: its span, its header row (when it has one) and its body rows."""

    start: int
    end: int
    header: list[Cell] | None = None
    rows: list[list[Cell]] = field(default_factory=list)
    html: bool = False  # an HTML table's cells hold their own text (no offsets into the answer)


def markdown_rows(text: str, masked: str, lines: list[tuple[int, int]]) -> Table:
    """A Markdown table from its lines ((start, end) offsets): the row before a separator row is the header.
    Cells split at pipes of the masked text, so a pipe inside code splits nothing."""
    table = Table(lines[0][0], lines[-1][1])
    rows: list[list[Cell]] = []
    header_at = None
    for start, end in lines:
        row = masked[start:end].rstrip("\r\n")
        if SEPARATOR.match(row):
            header_at = len(rows) - 1
            continue
        cells: list[Cell] = []
        body_start = start + (len(row) - len(row.lstrip()))
        inner_start = body_start + 1 if masked[body_start : body_start + 1] == "|" else body_start
        stop = start + len(row.rstrip())
        if stop > inner_start and masked[stop - 1] == "|" and stop - 1 >= inner_start:
            stop -= 1
        pos = inner_start
        for piece in _split_pipes(masked, inner_start, stop):
            cells.append(Cell(text[pos:piece], pos, piece))
            pos = piece + 1
        rows.append(cells)
    if header_at is not None and header_at >= 0:
        table.header = rows[header_at]
        rows = rows[:header_at] + rows[header_at + 1 :]
    table.rows = rows
    return table


def _split_pipes(masked: str, start: int, stop: int) -> list[int]:
    """Where each cell ends: at every unescaped pipe, and at the row's end."""
    ends = [i for i in range(start, stop) if masked[i] == "|" and (i == 0 or masked[i - 1] != "\\")]
    return [*ends, stop]


class _HTMLCells(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.rows: list[tuple[list[str], list[bool]]] = []  # cells' text, whether each is a <th>
        self.in_head = False
        self._cell: list[str] | None = None
        self._heads: list[bool] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "thead":
            self.in_head = True
        elif tag == "tr":
            self.rows.append(([], []))
        elif tag in ("td", "th"):
            if not self.rows:
                self.rows.append(([], []))
            self._cell = []
            self.rows[-1][1].append(tag == "th" or self.in_head)
        elif tag == "br" and self._cell is not None:
            self._cell.append(" ")

    def handle_endtag(self, tag: str) -> None:
        if tag == "thead":
            self.in_head = False
        elif tag in ("td", "th") and self._cell is not None:
            self.rows[-1][0].append(" ".join("".join(self._cell).split()))
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def html_rows(text: str, start: int, end: int) -> Table:
    """An HTML table's rows (every cell placed at the table's span): a row of <th> cells, or the rows of
    <thead>, is the header; the first of them when there are several."""
    parser = _HTMLCells()
    parser.feed(text[start:end])
    parser.close()
    table = Table(start, end, html=True)
    for cells, heads in parser.rows:
        if not cells:
            continue
        row = [Cell(c, start, end) for c in cells]
        if table.header is None and not table.rows and all(heads):
            table.header = row
        else:
            table.rows.append(row)
    return table


def as_context(header: str) -> str:
    """A header as words inside a claim: a capitalised common word is lowercased ("Monthly price" ->
    "monthly price"), so a judge never reads a column name as the name of something; "USD", "iPhone"
    and "Q3" stay as written."""
    head, _, rest = header.partition(" ")
    if len(head) > 1 and head[0].isupper() and head[1:].islower() and head.isalpha():
        head = head.lower()
    return f"{head} {rest}" if rest else head


def labelled(value: str, header: str) -> str:
    """A row's first cell as a part of its row's claim: its column's name as written, then its value
    ("Plan", "Pro" -> "Plan: Pro"; the unit its header names follows a bare number, as in :func:`with_unit`);
    without a header, its value."""
    name, unit = header_unit(header)
    return part(name, with_unit(value, unit))


def part(name: str, value: str) -> str:
    """A cell as a part of its row's claim: its column's name, then its value ("price", "$12" ->
    "price: $12"); a cell without a header is its value. A semicolon in a cell becomes a comma: a row's
    claim is its parts joined by "; " (:data:`PART`), and reads back into them."""
    value = value.replace(";", ",")
    return f"{name}: {value}" if name else value


def header_unit(header: str) -> tuple[str, str]:
    """A column header without the unit it names, and the unit: "Refund window (days)" -> ("Refund window",
    "days"); "Price ($)" -> ("Price", "$"); "Plan" -> ("Plan", "")."""
    m = _HEADER_UNIT.match(header.strip())
    if m is None or not m.group("name"):
        return header.strip(), ""
    return m.group("name").strip(), (m.group("unit") or m.group("tail") or "").strip()


def with_unit(value: str, unit: str) -> str:
    """A cell's value with its header's unit when the cell states a bare number: ("12", "days") -> "12 days",
    ("12", "$") -> "$12", ("12", "USD") -> "$12", ("30 days", "days") -> "30 days" (a cell's own unit wins)."""
    if not unit:
        return value
    unit = _SYMBOL_OF.get(unit.casefold(), unit)
    m = _BARE_NUMBER.search(value)
    if m is None:
        return value
    if unit in _PREFIX_UNITS:
        return value[: m.start(1)] + unit + m.group(1) + value[m.end(1) :]
    glue = "" if unit == "%" else " "
    return value[: m.end(1)] + glue + unit + value[m.end(1) :]
