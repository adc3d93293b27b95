"""Read the stages that only OpenInference spans show (zero-code adoption).

An app traced by an OpenInference instrumentor alone (LlamaIndex, LangChain,
Haystack) records what its retriever returned and what its LLM was given and
said, but none of citeline's identity: document ids are the framework's own
(node UUIDs, or none at all), there is no context-assembly span, and no label
map tells what ``[2]`` meant. This pass rebuilds, per trace, what run_traces.sql
could not:

* **retrieved**: each document joins a gold chunk by, in order, its id, an id in
  its metadata (``chunk_id``, ``id``, ``doc_id``, ...), a uri in its metadata,
  its content hash, or containment (a re-chunked piece inside one gold chunk's
  text, or one gold chunk's text inside it). A document that joins nothing keeps
  its own id (``oi:<content hash>`` when it has none) and is counted.
* **generation**: the last LLM span whose prompt holds a retrieved document
  (a follow-up call or a prompt-builder span must not become the answer); else
  the last LLM span with an answer.
* **context and labels**: the documents found in that prompt, each with the label
  written before it (``[2]``, ``Source 2:``), by the same detection the
  decorators use; a document cut into pieces (LlamaIndex's CitationQueryEngine)
  is found block by block. No prompt recorded: the context is not_evaluable,
  with the decorator that would make it observable.

docs/openinference.md has the table of what each framework gives.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import duckdb
import polars as pl

from citeline.instrumentation import content_hash
from citeline.instrumentation._chunks import Columns
from citeline.instrumentation._chunks import normalised as _norm
from citeline.instrumentation._labels import BLOCK_HEADER
from citeline.instrumentation._prompt import chunks_in_prompt

from ._ingest import Problem
from ._store import register_frame

#: metadata keys read as the chunk's id, most specific first
META_ID_KEYS = ("chunk_id", "citeline_chunk_id", "id", "doc_id", "document_id", "ref_doc_id")
#: metadata keys read as the chunk's address
META_URI_KEYS = ("uri", "url", "source", "link", "file_path")
#: what an OpenInference instrumentor writes in place of a hidden value (TraceConfig(hide_inputs=True))
REDACTED = "__REDACTED__"
#: a piece shorter than this (normalised characters) is never matched by containment
MIN_PIECE = 24

NO_PROMPT = (
    "not observed: the LLM span recorded no prompt, so which chunks reached the model "
    "and what its markers mean cannot be read; add @context_assembly (or let the instrumentor record inputs)"
)
NO_CONTEXT_SEEN = (
    "not observed: no retrieved document was found in the LLM span's prompt, "
    "and no retrieval span recorded document text; add @retrieval or @context_assembly"
)

# a labelled block header at a line start ("Source 2:", "[2]", "Document #2:"): the label grammar's
_HEADER = BLOCK_HEADER


@dataclass
class Stats:
    """What the pass did over a run, for the run's problems list."""

    traces: int = 0
    joined: dict[str, int] = field(default_factory=dict)  # how documents joined: by id, uri, hash, ...
    unjoined: set[str] = field(default_factory=set)
    no_prompt: int = 0
    span_chunks: list[tuple[str, list[str]]] = field(default_factory=list)  # retrieval span -> ids as joined

    def add(self, how: str) -> None:
        self.joined[how] = self.joined.get(how, 0) + 1


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


def _prompt_text(prompt: str) -> str:
    """A prompt recorded as JSON (a framework's call arguments) -> its string leaves, joined."""
    leaves = json_strings(prompt)
    return prompt if leaves is None else "\n\n".join(leaves)


def _blocks(prompt: str) -> list[tuple[str, str]]:
    """(label, text) of each labelled block of the prompt."""
    heads = list(_HEADER.finditer(prompt))
    return [
        (m.group(1) or m.group(2), prompt[m.end() : heads[i + 1].start() if i + 1 < len(heads) else len(prompt)])
        for i, m in enumerate(heads)
    ]


def context_from_prompt(prompt: str, docs: list[Doc]) -> tuple[list[str], list[str]]:
    """(chunk ids that reached the model in prompt order, the label of each) from a prompt's text."""
    unique: list[Doc] = []
    seen: set[str] = set()
    for d in docs:
        if d.chunk_id not in seen and d.text:
            seen.add(d.chunk_id)
            unique.append(d)
    n = len(unique)
    found = chunks_in_prompt(
        prompt,
        Columns(
            doc_id=[""] * n,
            chunk_id=[d.chunk_id for d in unique],
            version=[""] * n,
            content_hash=[""] * n,
            score=[0.0] * n,  # not read here
            uri=[""] * n,
            title=[""] * n,
            text=[d.text for d in unique],
            label=[None] * n,
        ),
    )
    ids = list(found.chunk_id)
    labels = [str(lab) for lab in found.label]
    missing = [d for d in unique if d.chunk_id not in set(ids)]
    if missing:  # pieces of a document, each under a label of its own
        norm_docs = [(d.chunk_id, _norm(d.text)) for d in missing]
        for label, block in _blocks(prompt):
            best, best_len = None, 0
            for line in block.splitlines():
                piece = _norm(line)
                if len(piece) < MIN_PIECE:
                    continue
                for cid, text in norm_docs:
                    if piece in text and len(piece) > best_len:
                        best, best_len = cid, len(piece)
            if best is not None and label not in labels:
                ids.append(best)
                labels.append(label)
    return ids, labels


