"""What reached the model when no span traced the context: read off the prompt of the LLM call.

A trace without a context assembly span (citeline's) or a reranker span (OpenInference's)
still shows what the model was given when a generation span recorded its prompt: citeline's
``@generation`` (``input.value``, with content on) or an instrumentor's LLM span (its input
messages). Whatever source retrieved the chunks, their text is looked for in that prompt, each
with the label written before it, by the decorators' own detection (``chunks_in_prompt``).

Which prompt: the innermost LLM call that was given a retrieved chunk. A framework's wrapper
span (LlamaIndex's ``LLM.predict``, recorded as a JSON blob of template and variables) holds
the call that rendered it (``LLM.chat``); the wrapper is skipped when a call inside it holds
the chunks too. With a citeline generation span, it stays the generation and the prompt is
its own or that of an LLM call inside it; without one, the chosen LLM span is the generation.

No prompt recorded, or no chunk text to look for: the context is not observed. Its claims are
then ``not_evaluable`` naming what to add, and a marker is never an invalid citation, since
nobody saw what it meant. The result is a lookup table, ``t_prompt_context``, that
``queries/apply_prompt_context.sql`` joins into the run's traces.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import duckdb

from citeline.analyzer import steps
from citeline.analyzer.sources.openinference import MIN_PIECE, Doc, Stats, json_strings
from citeline.analyzer.store import sql
from citeline.instrumentation.chunks import Columns
from citeline.instrumentation.chunks import normalised as _norm
from citeline.instrumentation.labels import BLOCK_HEADER
from citeline.instrumentation.prompt import chunks_in_prompt

#: what an OpenInference instrumentor writes in place of a hidden value (TraceConfig(hide_inputs=True))
REDACTED = "__REDACTED__"
NO_PROMPT = (
    "not observed: the LLM span recorded no prompt, so which chunks reached the model "
    "and what its markers mean cannot be read; add @context_assembly (or record the prompt: "
    "record_content=True, or let the instrumentor record inputs)"
)
NO_CONTEXT_SEEN = (
    "not observed: no retrieved chunk text was recorded to look for in the LLM span's prompt; "
    "add @context_assembly (or record chunk text: record_content=True)"
)
# a labelled block header at a line start ("Source 2:", "[2]", "Document #2:"): the label grammar's
_HEADER = BLOCK_HEADER


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


@dataclass
class _Call:
    span_id: str
    parent: str | None
    citeline: bool
    end_ns: int
    prompt: str
    answer: str | None
    picked: bool


def _ancestors(span: str, parents: dict[str, str | None]) -> set[str]:
    out: set[str] = set()
    at = parents.get(span)
    while at is not None and at not in out:  # a cycle in someone else's parent ids ends the walk
        out.add(at)
        at = parents.get(at)
    return out


def _read_trace(trace_id: str, calls: list[_Call], docs: list[Doc], parents: dict[str, str | None]) -> dict[str, Any]:
    own = [c for c in calls if c.citeline and c.picked]
    if own:  # citeline's generation stays the generation: its prompt, or an LLM call's inside it
        gen = own[0]
        candidates = [gen, *(c for c in calls if not c.citeline and gen.span_id in _ancestors(c.span_id, parents))]
    else:
        gen = next((c for c in calls if c.picked), calls[-1])
        candidates = [c for c in calls if not c.citeline and c.answer is not None]
    read = []
    for c in candidates:
        prompt = _prompt_text(c.prompt) if c.prompt and c.prompt.strip() != REDACTED else ""
        ids, labels = context_from_prompt(prompt, docs) if prompt and docs else ([], [])
        if ids:
            read.append((c, ids, labels))
    # a wrapper holds the call inside it: skip it when that call was given the chunks too
    held = {c.span_id for c, _i, _l in read}
    inner = [r for r in read if not any(r[0].span_id in _ancestors(o, parents) for o in held if o != r[0].span_id)]
    if inner:
        chosen, ids, labels = max(inner, key=lambda r: (r[0].end_ns, r[0].span_id))
        return {
            "trace_id": trace_id,
            "span_id": chosen.span_id,
            "answer": gen.answer if own else chosen.answer,
            "is_generation": (not own and chosen.span_id != gen.span_id) or (not own and chosen.picked),
            "context": list(dict.fromkeys(ids)),
            "labels": labels,
            "error": None,
        }
    has_prompt = any(c.prompt and c.prompt.strip() not in ("", REDACTED) for c in candidates)
    error = None
    if not has_prompt:
        error = NO_PROMPT
    elif not any(d.text for d in docs):
        error = NO_CONTEXT_SEEN
    return {  # the model was given none of the retrieved chunks, or nobody can tell (error)
        "trace_id": trace_id,
        "span_id": gen.span_id,
        "answer": gen.answer,
        "is_generation": not own,
        "context": [],
        "labels": [],
        "error": error,
    }


def _grouped(rows: Iterable[tuple[Any, ...]]) -> dict[str, list[tuple[Any, ...]]]:
    out: dict[str, list[tuple[Any, ...]]] = {}
    for row in rows:
        out.setdefault(row[0], []).append(row)
    return out


def read(con: duckdb.DuckDBPyConnection, stats: Stats) -> None:
    """Reads the generations and documents of t_traces' traces whose context no span traced
    (prompt_generations.sql, prompt_documents.sql, span_parents.sql); writes t_prompt_context, the
    context read off each one's prompt, and applies it to t_traces (apply_prompt_context.sql)."""
    calls = _grouped(con.execute(sql("prompt_generations")).fetchall())
    out: list[dict[str, Any]] = []
    if calls:
        docs = _grouped(con.execute(sql("prompt_documents")).fetchall())
        several = [t for t, rows in calls.items() if len(rows) > 1]
        parents: dict[str, dict[str, str | None]] = {}
        if several:
            for trace_id, span_id, parent in con.execute(sql("span_parents"), {"traces": several}).fetchall():
                parents.setdefault(trace_id, {})[span_id] = parent
        for trace_id, rows in calls.items():
            row = _read_trace(
                trace_id,
                [_Call(r[1], r[2], bool(r[3]), int(r[4] or 0), r[5] or "", r[6], bool(r[7])) for r in rows],
                [Doc(r[3] or "", r[4] or "") for r in docs.get(trace_id, [])],
                parents.get(trace_id, {}),
            )
            if row["error"] == NO_PROMPT:
                stats.no_prompt += 1
            out.append(row)
    steps.fill(con, "t_prompt_context", records=out)
    if out:  # nothing read off a prompt leaves every trace as it is: t_traces is not copied to itself
        steps.run(con, "apply_prompt_context")


__all__ = ["NO_CONTEXT_SEEN", "NO_PROMPT", "REDACTED", "context_from_prompt", "read"]
