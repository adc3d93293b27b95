"""The OpenInference source: what only an instrumentor's spans say, read once per document.

Each trace source is decoded into the standard span columns by ``queries/ingest_spans.sql``
(citeline's keys, OpenInference's span kinds, documents, prompts and outputs). What this
source still needs at analysis is text work a query cannot do:

* **documents to gold chunks** (:func:`join_documents`, before ``run_traces.sql`` picks each
  stage): an instrumentor records a document's own id (a node UUID, or none at all), its
  text and metadata. Each joins a gold chunk by, in order, its id, an id in its metadata
  (``chunk_id``, ``id``, ``doc_id``, ...), a uri in its metadata, its content hash, or
  containment (a re-chunked piece inside one gold chunk's text, or one gold chunk's text
  inside it). A document that joins nothing keeps its own id (``oi:<content hash>`` when it
  has none) and is counted. The result is a lookup table (``t_oi_docs``) the SQL joins.
* **the question of a root span recorded as JSON** (a Haystack pipeline's inputs):
  :func:`question_leaves`.

Which chunks reached the model, when no span traced the context, is read off the prompt of
the innermost LLM call by ``prompt_context.py``, for every source alike.
docs/openinference.md has the table of what each framework gives.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import duckdb

from citeline.analyzer import steps
from citeline.analyzer.problems import Problem
from citeline.analyzer.store import sql
from citeline.instrumentation import content_hash
from citeline.instrumentation.chunks import normalised as _norm
from citeline.instrumentation.schema import OI_RETRIEVAL_DOCUMENTS

#: metadata keys read as the chunk's id, most specific first
META_ID_KEYS = ("chunk_id", "citeline_chunk_id", "id", "doc_id", "document_id", "ref_doc_id")
#: metadata keys read as the chunk's address
META_URI_KEYS = ("uri", "url", "source", "link", "file_path")
#: a piece shorter than this (normalised characters) is never matched by containment
MIN_PIECE = 24


@dataclass
class Stats:
    """What the pass did over a run, for the run's problems list."""

    traces: int = 0
    joined: dict[str, int] = field(default_factory=dict)  # how documents joined: by id, uri, hash, ...
    unjoined: set[str] = field(default_factory=set)
    no_prompt: int = 0

    def add(self, how: str) -> None:
        self.joined[how] = self.joined.get(how, 0) + 1

    def __add__(self, other: Stats) -> Stats:
        """Two passes' counts as one (a partitioned run's partitions, added up before they are worded)."""
        joined = dict(self.joined)
        for how, n in other.joined.items():
            joined[how] = joined.get(how, 0) + n
        unjoined = self.unjoined | other.unjoined
        return Stats(self.traces + other.traces, joined, unjoined, self.no_prompt + other.no_prompt)


class GoldIndex:
    """The gold corpus, looked up every way a document may name a chunk."""

    def __init__(self, rows: Iterable[tuple[str, str, str, str]]) -> None:
        self.ids: set[str] = set()
        self.by_uri: dict[str, str | None] = {}
        self.by_hash: dict[str, str | None] = {}
        self.texts: list[tuple[str, str]] = []
        for chunk_id, text, uri, h in rows:
            self.ids.add(chunk_id)
            if uri:
                self.by_uri[uri] = None if uri in self.by_uri else chunk_id
            if h:
                self.by_hash[h] = None if h in self.by_hash else chunk_id
            if text:
                self.texts.append((chunk_id, _norm(text)))

    def join(self, doc_id: str, text: str, meta: Mapping[str, Any]) -> tuple[str | None, str]:
        """(gold chunk id or None, how it joined)."""
        if doc_id in self.ids:
            return doc_id, "id"
        for key in META_ID_KEYS:
            v = meta.get(key)
            if isinstance(v, str) and v in self.ids:
                return v, "metadata id"
        for key in META_URI_KEYS:
            v = meta.get(key)
            if isinstance(v, str) and self.by_uri.get(v):
                return self.by_uri[v], "metadata uri"
        if not text:
            return None, "no text"
        h = content_hash(text)
        if self.by_hash.get(h):
            return self.by_hash[h], "content hash"
        piece = _norm(text)
        if len(piece) >= MIN_PIECE:
            inside = {cid for cid, gold in self.texts if piece in gold or (len(gold) >= MIN_PIECE and gold in piece)}
            if len(inside) == 1:
                return inside.pop(), "containment"
        return None, "no match"


