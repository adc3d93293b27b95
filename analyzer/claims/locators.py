"""Locators an answer names in its prose, and the sources that have them (issue #23 item 5).

An answer may point its reader somewhere besides its markers, in a claim or in its reference list
("[1] https://..."; an entry counts for every claim citing its label): a URL ("confirm at https://..."), a
page, section or paragraph ("see section 4.2, page 17", "§3", "paragraph 2") or a document's title
in quotes ('the "Returns Handbook"'). Each must come from a supplied source: a retrieved chunk's
uri or title (as its retrieval span recorded them), or an entry of the gold corpus (its uri, title,
chunk id or text). One that none has is invented: ``invalid_citation`` at generation, the locator
in the reason (``queries/invented_locators.sql``).

Text work only, once per distinct text: :func:`locators` reads a text's locators; :func:`tables`
writes, for the slice's claims and the sources they may come from, the locator tables the SQL joins:
``t_claim_locators`` (text, kind, value, shown; none a gold entry supplies, a URL a trusted one: those
flag nothing) and ``t_source_locators`` (text, kind, value).
A locator is (kind, value): ``url`` with the URL normalised (scheme and host lower case, no
trailing punctuation, slash, query or fragment), ``section`` / ``page`` / ``paragraph`` with the
number as written ("4.2"), ``title`` case folded with its spaces collapsed.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Final

import duckdb

from citeline.analyzer import steps

KINDS: Final = ("url", "section", "page", "paragraph", "title")

_URL = re.compile(r"\bhttps?://[^\s<>\"'`\]\[)(]+", re.IGNORECASE)
_NUMBER = r"\d+(?:\.\d+)*[a-z]?"  # as written: "4", "4.2", "12b"
_NAMES = {  # what names each kind of place, before its number
    "section": r"(?:\bsections?|\bsec\.|§{1,2})\s*",
    "page": r"(?:\bpages?|\bpp?\.|\bpg\.)\s*",
    "paragraph": r"(?:\bparagraphs?|\bparas?\.?|¶)\s*",
}
#: the three in one pass, the kind in the name of the group that matched. No two kinds' matches can
#: overlap (a section's name starts with s or §, a page's with pa-g, p. pp. or pg., a paragraph's with
#: pa-r or ¶, and a number ends at a word boundary), so one pass finds what three would. The lookahead
#: is every letter a match can start with: most places in a text are rejected by it alone (the
#: alternatives, tried at each place, made this pass 2.5x slower)
_PLACE = re.compile(
    "(?=[sp§¶])(?:" + "|".join(rf"{name}(?P<{kind}>{_NUMBER})\b" for kind, name in _NAMES.items()) + ")",
    re.IGNORECASE,
)
_PHASE = {"url": 0, "section": 1, "page": 2, "paragraph": 3}  # the order locators() lists the kinds in
#: a numbered heading in a source's text ("4.2 Refunds"): the source has that section
_HEADING = re.compile(r"(?m)^\s*#*\s*(\d+(?:\.\d+)+)\.?\s+\w")
#: a title in quotes: two to twelve words, each word of four letters or more capitalised
_QUOTED = re.compile(r"[\"“]([^\"“”\n]{3,120})[\"”]")
_SMALL = frozenset("a an and at by for from in of on or the to with".split())
#: a cheap SQL test for a text worth reading here (regexp_matches, case-insensitive)
PREFILTER: Final = r"https?://|sections?\b|sec\.|§|pages?\b|\bpp?\.|pg\.|paragraphs?\b|\bparas?\b|¶|[\"“]"
_TRAILING = ".,;:!?'\"’”)]}>"


def normal_url(url: str) -> str:
    """A URL as compared: scheme and host lower case; trailing punctuation, slash, query, fragment cut."""
    url = url.strip().rstrip(_TRAILING)
    url = re.split(r"[?#]", url, maxsplit=1)[0].rstrip("/")
    m = re.match(r"(?i)(https?://)([^/]*)(.*)", url)
    return (m.group(1).lower() + m.group(2).lower() + m.group(3)) if m else url


def _title(text: str) -> str:
    return " ".join(text.split()).casefold()


def _is_title(words: list[str]) -> bool:
    big = [w for w in words if w.lower() not in _SMALL]
    return 2 <= len(words) <= 12 and bool(big) and all(w[:1].isupper() or not w[:1].isalpha() for w in big)


def locators(text: str, *, headings: bool = False) -> list[tuple[str, str, str]]:
    """Each locator ``text`` names, once: (kind, value, as written), by kind (urls, sections, pages,
    paragraphs, titles), each kind in the order the text names them. ``headings``: a source's text,
    whose numbered headings ("4.2 Refunds") are sections it has."""
    # Run over every distinct claim text of a run (300,000 on the 100k bench): one regex pass per
    # kind of place, and none for a URL or a quote the text has no sign of
    found: dict[tuple[str, str], tuple[int, str]] = {}  # (kind, value) -> (phase, as first written)
    rest = text
    if "://" in text:  # every URL has it
        for m in _URL.finditer(text):
            shown = m.group(0).rstrip(_TRAILING)
            found.setdefault(("url", normal_url(shown)), (0, shown))
        rest = _URL.sub(" ", text)  # a URL's path is no section or page
    for m in _PLACE.finditer(rest):
        kind = m.lastgroup or ""
        found.setdefault((kind, m.group(kind).lower()), (_PHASE[kind], m.group(0)))
    if headings:
        for m in _HEADING.finditer(rest):
            found.setdefault(("section", m.group(1)), (4, m.group(1)))
    if '"' in rest or "“" in rest:
        for m in _QUOTED.finditer(rest):
            inner = m.group(1).strip().rstrip(",.;:")
            if _is_title(inner.split()):
                found.setdefault(("title", _title(inner)), (5, m.group(0)))
    listed = sorted(found.items(), key=lambda item: item[1][0]) if len(found) > 1 else found.items()
    return [(k, v, shown) for (k, v), (_, shown) in listed]


# the slice's claim texts that may name a locator (t_gen_claims: gen_claims.sql), and the entries of its
# answers' reference lists (t_answer_refs: "[1] https://...", the source a label stands for)
_CLAIM_TEXTS = (
    "SELECT DISTINCT text FROM (SELECT text FROM t_gen_claims UNION ALL SELECT text FROM t_answer_refs) "
    "WHERE text IS NOT NULL AND regexp_matches(text, $p, 'i')"
)
# what a supplied source may have a locator in: its uri (the whole uri is one), title, id and text; a gold
# entry's with whether any entry having it is trusted (an untrusted one supplies no link: the SQL's
# only_untrusted)
_GOLD_TEXTS = """
SELECT x, bool_or(NOT coalesce(untrusted, false)) AS trusted
FROM (SELECT unnest([uri, title, chunk_id, text]) AS x, untrusted FROM t_gold_chunks)
WHERE x IS NOT NULL AND x <> '' GROUP BY x
"""
_SPAN_TEXTS = """
SELECT DISTINCT x FROM (
    SELECT unnest(coalesce(chunk_uri, []) || coalesce(chunk_title, [])) AS x FROM spans
    WHERE stage = 'retrieval' AND (chunk_uri IS NOT NULL OR chunk_title IS NOT NULL)
      AND trace_id IN (SELECT trace_id FROM t_traces)
) WHERE x IS NOT NULL AND x <> ''
"""


def invented(con: duckdb.DuckDBPyConnection) -> None:
    """Writes t_claim_locators, t_source_locators (:func:`tables`) and t_invented: the slice's claims that
    name a locator no supplied source has, or a URL only untrusted sources give
    (``queries/invented_locators.sql``); empty at no cost when no claim names a locator."""
    if tables(con):
        steps.run(con, "invented_locators")
    else:
        steps.empty(con, "invented_locators")


@lru_cache(maxsize=65536)
def _source_locators(text: str) -> tuple[tuple[str, str], ...]:
    """(kind, value) of each locator a source's ``text`` has (the same one may come twice). Kept: each slice
    of a run reads the same gold texts again."""
    found = [(kind, value) for kind, value, _ in locators(text, headings=True)]
    if _URL.fullmatch(text.strip()):  # a uri is its own locator, whatever its form
        found.append(("url", normal_url(text)))
    if 0 < len(text) <= 200 and "\n" not in text:  # a title (a uri or id too: harmless)
        found.append(("title", _title(text)))
    return tuple(found)


def tables(con: duckdb.DuckDBPyConnection) -> bool:
    """t_claim_locators and t_source_locators for the slice; whether any claim names a locator that may be
    invented or an untrusted link. Left out of t_claim_locators: what a gold entry has (any entry: a
    section, page, paragraph or title; a trusted one: a URL), which can flag no claim (the SQL counts
    a source for it, and a trusted one makes no link untrusted). Empty, and no retrieval span read,
    when nothing is left: on the 100k bench every claim names a section the gold corpus has, and the
    spans' 2M chunk uris and titles were read and joined for nothing."""
    claim_rows = [
        (text, kind, value, shown)
        for (text,) in con.execute(_CLAIM_TEXTS, {"p": PREFILTER}).fetchall()
        for kind, value, shown in locators(text)
    ]
    source_rows: list[tuple[str, str, str]] = []
    if claim_rows:
        gold = con.execute(_GOLD_TEXTS).fetchall()
        supplied = set[tuple[str, str]]()
        for text, trusted in gold:
            for kind, value in _source_locators(text):
                source_rows.append((text, kind, value))
                if trusted or kind != "url":
                    supplied.add((kind, value))
        claim_rows = [row for row in claim_rows if (row[1], row[2]) not in supplied]
    if claim_rows:
        seen = {text for text, _ in gold}
        for (text,) in con.execute(_SPAN_TEXTS).fetchall():
            if text not in seen:  # each text once, as one DISTINCT over both gave them
                source_rows += [(text, kind, value) for kind, value in _source_locators(text)]
    steps.fill(con, "t_claim_locators", rows=claim_rows)
    steps.fill(con, "t_source_locators", rows=source_rows)
    return bool(claim_rows)