_TRACES = """
SELECT trace_id, oi_stages, retrieval_span, retrieved, context_span, context, generation_span, answer, answer_format,
       map_label, map_chunk_id, map_version, unreadable_stage, unreadable_span, unreadable_error
FROM t_traces WHERE len(oi_stages) > 0
"""
_SPANS = """
SELECT trace_id, span_id, stage, start_ns, end_ns, chunk_id, oi_doc_text, oi_doc_meta, oi_prompt, answer
FROM spans
WHERE schema_version IS NULL AND stage IN ('retrieval', 'context', 'generation')
  AND trace_id IN (SELECT trace_id FROM t_traces WHERE len(oi_stages) > 0)
ORDER BY trace_id, start_ns, span_id
"""
_COLUMNS: dict[str, Any] = {
    "trace_id": pl.Utf8,
    "retrieval_span": pl.Utf8,
    "retrieved": pl.List(pl.Utf8),
    "context_span": pl.Utf8,
    "context": pl.List(pl.Utf8),
    "generation_span": pl.Utf8,
    "answer": pl.Utf8,
    "answer_format": pl.Utf8,
    "map_label": pl.List(pl.Utf8),
    "map_chunk_id": pl.List(pl.Utf8),
    "map_version": pl.List(pl.Utf8),
    "unreadable_stage": pl.Utf8,
    "unreadable_span": pl.Utf8,
    "unreadable_error": pl.Utf8,
}


def _one_trace(row: dict[str, Any], spans: list[dict[str, Any]], gold: GoldIndex, stats: Stats) -> dict[str, Any]:
    out = {k: row[k] for k in _COLUMNS}
    stages = set(row["oi_stages"])
    retrievals = [s for s in spans if s["stage"] == "retrieval"]
    docs: list[Doc] = []
    first_with_docs = None
    for s in retrievals:
        found = _docs(s["chunk_id"], s["oi_doc_text"], s["oi_doc_meta"], gold, stats)
        stats.span_chunks.append((s["span_id"], [d.chunk_id for d in found]))
        if found and first_with_docs is None:
            first_with_docs = s["span_id"]
        docs.extend(found)
    if "retrieval" in stages:
        out["retrieval_span"] = first_with_docs or (retrievals[0]["span_id"] if retrievals else None)
        out["retrieved"] = list(dict.fromkeys(d.chunk_id for d in docs))
    reranked = [s for s in spans if s["stage"] == "context"]
    rerank_docs: list[Doc] = []
    for s in reranked:
        rerank_docs.extend(_docs(s["chunk_id"], s["oi_doc_text"], s["oi_doc_meta"], gold, stats))
    if "context" in stages and reranked:
        out["context_span"] = reranked[-1]["span_id"]
        out["context"] = list(dict.fromkeys(d.chunk_id for d in rerank_docs))
    if "generation" not in stages:
        return out
    llms = sorted(
        (s for s in spans if s["stage"] == "generation" and s["answer"] is not None),
        key=lambda s: (s["end_ns"] or 0, s["span_id"]),
    )
    if not llms:
        return out
    candidates = rerank_docs or docs
    chosen, found_ids, found_labels = llms[-1], [], []
    for s in reversed(llms):  # the last LLM call that was given a retrieved document
        prompt = _prompt_text(s["oi_prompt"] or "")
        ids, labels = context_from_prompt(prompt, candidates) if prompt and candidates else ([], [])
        if ids:
            chosen, found_ids, found_labels = s, ids, labels
            break
    out["generation_span"] = chosen["span_id"]
    out["answer"] = chosen["answer"]
    out["answer_format"] = "prose"
    out["map_label"] = found_labels
    out["map_chunk_id"] = found_ids
    out["map_version"] = [""] * len(found_ids)
    if not reranked and row["context_span"] is None:  # no context span of any kind: the prompt tells
        out["context_span"] = chosen["span_id"]
        out["context"] = list(dict.fromkeys(found_ids))
        if (chosen["oi_prompt"] or "").strip() in ("", REDACTED):
            stats.no_prompt += 1
            _unreadable(out, "context", chosen["span_id"], NO_PROMPT)
        elif not found_ids and not any(d.text for d in candidates):
            _unreadable(out, "context", chosen["span_id"], NO_CONTEXT_SEEN)
    return out


def _unreadable(out: dict[str, Any], stage: str, span: str, error: str) -> None:
    if out["unreadable_stage"] is None:
        out["unreadable_stage"], out["unreadable_span"], out["unreadable_error"] = stage, span, error


def _dicts(cur: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    names = [d[0] for d in cur.description or ()]
    return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]


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
                "retrieval.documents",
                f"{len(stats.unjoined)} document(s) of {stats.traces} OpenInference-only trace(s) joined no gold "
                f"chunk (joined: {how}); give documents the gold chunk id in metadata.chunk_id, or their text: "
                + ", ".join(sorted(stats.unjoined)[:5]),
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
            )
        )
    return out


def resolve(con: duckdb.DuckDBPyConnection, stats: Stats) -> None:
    """Rewrite the OpenInference-only stages of t_traces' rows (see the module docstring)."""
    rows = _dicts(con.execute(_TRACES))
    if not rows:
        return
    gold = GoldIndex(con.execute("SELECT chunk_id, text, uri, content_hash FROM t_gold_chunks").fetchall())
    by_trace: dict[str, list[dict[str, Any]]] = {}
    for s in _dicts(con.execute(_SPANS)):
        by_trace.setdefault(s["trace_id"], []).append(s)
    fixed = [_one_trace(r, by_trace.get(r["trace_id"], []), gold, stats) for r in rows]
    stats.traces += len(fixed)
    register_frame(con, "t_oi", pl.DataFrame(fixed, schema=_COLUMNS))
    sets = ", ".join(f"{c} = o.{c}" for c in _COLUMNS if c != "trace_id")
    con.execute(f"UPDATE t_traces SET {sets} FROM t_oi AS o WHERE t_traces.trace_id = o.trace_id")


__all__ = ["GoldIndex", "Stats", "context_from_prompt", "json_strings", "problems", "resolve"]
