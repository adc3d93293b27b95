"""What each stage records: its inputs when it starts, its outputs when it ends.

Each ``*_attributes`` function turns a stage's return value into one
attribute dict: OpenInference keys first, the ``citeline.*`` schema last, and
OpenInference documents capped so the span never exceeds its attribute
limit (the SDK evicts the *oldest* attributes when over). The citeline
arrays carry every chunk whatever the count.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from . import schema as K
from .chunks import Columns, chunk_items, content_hash, is_chunk_shaped
from .otlp_json import dumps
from .prompt import chunks_in_arguments, chunks_in_prompt, prompt_text

#: attribute slots kept free for the host's own or auto-instrumentation attributes
_RESERVED_SLOTS = 8
_DISPLAY_LIMIT = 8000


@dataclass(slots=True)
class RequestState:
    """Per-request memory shared by the stages of one request: the label map in force."""

    retrieved: Columns | None = None
    """The last retrieval's chunks: what a context step that returns only a prompt chose from."""
    labels: list[str] = field(default_factory=list)
    chunk_ids: list[str] = field(default_factory=list)
    doc_ids: list[str] = field(default_factory=list)
    versions: list[str] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    """The context's chunk texts (content on only): what the model was given, when no prompt is passed."""


current_request: ContextVar[RequestState | None] = ContextVar("citeline_request", default=None)


def request_state() -> RequestState:
    """The current request's state, created on first use outside a request."""
    state = current_request.get()
    if state is None:
        state = RequestState()
        current_request.set(state)
    return state


