"""What a claim's evidence is, beyond the chunks it cites (issue #36 items 5 and 6): the source a claim
names, and the chunks the gold corpus rates below primary.

``Evidence.said`` reads a claim that states what a named source says ("the memo says ...",
"according to the ledger, ...": ``claims.reported``) into what it says and the chunks the name means
among those given (a chunk's title, document id, uri or chunk id, from the gold corpus; a chunk the
corpus does not hold by its id), so the judge reads the claim's content against that source alone.
``Evidence.low`` names the chunks a claim cites that the corpus rates ``secondary`` or ``untrusted``,
for the calls to action that must not rest on them alone (``claims.actions``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import NamedTuple

import duckdb

from citeline.analyzer.claims.reported import is_generic, reported, words
from citeline.analyzer.gold.goldset import AUTHORITY, GoldSet

#: the titles and uris the run's retrieval spans recorded for each chunk (citeline.chunks.title, citeline.chunks.uri)
_RECORDED = """
SELECT id, coalesce(list_distinct(list(n) FILTER (WHERE coalesce(n, '') <> '')), []) FROM (
    SELECT unnest(chunk_id) AS id, unnest(coalesce(chunk_title, [])) AS title, unnest(coalesce(chunk_uri, [])) AS uri
    FROM spans
    WHERE stage = 'retrieval' AND (chunk_title IS NOT NULL OR chunk_uri IS NOT NULL)
      AND trace_id IN (SELECT trace_id FROM t_traces)
), LATERAL (SELECT unnest([title, uri]) AS n)
WHERE id IS NOT NULL
GROUP BY id
"""

#: authorities a call to action may not rest on alone: every rating below primary
LOW_AUTHORITY = AUTHORITY[1:]


class Said(NamedTuple):
    """A claim read as a report of a named source: what it says the source says, and the source's chunks."""

    content: str
    ids: list[str]

    def prefix(self, rationale: str) -> str:
        """A judgment's rationale, saying which source the claim was judged against."""
        return f"the claim reports what {', '.join(self.ids)} say{'s' if len(self.ids) == 1 else ''}; {rationale}"


class Evidence:
    """The gold corpus as a claim's evidence is chosen from it: each chunk's name words and rating, made once."""

    def __init__(self, gold: GoldSet, con: duckdb.DuckDBPyConnection | None = None) -> None:
        self.gold = gold
        self.con = con
        self._names: dict[str, frozenset[str]] = {}
        self._recorded: dict[str, tuple[str, ...]] | None = None

    def names(self, chunk_id: str) -> frozenset[str]:
        """The words that name a chunk: its id and its gold corpus title, document id and uri; a chunk the corpus
        does not hold, the titles and uris the run's retrieval spans recorded for it."""
        made = self._names.get(chunk_id)
        if made is None:
            c = self.gold.corpus.get(chunk_id)
            own = self.recorded().get(chunk_id, ()) if c is None else (c.doc_id, c.title, c.uri)
            made = words(chunk_id, *own)
            self._names[chunk_id] = made
        return made

    def recorded(self) -> dict[str, tuple[str, ...]]:
        """Each chunk's titles and uris as the run's retrieval spans recorded them, read once, at the first
        report naming a chunk the corpus does not hold (most runs have none: they never read it)."""
        if self._recorded is None:
            rows = self.con.execute(_RECORDED).fetchall() if self.con is not None else []
            self._recorded = {cid: tuple(names) for cid, names in rows}
        return self._recorded

    def said(self, text: str, ids: Iterable[str], cited: Sequence[str] = ()) -> Said | None:
        """``text`` as a report of the source among ``ids`` it names; None when it is no report or names none of
        them. A generic name ("the source says") means what the claim cites (``cited``). ``ids`` is read only
        for a report (most claims are none: a generator costs them nothing)."""
        r = reported(text)
        if r is None:
            return None
        if is_generic(r.name):
            return Said(r.content, list(dict.fromkeys(cited))) if cited else None
        chosen = [c for c in dict.fromkeys(ids) if r.name <= self.names(c)]
        return Said(r.content, chosen) if chosen else None

    def low(self, ids: Sequence[str]) -> list[str]:
        """The chunks of ``ids`` the gold corpus rates below primary, each with its rating: "web#1 (secondary)"."""
        out = []
        for c in ids:
            entry = self.gold.corpus.get(c)
            if entry is not None and entry.authority in LOW_AUTHORITY:
                out.append(f"{c} ({entry.authority})")
        return out
