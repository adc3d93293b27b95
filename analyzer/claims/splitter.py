"""Split a prose answer into claims and read the citations of each.

An answer is read block by block: paragraphs, list items, Markdown and HTML tables, headings, and a
reference list. Paragraphs and list items are cut into sentences (decimals such as 4.5,
abbreviations such as e.g. and U.S., and initials do not end one), and under the ``auto`` and
``clause`` policies a sentence is cut again where a marker closes a clause (``..., 30 days [1], and
refunds ... [2].``). Under ``auto`` a table row is one claim, its cells labelled by their headers
("Plan: Pro; price: $20; storage: 100 GB"), each factual cell kept beside it as a candidate for
matching; under ``table-cell`` and ``table-row`` each factual cell is a claim, with its row and column
headers.
Which unit a marker covers is the attachment policy (``_policy.ATTACH``). Citations are read with
the label grammar the prompt reader uses (``citeline.instrumentation.labels``), before or after a
sentence's final punctuation; a marker group on a line of its own cites the sentence before it.
Nothing inside fenced code blocks or inline code counts as a marker.

Text that is no claim (a greeting, a heading, a table's header row, "1.", "Sources: [1] [2]", "The
sources conflict.") is returned apart with its kind (``Split.skipped``), so a run can count it; a
reference list is read as the label -> source map it is (``Split.references``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from citeline.analyzer.claims import tables
from citeline.analyzer.claims.blocks import ENTRY, FOOTNOTE_DEF, LIST_ITEM, Block, Marks, blocks, sentences
from citeline.analyzer.claims.policy import DEFAULT_POLICY, Policy, kind_of, says_little
from citeline.analyzer.text import fold
from citeline.instrumentation.labels import DEFAULT_SHAPE, NAMING_WORDS, Marker, Shape, find_markers

_FENCE = re.compile(r"```.*?(?:```|\Z)|~~~.*?(?:~~~|\Z)", re.S)
_INLINE = re.compile(r"`[^`\n]*`")
_STOPS = (".", ",", ";", ":", "!", "?")
_ITEM_OPENS = frozenset("-*+\u20220123456789")
# what is left of "Source 2." or "Sources 1 and 3:" once the naming words, numbers and punctuation go
_NAMED_ONLY = re.compile(rf"(?i)\b(?:{'|'.join(NAMING_WORDS)})s?\b|[\d\s.,;:#&()]|\band\b")
# where a clause ends after a marker: "; ", ", and ", ", while ", " and " before a second predicate
_BOUNDARY = re.compile(
    r"\s*(?:;|,\s*(?:and|but|while|whereas|yet|or|so|although|though)\b|\s(?:and|but|while|whereas|yet)\b)\s*",
    re.IGNORECASE,
)
_WORD = re.compile(r"[^\W\d_][\w'-]*|\d[\d.,]*")
_CLOSES = frozenset(("", ".", "!", "?", ")", '"', "'", "\n", "\u201d", "\u2019"))
_CONTENT = re.compile(r"[A-Za-z]{3,}")
_DIGIT = re.compile(r"\d")
_NO_VALUE = re.compile(r"^[\W_]*$|^(?:n/?a|none|-+|\u2014|\u2013)$", re.IGNORECASE)
#: a list item shorter than this many words that states a number is judged with its lead-in, when the
#: lead-in is a heading-like line of at most LEAD_IN_MAX words ("Refund windows (days):")
LEAD_IN_WORDS = 8
LEAD_IN_MAX = 10


@dataclass(frozen=True)
class Claim:
    """One claim of an answer: a sentence, a clause, a list item, a table row or cell, with the labels it cites.

    ``factual``: it states something checkable (a claim that only cites, "Yes [1].", is not);
    ``joins``: a candidate matching may take that is never a claim of its own, and the claims it stands
    for: for a sentence cut into clauses, the sentence as a whole (its clauses' indexes, two or more: a
    gold claim the clauses answer together takes it); for a table row under ``auto``, each of its cells
    (the row's index, one: a gold claim one cell answers takes it)."""

    text: str
    labels: tuple[str, ...] = field(default=())
    start: int = 0
    end: int = 0
    factual: bool = True
    joins: tuple[int, ...] = ()


@dataclass(frozen=True)
class Skipped:
    """Text that is no claim, and why (one of ``_policy.SKIP_KINDS``)."""

    kind: str
    text: str
    labels: tuple[str, ...] = ()


@dataclass
class Split:
    """An answer read whole: its claims, what was not a claim, and its reference list (label -> source)."""

    claims: list[Claim] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    references: dict[str, str] = field(default_factory=dict)


def mask_code(text: str) -> str:
    """The text with code blocks and inline code blanked out (same length)."""

    def blank(m: re.Match[str]) -> str:
        return re.sub(r"[^\n]", " ", m.group(0))

    if "`" not in text and "~~~" not in text:
        return text
    return _INLINE.sub(blank, _FENCE.sub(blank, text))


def markers(text: str, shape: Shape = DEFAULT_SHAPE) -> list[str]:
    """Every label cited in ``text``, in order, repeats kept (code ignored)."""
    return [label for m in find_markers(mask_code(text), shape) for label in m.labels]


def remove_markers(text: str, shape: Shape = DEFAULT_SHAPE) -> tuple[str, int]:
    """``text`` without its citations (bracketed, full-width, parenthesised and caret ones, with the spaces
    before them; code untouched), and how many were removed. A named source in prose ("According to
    Source 2, ...") stays: it is words of the sentence."""
    masked = mask_code(text)
    found = [m for m in find_markers(masked, shape) if not m.inline]
    parts, last = [], 0
    for m in found:
        start = m.start
        while start > last and masked[start - 1] in " \t":
            start -= 1
        parts.append(text[last:start])
        last = m.end
    parts.append(text[last:])
    return "".join(parts), len(found)


def relabel(text: str, old: str, new: str, shape: Shape = DEFAULT_SHAPE) -> str:
    """``text`` with every citation of label ``old`` citing ``new`` instead (code untouched)."""
    parts, last = [], 0
    for m in find_markers(mask_code(text), shape):
        if old in m.labels:
            parts.append(text[last : m.start])
            parts.append(re.sub(rf"(?<![0-9A-Za-z]){re.escape(old)}(?!\d)", new, text[m.start : m.end]))
            last = m.end
    parts.append(text[last:])
    return "".join(parts)


def is_factual(claim: str) -> bool:
    """Whether a claim states something checkable (not "No." or "Here is what I found:")."""
    if _DIGIT.search(claim):
        return True
    words = _CONTENT.findall(claim)
    return len(words) >= 3 and not claim.rstrip().endswith(":")


# --- clauses ------------------------------------------------------------------------------------------


def _clauses(masked: str, s: int, e: int, in_sentence: list[Marker], marks: Marks) -> list[tuple[int, int]]:
    """A sentence cut where a marker closes a clause: after the markers, a clause boundary (";", ", and",
    ", while", " and" before a second predicate) and at least three words before the sentence's end
    or its next marker. The boundary itself belongs to neither clause."""
    out: list[tuple[int, int]] = []
    cur = s
    runs: list[int] = []  # where each run of adjacent markers ends
    for m in in_sentence:
        if runs and (runs[-1] == m.start or masked[runs[-1] : m.start].isspace()):
            runs[-1] = m.end
        else:
            runs.append(m.end)
    for run in runs:
        if masked[run : run + 1] in _CLOSES:  # "... days [1]." (the common case): no clause follows
            continue
        b = _BOUNDARY.match(masked, run, e)
        if b is None:
            continue
        following = [x.start for x in in_sentence if x.start >= b.end()]
        if len(_WORD.findall(masked, b.end(), following[0] if following else e)) < 3:
            continue
        out.append((cur, run))
        cur = b.end()
    if out:
        out.append((cur, e))
    return out or [(s, e)]


def _clean(text: str, masked: str, start: int, end: int, in_span: list[Marker]) -> str:
    """Claim text: markers (found in the masked copy, so code keeps its brackets) removed. A named source in
    prose ("as stated in passage 2", "According to Source 2, ...") is words of the sentence and stays,
    unless it is all the text there is ("Source 2." after a sentence: that cites the sentence before)."""
    parts: list[str] = []
    last = start
    inline = False
    for m in in_span:
        if m.inline:
            inline = True
            continue
        parts.append(text[last : m.start])
        parts.append(" ")
        last = m.end
    parts.append(text[last:end])
    out = "".join(parts)
    if out[:1] in _ITEM_OPENS or out[:1].isspace():
        out = LIST_ITEM.sub("", out, count=1)
    out = " ".join(out.split()).lstrip(":;,-\u2013 ")  # whitespace runs as one space (as re's \s+ would)
    if " " in out:  # "days ." once its marker is gone: one space at most before a stop, after the join
        for stop in _STOPS:
            out = out.replace(" " + stop, stop)
    if inline and _named_only(out):
        return ""
    if in_span and out[-1:] in ".!?,;" and (core := out.rstrip(".!?")).endswith((",", ";")):
        out = core.rstrip(",;") + out[len(core) :]  # "days, [1]." and "Source 1, Source 2." leave a comma
    return out


def _named_only(text: str) -> bool:
    """Whether ``text`` says nothing but named sources ("Source 2.", "Sources: 1, 3")."""
    return not _NAMED_ONLY.sub("", text)


def _labels(in_span: list[Marker]) -> list[str]:
    if len(in_span) == 1:  # the common case: one marker
        return list(dict.fromkeys(in_span[0].labels))
    return list(dict.fromkeys(label for m in in_span for label in m.labels))


# --- units and attachment ------------------------------------------------------------------------------


#: a table column: its header's name as written, as words inside a claim, and the unit it names
_Column = tuple[str, str, str]


@dataclass(slots=True)
class _Unit:
    text: str
    labels: list[str]
    start: int
    end: int
    block: int
    kind: str | None = None
    sentence: int = -1  # clauses of one sentence share it
    parts: list[_Unit] = field(default_factory=list)  # a table row's cells, each read as a claim of its own


class _AnswerReader:
    """One answer under one policy."""

    def __init__(self, text: str, policy: Policy, phrases: tuple[str, ...]) -> None:
        self.text = text
        self.masked = mask_code(text)
        self.policy = policy
        self.phrases = phrases
        self.marks = Marks(find_markers(self.masked, policy.shape))
        self.units: list[_Unit] = []
        self.split = Split()
        self.sentences = 0
        self.pending: _Unit | None = None  # a list number that cites: its labels go to the claim after it

    def kind(self, body: str, labels: list[str]) -> str | None:
        folded = fold(body) if self.phrases else ""
        abstains = any(p in folded for p in self.phrases)
        kind = kind_of(body, cited=bool(labels), has_digit=bool(_DIGIT.search(body)), abstains=abstains)
        if kind is not None and kind not in self.policy.exempt:
            return "not_factual" if abstains else None  # a citation is required of it: a claim
        return kind

    def add(
        self,
        body: str,
        labels: list[str],
        start: int,
        end: int,
        block: int,
        kind: str | None = None,
        *,
        clause: bool = False,
    ) -> None:
        """One unit; ``clause``: another clause of the sentence before (it keeps that sentence's number)."""
        if not clause:
            self.sentences += 1
        if not body and not labels:
            return
        if not body:  # a marker group on its own line cites the unit before it
            for u in reversed(self.units):
                if u.kind is None:
                    u.labels = list(dict.fromkeys(u.labels + labels))
                    u.end = max(u.end, end)
                    return
        kind = kind or self.kind(body, labels)
        unit = _Unit(body, labels, start, end, block, kind, self.sentences)
        if kind is None and self.pending is not None:  # "1[1]. Analyze ...": the item's citation, on its number
            unit.labels = list(dict.fromkeys(self.pending.labels + labels))
            self.pending.labels = []
            self.pending = None
        if kind == "list_number" and labels:
            self.pending = unit
        self.units.append(unit)

    def prose(self, b: Block, n: int) -> None:
        attach, masked, text = self.policy.attach, self.masked, self.text
        if attach == "bullet" and b.kind == "item":
            in_b = self.marks.within(b.start, b.end)
            self.add(_clean(text, masked, b.start, b.end, in_b), _labels(in_b), b.start, b.end, n)
            return
        for s, e in sentences(masked, b.start, b.end, self.marks):
            in_s = self.marks.within(s, e)
            cut = in_s and attach in ("auto", "clause") and any(masked[m.end : m.end + 1] not in _CLOSES for m in in_s)
            spans = _clauses(masked, s, e, in_s, self.marks) if cut else [(s, e)]
            if len(spans) == 1:
                self.add(_clean(text, masked, s, e, in_s), _labels(in_s), s, e, n)
                continue
            stop = _clean(text, masked, s, e, in_s)[-1:]
            for k, (c_s, c_e) in enumerate(spans):
                in_c = [m for m in in_s if c_s <= m.start < c_e]
                body = _clean(text, masked, c_s, c_e, in_c)
                if body and body[-1] not in ".!?" and stop in (".", "!", "?"):
                    body += stop
                self.add(body, _labels(in_c), c_s, c_e, n, clause=k > 0)

    def cell(self, t: tables.Table, cell: tables.Cell) -> tuple[str, list[str]]:
        """A cell's text (markers out) and the labels it cites."""
        if t.html:
            in_c = find_markers(cell.text, self.policy.shape)
            return _clean(cell.text, cell.text, 0, len(cell.text), in_c), _labels(in_c)
        in_c = self.marks.within(cell.start, cell.end)
        return _clean(self.text, self.masked, cell.start, cell.end, in_c), _labels(in_c)

    def table(self, b: Block, n: int) -> int:
        """A table's claims (every row a block of its own); returns the next block number."""
        t = b.table
        if t is None:
            return n
        heads = [self.cell(t, c)[0] for c in t.header] if t.header else []
        if t.header:
            kind = "table_header" if "table_header" in self.policy.exempt else None
            self.add(" ".join(h for h in heads if h), [], t.header[0].start, t.header[-1].end, n, kind)
            n += 1
        # each column's name (as written, and as words inside a claim) and unit, read once per table
        columns = [(name, tables.as_context(name), unit) for name, unit in map(tables.header_unit, heads)]
        attach = self.policy.attach
        for row in t.rows:
            cells = [self.cell(t, c) for c in row]
            if attach == "auto" and len(cells) >= 2:  # the row is one claim, its cells its parts
                self.row(row, cells, columns, n)
            elif attach not in ("table-cell", "table-row") or (len(cells) < 2 and not heads):  # the row is one claim
                self.add(" ".join(v for v, _ in cells if v), _labels_of(cells), row[0].start, row[-1].end, n)
            else:
                self.cells(row, cells, columns, n)
            n += 1
        return n

    def row(self, row: list[tables.Cell], cells: list[tuple[str, list[str]]], columns: list[_Column], n: int) -> None:
        """A row as one claim (``auto``): its cells labelled by their headers ("Plan: Pro; price: $20; storage:
        100 GB"), citing every marker of the row; each factual cell is also kept as the part it is (its
        :meth:`cells` reading, for matching a gold claim that one cell answers, and for naming a wrong cell)."""
        labels = _labels_of(cells)
        first = len(self.units)
        valued = self.cells(row, cells, columns, n)
        made = self.units[first:]
        del self.units[first:]
        self.units.extend(u for u in made if u.kind is not None)  # an empty cell ("-", "n/a") is still counted
        name = cells[0][0]
        parts = [tables.labelled(name, columns[0][0] if columns else "")] if name and not _NO_VALUE.match(name) else []
        parts.extend(tables.part(columns[j][1] if j < len(columns) else "", v) for j, v in valued)
        if not parts:
            self.add("", labels, row[0].start, row[-1].end, n)
            return
        pieces = [u for u in made if u.kind is None] if len(parts) > 1 else []  # a row of one part is its cell
        self.sentences += 1
        body = tables.row_claim(parts)
        self.units.append(_Unit(body, labels, row[0].start, row[-1].end, n, None, self.sentences, pieces))

    def cells(
        self, row: list[tables.Cell], cells: list[tuple[str, list[str]]], columns: list[_Column], n: int
    ) -> list[tuple[int, str]]:
        """Each factual cell a claim, named by its row's first cell and its column's header; returns each such
        cell's column and value (with its column's unit)."""
        named = len(cells) >= 2
        row_name, row_labels = cells[0] if named else ("", [])
        first = len(self.units)
        valued: list[tuple[int, str]] = []
        for j in range(1 if named else 0, len(cells)):
            value, labels = cells[j]
            if not value:
                row_labels = row_labels + labels  # a cell of markers alone cites the row
                continue
            name, context, unit = columns[j] if j < len(columns) else ("", "", "")
            context = ", ".join(x for x in (row_name, context if row_name else name) if x)
            shown = tables.with_unit(value, unit)
            body = f"{context}: {shown}" if context else value
            kind = "not_factual" if _NO_VALUE.match(value) else None
            if kind is None:
                valued.append((j, shown))
            self.sentences += 1
            self.units.append(_Unit(body, labels, row[j].start, row[j].end, n, kind, self.sentences))
        claims = [u for u in self.units[first:] if u.kind is None]
        if row_labels and not claims:  # markers and nothing to say: read as prose would
            self.add(row_name, row_labels, row[0].start, row[-1].end, n)
        for u in claims:  # markers in the row's name or in a cell of their own cite the whole row
            u.labels = list(dict.fromkeys(u.labels + row_labels))
        return valued

    def biblio(self, b: Block) -> None:
        """A reference list: each entry is read as a label -> source line, and is no claim."""
        for line in self.text[b.start : b.end].splitlines():
            if not line.strip():
                continue
            m = FOOTNOTE_DEF.match(line)
            label, source = (m.group(1), m.group(2)) if m else (None, None)
            if m is None and (e := ENTRY.match(line)) is not None:
                label, source = e.group(1) or e.group(2), e.group(3)
            if label and source:
                self.split.references[str(int(label)) if label.isdigit() else label] = source.strip()
            self.split.skipped.append(Skipped("bibliography", " ".join(line.split())))

    def read(self) -> Split:
        if self.masked is not self.text:
            self.split.skipped.extend(Skipped("code", "") for _ in _FENCE.finditer(self.text))
        n = 0
        for b in blocks(self.text, self.masked):
            if b.kind == "table":
                n = self.table(b, n)
                continue
            if b.kind == "heading":
                in_b = self.marks.within(b.start, b.end)
                body = _clean(self.text, self.masked, b.start, b.end, in_b).strip("#*_ :").strip()
                self.add(body, _labels(in_b), b.start, b.end, n, "heading" if "heading" in self.policy.exempt else None)
            elif b.kind == "biblio" and "bibliography" in self.policy.exempt:
                self.biblio(b)
            else:
                before = len(self.units)
                self.prose(b, n)
                if b.kind == "item" and b.lead:
                    self.lead_in(self.units[before:], b.lead)
            n += 1
        self.attach()
        return self.finish()

    def lead_in(self, units: list[_Unit], lead: str) -> None:
        """A short list item stating a number is judged with its lead-in ("Refund windows (days): Opened: 30")."""
        name, unit = tables.header_unit(lead.strip("#*_ ").rstrip(":").strip())
        if not name or len(name.split()) > LEAD_IN_MAX or says_little(name):  # "Here is what I found:" names nothing
            return
        for u in units:
            if u.kind is None and _DIGIT.search(u.text) and len(u.text.split()) < LEAD_IN_WORDS:
                u.text = f"{tables.as_context(name)}: {tables.with_unit(u.text.rstrip('.'), unit)}"

    def attach(self) -> None:
        """Markers that close a block cover its other units: under ``auto`` when they are its only markers,
        under ``paragraph`` and ``table-row`` always."""
        mode = self.policy.attach
        if mode not in ("auto", "paragraph", "table-row") or all(u.labels for u in self.units if u.kind is None):
            return
        by_block: dict[int, list[_Unit]] = {}
        for u in self.units:
            if u.kind is None:
                by_block.setdefault(u.block, []).append(u)
        for group in by_block.values():
            last = group[-1]
            if len(group) < 2 or not last.labels:
                continue
            if mode == "auto" and any(u.labels for u in group[:-1]):
                continue
            for u in group[:-1]:
                if not u.labels:
                    u.labels = list(last.labels)

    def finish(self) -> Split:
        claims, skipped = self.split.claims, self.split.skipped
        by_sentence: dict[int, list[int]] = {}
        rows: list[tuple[int, _Unit]] = []
        for u in self.units:
            if u.kind is not None:
                skipped.append(Skipped(u.kind, u.text, tuple(u.labels)))
                continue
            factual = is_factual(u.text)
            if not factual and not u.labels:
                skipped.append(Skipped("not_factual", u.text))
                continue
            by_sentence.setdefault(u.sentence, []).append(len(claims))
            if u.parts:
                rows.append((len(claims), u))
            claims.append(Claim(u.text, tuple(u.labels), u.start, u.end, factual))
        for at, u in rows:  # a table row's cells: candidates for a gold claim one cell answers
            claims.extend(Claim(p.text, tuple(u.labels), p.start, p.end, is_factual(p.text), (at,)) for p in u.parts)
        for idxs in by_sentence.values():  # a sentence cut into clauses is also a candidate whole
            if len(idxs) > 1:
                s, e = claims[idxs[0]].start, claims[idxs[-1]].end
                whole = _clean(self.text, self.masked, s, e, self.marks.within(s, e))
                labels = tuple(dict.fromkeys(x for i in idxs for x in claims[i].labels))
                claims.append(Claim(whole, labels, s, e, is_factual(whole), tuple(idxs)))
        return self.split


def _labels_of(cells: list[tuple[str, list[str]]]) -> list[str]:
    return list(dict.fromkeys(x for _, labels in cells for x in labels))


def skipped_kinds(split: Split) -> dict[str, int]:
    """How many units of each kind an answer holds that are no claim (a claim that only cites, "Yes [1].",
    counts as ``not_factual``: it is never judged)."""
    out: dict[str, int] = {}
    for k in split.skipped:
        out[k.kind] = out.get(k.kind, 0) + 1
    for c in split.claims:
        if not c.factual and not c.joins:
            out["not_factual"] = out.get("not_factual", 0) + 1
    return out


def split_answer(text: str, policy: Policy = DEFAULT_POLICY, phrases: tuple[str, ...] = ()) -> Split:
    """An answer's claims, what in it is no claim, and its reference list, under ``policy``.

    ``phrases``: the run's abstention phrases, lowercased; a sentence holding one is a statement about
    the sources (``meta``), not a claim."""
    return _AnswerReader(text, policy, phrases).read()


def split_claims(text: str, policy: Policy = DEFAULT_POLICY) -> list[Claim]:
    """Claims of a prose answer, each with the labels it cites (a sentence cut into clauses also appears
    whole, with ``joins`` naming its clauses)."""
    return split_answer(text, policy).claims