def text_of(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    for name in ("text", "prompt", "content"):
        inner = value.get(name) if isinstance(value, Mapping) else getattr(value, name, None)
        if isinstance(inner, str):
            return inner
    return None


def _clip(text: str) -> str:
    return text if len(text) <= _DISPLAY_LIMIT else text[:_DISPLAY_LIMIT] + "…"


def first_text_arg(args: Sequence[Any], kwargs: Mapping[str, Any], names: Sequence[str]) -> str | None:
    """The stage's query-like input: a named keyword, else the first string argument."""
    for name in names:
        value = kwargs.get(name)
        if isinstance(value, str):
            return value
    for value in args:
        if isinstance(value, str):
            return value
    return None


def _chunk_arrays(cols: Columns, *, content: bool) -> dict[str, Any]:
    attrs: dict[str, Any] = {
        K.CL_CHUNK_COUNT: len(cols),
        K.CL_CHUNK_DOC_ID: cols.doc_id,
        K.CL_CHUNK_ID: cols.chunk_id,
        K.CL_CHUNK_VERSION: cols.version,
        K.CL_CHUNK_HASH: cols.content_hash,
        K.CL_CHUNK_URI: cols.uri,
        K.CL_CHUNK_TITLE: cols.title,
    }
    scores = cols.score
    if scores and not any(math.isnan(s) for s in scores):
        attrs[K.CL_CHUNK_SCORE] = scores
    if content:
        attrs[K.CL_CHUNK_TEXT] = cols.text
    if cols.derived_ids:
        attrs[K.CL_DERIVED_IDS] = cols.derived_ids
    if cols.acl is not None:  # who may see each chunk: group ids, so a leak is checked without a gold corpus
        attrs[K.CL_CHUNK_ACL_GROUP] = [g for a in cols.acl for g in a or ()]
        attrs[K.CL_CHUNK_ACL_COUNT] = [-1 if a is None else len(a) for a in cols.acl]
    return attrs


def _documents(prefix: str, cols: Columns, budget: int, *, content: bool) -> tuple[dict[str, Any], int]:
    """OpenInference flattened documents, as many as fit in ``budget`` attributes."""
    per_doc = 3 + (1 if content else 0)
    fit = max(0, min(len(cols), budget // per_doc))
    attrs: dict[str, Any] = {}
    for i in range(fit):
        base = f"{prefix}.{i}."
        score = cols.score[i]
        attrs[base + K.OI_DOC_ID] = cols.chunk_id[i]
        if not math.isnan(score):  # unknown is absent: Phoenix would show "score 0"
            attrs[base + K.OI_DOC_SCORE] = score
        meta = {
            name: value
            for name, value in (
                ("doc_id", cols.doc_id[i]),
                ("version", cols.version[i]),
                ("content_hash", cols.content_hash[i]),
                ("uri", cols.uri[i]),
                ("title", cols.title[i]),
            )
            if value
        }
        if meta:
            attrs[base + K.OI_DOC_METADATA] = dumps(meta).decode()
        if content and cols.text[i]:
            attrs[base + K.OI_DOC_CONTENT] = cols.text[i]
    return attrs, len(cols) - fit


def _with_documents(
    head: dict[str, Any],
    prefix: str,
    chunks: Columns,
    tail: dict[str, Any],
    limit: int,
    content: bool,
) -> dict[str, Any]:
    """head + as many documents as fit + tail (the citeline schema, written last)."""
    budget = limit - len(head) - len(tail) - 1 - _RESERVED_SLOTS
    docs, omitted = _documents(prefix, chunks, budget, content=content)
    out = {**head, **docs, **tail}
    if omitted:
        out[K.CL_DROPPED_DOCS] = omitted
    return out


def _base(stage: str, kind: str) -> dict[str, Any]:
    return {K.OI_SPAN_KIND: kind, K.CL_SCHEMA: K.SCHEMA_VERSION, K.CL_STAGE: stage}


# --- start-of-stage inputs -----------------------------------------------------------


def start_attributes(stage: str, args: Sequence[Any], kwargs: Mapping[str, Any], content: bool) -> dict[str, Any]:
    """Attributes known when the stage starts (its kind and input)."""
    kind = K.STAGE_KIND[stage].value
    attrs = _base(stage, kind)
    text: str | None = None
    if stage in ("retrieval", "context"):
        # the first string argument: a query, but a context step may be handed the context text itself
        text = first_text_arg(args, kwargs, ("query", "question", "q"))
    elif stage == "generation":
        text = generation_prompt(args, kwargs)
        if text is None and content:  # no prompt handed in (chunks, an id, ...): the labelled context
            text = labelled_context(request_state())
    if text is None:
        return attrs
    if not content:  # a hash and a length stand for it: no text of anyone's in the span
        attrs[K.CL_INPUT_HASH] = content_hash(text)
        attrs[K.CL_INPUT_LENGTH] = len(text)
        return attrs
    attrs[K.OI_INPUT_VALUE] = _clip(text)
    attrs[K.OI_INPUT_MIME] = K.MimeType.TEXT.value
    if stage == "context":
        attrs[K.OI_RERANKER_QUERY] = _clip(text)
    return attrs


def generation_prompt(args: Sequence[Any], kwargs: Mapping[str, Any]) -> str | None:
    """What the model was given: the first argument that is a prompt (a string, an object holding one,
    chat messages). A method's ``self`` or a chunk holds none and is passed over."""
    for value in (*args, *kwargs.values()):
        if isinstance(value, list | tuple):
            text = prompt_text(value)
        elif is_chunk_shaped(value):
            continue
        else:
            text = text_of(value)
        if text is not None:
            return text
    return None


def labelled_context(state: RequestState) -> str | None:
    """The request's context as the model saw it, one ``[label] chunk_id: text`` line per chunk, or None."""
    if not state.labels:
        return None
    texts = state.texts or [""] * len(state.labels)
    return "\n".join(
        f"[{label}] {chunk}: {text}" if text else f"[{label}] {chunk}"
        for label, chunk, text in zip(state.labels, state.chunk_ids, texts, strict=False)
    )


# --- end-of-stage outputs --------------------------------------------------------------


def retrieval_attributes(chunks: Columns, limit: int, content: bool) -> dict[str, Any]:
    """Retrieved chunks: OpenInference documents + citeline arrays."""
    request_state().retrieved = chunks
    return _with_documents({}, K.OI_RETRIEVAL_DOCUMENTS, chunks, _chunk_arrays(chunks, content=content), limit, content)


class NothingToLookFor(Exception):
    """A context step returned a prompt and no chunks can be looked for in it."""


def context_from_prompt(
    prompt: str, args: Sequence[Any], kwargs: Mapping[str, Any], limit: int, content: bool
) -> dict[str, Any]:
    """A context step that returned only its prompt: which handed-in chunks the prompt holds.

    Candidates are the chunks in the step's arguments, else the request's last
    retrieval. Raises NothingToLookFor when there is nothing to look for (the
    span then records an adapter error instead of an empty context).
    """
    candidates, source = chunks_in_arguments(args, kwargs), K.ChunksFrom.ARGUMENTS.value
    if candidates is None:
        candidates, source = request_state().retrieved, K.ChunksFrom.RETRIEVAL.value
    if candidates is None:
        raise NothingToLookFor(
            "the context step returned a prompt, and no chunks were passed to it or retrieved "
            "earlier in this request; pass @context_assembly(to_chunks=...) to name them"
        )
    found = chunks_in_prompt(prompt, candidates)
    attrs = context_attributes(found, limit, content, prompt)
    attrs[K.CL_CONTEXT_FROM] = source
    attrs[K.CL_CONTEXT_CANDIDATES] = len(candidates)
    return attrs


def context_attributes(chunks: Columns, limit: int, content: bool, prompt: str | None) -> dict[str, Any]:
    """Chunks actually sent to the model with their labels; updates the request's label map."""
    labels = [label if label is not None else str(i + 1) for i, label in enumerate(chunks.label)]
    state = request_state()
    state.labels = labels
    state.chunk_ids = chunks.chunk_id
    state.doc_ids = chunks.doc_id
    state.versions = chunks.version
    state.texts = chunks.text if content else []
    tail = _chunk_arrays(chunks, content=content)
    tail[K.CL_CHUNK_LABEL] = labels
    head: dict[str, Any] = {}
    if content and prompt is not None:
        head[K.OI_OUTPUT_VALUE] = _clip(prompt)
        head[K.OI_OUTPUT_MIME] = K.MimeType.TEXT.value
    return _with_documents(head, K.OI_RERANKER_OUTPUT_DOCUMENTS, chunks, tail, limit, content)


def _get(obj: Any, name: str, default: Any = None) -> Any:
    if isinstance(obj, Mapping):
        return obj.get(name, default)
    return getattr(obj, name, default)


def _first(obj: Any, names: Sequence[str]) -> Any:
    for name in names:
        value = _get(obj, name)
        if value is not None:
            return value
    return None


def generation_attributes(answer: Any, content: bool = True) -> dict[str, Any]:
    """The raw answer, its claims when structured, and the label map in force (with content off,
    each quote a content hash instead of its words)."""
    attrs: dict[str, Any] = {}
    claims = _get(answer, "claims") if not isinstance(answer, str) else None
    if isinstance(claims, Sequence) and not isinstance(claims, str):
        # the documented keys, and the seed articles' schema (answerText, claims[].evidence[].
        # sourceId / chunkId / quotedText)
        text = _first(answer, ("text", "answerText")) or ""
        attrs[K.CL_ANSWER_FORMAT] = K.AnswerFormat.STRUCTURED.value
        claim_text: list[str] = []
        ev_claim: list[int] = []
        ev_chunk: list[str] = []
        ev_quote: list[str] = []
        for i, claim in enumerate(claims):
            claim_text.append(str(_first(claim, ("text", "claim")) or ""))
            for ev in _get(claim, "evidence") or ():
                ev_claim.append(i)
                ev_chunk.append(str(_first(ev, ("chunk_id", "chunkId", "sourceId")) or ""))
                ev_quote.append(str(_first(ev, ("quote", "quotedText")) or ""))
        attrs[K.CL_CLAIM_TEXT] = claim_text
        attrs[K.CL_EVIDENCE_CLAIM] = ev_claim
        attrs[K.CL_EVIDENCE_CHUNK] = ev_chunk
        if content:
            attrs[K.CL_EVIDENCE_QUOTE] = ev_quote
        else:
            attrs[K.CL_EVIDENCE_QUOTE] = [""] * len(ev_quote)
            attrs[K.CL_EVIDENCE_QUOTE_HASH] = [content_hash(q) if q else "" for q in ev_quote]
        abstained = _get(answer, "abstained")
        if isinstance(abstained, bool):
            attrs[K.CL_ABSTAINED] = abstained
    else:
        text = text_of(answer) if answer is not None else ""
        if text is None:
            raise TypeError(
                f"cannot read an answer from {type(answer).__name__}; return a string or "
                "a structured answer with 'text' and 'claims'"
            )
        attrs[K.CL_ANSWER_FORMAT] = K.AnswerFormat.PROSE.value
        abstained = _get(answer, "abstained") if not isinstance(answer, str) else None
        if isinstance(abstained, bool):
            attrs[K.CL_ABSTAINED] = abstained
    text = str(text)
    state = current_request.get()
    head = {K.OI_OUTPUT_VALUE: _clip(text), K.OI_OUTPUT_MIME: K.MimeType.TEXT.value}
    attrs[K.CL_ANSWER] = text
    if state is not None and state.labels:
        attrs[K.CL_LABEL_MAP_LABEL] = list(state.labels)
        attrs[K.CL_LABEL_MAP_CHUNK] = list(state.chunk_ids)
        attrs[K.CL_LABEL_MAP_DOC] = list(state.doc_ids)
        attrs[K.CL_LABEL_MAP_VERSION] = list(state.versions)
    return {**head, **attrs}


_RES_FIELDS = (
    ("marker", K.CL_RES_MARKER),
    ("doc_id", K.CL_RES_DOC),
    ("chunk_id", K.CL_RES_CHUNK),
    ("version", K.CL_RES_VERSION),
    ("uri", K.CL_RES_URI),
)
_REN_FIELDS = (
    ("label", K.CL_REN_LABEL),
    ("uri", K.CL_REN_URI),
    ("title", K.CL_REN_TITLE),
    ("doc_id", K.CL_REN_DOC),
    ("chunk_id", K.CL_REN_CHUNK),
    ("version", K.CL_REN_VERSION),
)


def _rows_attributes(value: Any, fields: Sequence[tuple[str, str]], containers: Sequence[str]) -> dict[str, Any]:
    items: Any = None
    for name in containers:
        inner = _get(value, name) if not isinstance(value, list | tuple) else None
        if isinstance(inner, list | tuple):
            items = inner
            break
    if items is None:
        items = chunk_items(value)
    cols: dict[str, list[str]] = {key: [] for _, key in fields}
    for item in items:
        for name, key in fields:
            v = _get(item, name)
            if v is None and name == "marker":
                v = _get(item, "label")
            cols[key].append("" if v is None else str(v))
    out: dict[str, Any] = dict(cols)
    out[K.OI_OUTPUT_VALUE] = dumps([{n: cols[k][i] for n, k in fields} for i in range(len(items))]).decode()
    out[K.OI_OUTPUT_MIME] = K.MimeType.JSON.value
    return out


def resolution_attributes(value: Any) -> dict[str, Any]:
    """Marker -> doc/chunk/version/uri as the app resolved it."""
    return _rows_attributes(value, _RES_FIELDS, ("resolved", "citations", "items"))


def render_attributes(value: Any, content: bool = True) -> dict[str, Any]:
    """What the user sees: label -> target uri, title and ids where known, and the preview text shown
    with each link (only with content on: it is a chunk's text)."""
    fields = (*_REN_FIELDS, ("preview", K.CL_REN_PREVIEW)) if content else _REN_FIELDS
    return _rows_attributes(value, fields, ("citations", "sources", "links", "items"))