@dataclass
class Doc:
    chunk_id: str  # the gold id, else the document's own
    text: str


def _meta(raw: str) -> Mapping[str, Any]:
    if not raw:
        return {}
    try:
        value = json.loads(raw)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _docs(ids: list[str], texts: list[str], metas: list[str], gold: GoldIndex, stats: Stats) -> list[Doc]:
    out = []
    for doc_id, text, meta in zip(ids or [], texts or [], metas or [], strict=False):
        chunk_id, how = gold.join(doc_id or "", text or "", _meta(meta or ""))
        if chunk_id is None:
            chunk_id = doc_id or ("oi:" + content_hash(text or ""))
            stats.unjoined.add(chunk_id)
        else:
            stats.add(how)
        out.append(Doc(chunk_id, text or ""))
    return out


def json_strings(text: str) -> list[str] | None:
    """The string leaves of ``text`` read as JSON, in document order; None when it is not JSON.

    A framework records call arguments as JSON: a prompt (LlamaIndex's ``predict`` span), a pipeline's
    inputs (Haystack's root span, whose question is one of these strings)."""
    if not text.lstrip().startswith(("{", "[")):
        return None
    try:
        stack: list[Any] = [json.loads(text)]
    except (ValueError, RecursionError):
        return None
    leaves: list[str] = []
    while stack:  # no recursion: the JSON is someone else's
        v = stack.pop()
        if isinstance(v, str):
            leaves.append(v)
        elif isinstance(v, dict):
            stack.extend(reversed(list(v.values())))
        elif isinstance(v, list):
            stack.extend(reversed(v))
    return leaves


def problems(stats: Stats) -> list[Problem]:
    """The run's problems list entries for what this pass could not join or read."""
    if not stats.traces:
        return []
    out = []
    how = ", ".join(f"{n} by {k}" for k, n in sorted(stats.joined.items())) or "none"
    if stats.unjoined:
        out.append(
            Problem(
                "openinference",
                "-",
                OI_RETRIEVAL_DOCUMENTS,
                f"{len(stats.unjoined)} document(s) of {stats.traces} OpenInference-only trace(s) joined no gold "
                f"chunk (joined: {how}); give documents the gold chunk id in metadata.chunk_id, or their text: "
                + ", ".join(sorted(stats.unjoined)[:5]),
                skipped=False,
            )
        )
    if stats.no_prompt:
        out.append(
            Problem(
                "openinference",
                "-",
                "llm.input_messages",
                f"{stats.no_prompt} OpenInference-only trace(s) recorded no prompt on the LLM span: their claims are "
                "not_evaluable; add @context_assembly or let the instrumentor record inputs",
                skipped=False,
            )
        )
    return out


def join_documents(con: duckdb.DuckDBPyConnection, stats: Stats, params: Mapping[str, Any]) -> None:
    """Reads the slice's OpenInference retrieval and context spans (oi_documents.sql); writes t_oi_docs,
    each span with the gold id (and text) of every document it holds."""
    rows = con.execute(sql("oi_documents"), dict(params)).fetchall()
    out: list[tuple[str, str, list[str], list[str]]] = []
    if rows:
        gold = GoldIndex(con.execute("SELECT chunk_id, text, uri, content_hash FROM t_gold_chunks").fetchall())
        traces = set()
        for trace_id, span_id, ids, texts, metas in rows:
            found = _docs(ids, texts, metas, gold, stats)
            traces.add(trace_id)
            out.append((trace_id, span_id, [d.chunk_id for d in found], [d.text for d in found]))
        stats.traces += len(traces)
    steps.fill(con, "t_oi_docs", rows=out)


def question_leaves(question: str) -> list[str]:
    """The strings a root span's JSON input holds (a Haystack pipeline's inputs), in order; [] when
    the input is not JSON. One of them may be the gold question."""
    return json_strings(question) or []


__all__ = ["GoldIndex", "Stats", "join_documents", "json_strings", "problems", "question_leaves"]
