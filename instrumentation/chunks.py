"""Read chunk identity out of whatever shape the host app returns.

Recognised without glue: citeline's own :class:`Chunk`, mappings, objects
with ``doc_id``/``chunk_id``/... attributes, LangChain ``Document`` (ids in
``metadata``), LlamaIndex ``NodeWithScore`` and ``(document, score)`` pairs.
Frameworks are recognised by shape, so none of them is imported.

A supported, public module of ``citeline.instrumentation``: it holds the chunk identity rules of
``docs/trace-schema.md`` (derived ids, :func:`content_hash` over :func:`normalised` text), which the
analyzer applies to the gold corpus and to OpenInference documents so both sides hash alike.
"""

from __future__ import annotations

import hashlib
import math
import unicodedata
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

#: attribute / key names that may hold a list of chunks inside a wrapper object
_CONTAINER_FIELDS = ("chunks", "documents", "source_nodes", "nodes", "context", "hits")


def normalised(text: str) -> str:
    """NFKC, whitespace runs as one space, ends stripped: the form content hashes are taken of."""
    if not unicodedata.is_normalized("NFKC", text):
        text = unicodedata.normalize("NFKC", text)
    return " ".join(text.split())


def content_hash(text: str) -> str:
    """Hash of a chunk's text that survives cosmetic whitespace changes.

    sha256 over NFKC-normalised text with whitespace runs collapsed to one
    space and the ends stripped; the first 16 hex digits. The analyzer
    computes the same over the gold corpus to spot silent content drift.
    """
    norm = normalised(text)
    # surrogatepass: a lone surrogate (bad upstream decode) still hashes; valid text is unchanged
    return hashlib.sha256(norm.encode("utf-8", "surrogatepass")).hexdigest()[:16]


@dataclass(slots=True)
class Chunk:
    """A retrievable passage with stable identity; use it or bring your own shape."""

    doc_id: str
    chunk_id: str
    version: str = ""
    text: str = ""
    score: float | None = None
    uri: str = ""
    title: str = ""
    label: str | None = None
    acl: list[str] | None = field(default=None)


class ChunkRecord(NamedTuple):
    """The normalised identity citeline records for one chunk."""

    doc_id: str
    chunk_id: str
    version: str
    content_hash: str
    score: float
    uri: str
    title: str
    text: str
    label: str | None
    derived_id: bool = False
    """True when the app gave no chunk id and citeline derived one (see derived_chunk_id)."""
    acl: tuple[str, ...] | None = None
    """The groups allowed to see the chunk, when the app's chunk says (``acl``, ``groups``,
    ``allowed_groups``); None when it does not."""


def _s(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else str(value)


def _score(value: Any) -> float:
    if value is None or isinstance(value, bool):
        return math.nan
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


#: metadata keys that name where an id-less chunk came from (loaders, splitters)
_SOURCE_KEYS = ("source", "file_path", "file_name", "filename", "url", "uri")
_START_KEYS = ("start_index", "start_char_idx", "split_idx_start")
_PAGE_KEYS = ("page", "page_number", "page_label")


def derived_chunk_id(source: str, start: Any, page: Any, digest: str) -> str:
    """A stable id for a chunk the app gave none: where it came from, else what it says.

    ``source#start=N`` when the splitter recorded an offset (unique within a
    source); otherwise the content hash is part of the id: ``source#page=P#sha=H``,
    ``source#sha=H``, or ``sha=H`` for a chunk with no source either.
    """
    if start not in (None, ""):
        return f"{source}#start={start}"
    parts = [source] if source else []
    if page not in (None, ""):
        parts.append(f"page={page}")
    if digest:
        parts.append(f"sha={digest}")
    return "#".join(parts)


def _from_fields(get: Any, text: str, meta: Mapping[str, Any] | None = None) -> ChunkRecord:
    """Build a record from a getter over fields, with an optional metadata fallback.

    Ids: an explicit chunk id wins; a chunk with a document id and nothing
    that locates it inside the document is that whole document (chunk id =
    doc id); anything else gets a derived id (:func:`derived_chunk_id`) and
    ``derived_id=True``.
    """

    def pick(*names: str) -> Any:
        for name in names:
            value = get(name)
            if value not in (None, ""):
                return value
            if meta is not None:
                value = meta.get(name)
                if value not in (None, ""):
                    return value
        return None

    doc_id = _s(pick("doc_id", "document_id", "ref_doc_id", "source_id"))
    chunk_id = _s(pick("chunk_id", "id", "node_id", "id_"))
    explicit_hash = _s(pick("content_hash"))
    digest = content_hash(text) if text else explicit_hash
    derived = False
    if not chunk_id:
        start, page = pick(*_START_KEYS), pick(*_PAGE_KEYS)
        if doc_id and start is None and page is None:
            chunk_id = doc_id
        else:
            chunk_id = derived_chunk_id(doc_id or _s(pick(*_SOURCE_KEYS)), start, page, digest)
            derived = True
    if not doc_id:
        doc_id = _s(pick(*_SOURCE_KEYS))
    label = pick("label")
    return ChunkRecord(
        acl=_acl(pick("acl", "allowed_groups", "groups")),
        doc_id=doc_id,
        chunk_id=chunk_id,
        version=_s(pick("version")),
        content_hash=digest,
        score=_score(pick("score")),
        uri=_s(pick("uri", "url", "source")),
        title=_s(pick("title")),
        text=text,
        label=None if label is None else _s(label),
        derived_id=derived,
    )


def to_record(obj: Any) -> ChunkRecord:  # noqa: PLR0911 - one return per chunk shape it accepts
    """Normalise one chunk-like object; raises TypeError for shapes we cannot read."""
    if isinstance(obj, ChunkRecord):
        return obj
    if isinstance(obj, Chunk):
        if not obj.chunk_id or not obj.doc_id:
            fields: dict[str, Any] = {
                "doc_id": obj.doc_id,
                "chunk_id": obj.chunk_id,
                "version": obj.version,
                "score": obj.score,
            }
            fields |= {"uri": obj.uri, "title": obj.title, "label": obj.label, "acl": obj.acl}
            return _from_fields(fields.get, obj.text)
        return ChunkRecord(
            doc_id=obj.doc_id,
            chunk_id=obj.chunk_id,
            version=obj.version,
            content_hash=content_hash(obj.text) if obj.text else "",
            score=_score(obj.score),
            uri=obj.uri,
            title=obj.title,
            text=obj.text,
            label=obj.label,
            acl=_acl(obj.acl),
        )
    if isinstance(obj, dict):
        return _from_dict(obj)
    if isinstance(obj, Mapping):
        meta = obj.get("metadata")
        text = _s(obj.get("text") or obj.get("page_content") or obj.get("content"))
        return _from_fields(obj.get, text, meta if isinstance(meta, Mapping) else None)
    # (document, score) pairs, as LangChain's *_with_score searches return
    if isinstance(obj, tuple) and len(obj) == 2 and isinstance(obj[1], int | float):
        rec = to_record(obj[0])
        return rec._replace(score=float(obj[1]))
    # LlamaIndex NodeWithScore: .node (a BaseNode) + .score
    node = getattr(obj, "node", None)
    if node is not None and hasattr(obj, "score"):
        rec = _node_record(node)
        return rec._replace(score=_score(obj.score))
    if hasattr(obj, "get_content") and hasattr(obj, "node_id"):
        return _node_record(obj)
    # LangChain Document: .page_content + .metadata (+ .id, set by vector stores)
    if hasattr(obj, "page_content") and hasattr(obj, "metadata"):
        meta = obj.metadata if isinstance(obj.metadata, Mapping) else {}
        lc_id = getattr(obj, "id", None)
        return _from_fields(lambda name: lc_id if name == "id" else None, _s(obj.page_content), meta)
    # Haystack Document: .content + .meta + .id (a hash of content and meta) + .score
    if hasattr(obj, "meta") and hasattr(obj, "content") and hasattr(obj, "id"):
        meta = obj.meta if isinstance(obj.meta, Mapping) else {}
        hs_id, hs_score = getattr(obj, "id", None), getattr(obj, "score", None)
        return _from_fields(
            lambda name: hs_id if name == "id" else hs_score if name == "score" else None,
            _s(obj.content),
            meta,
        )
    if hasattr(obj, "chunk_id") or hasattr(obj, "doc_id"):
        text = _s(getattr(obj, "text", None) or getattr(obj, "content", None))
        meta = getattr(obj, "metadata", None)
        return _from_fields(lambda name: getattr(obj, name, None), text, meta if isinstance(meta, Mapping) else None)
    raise TypeError(
        f"cannot read a chunk from {type(obj).__name__}; give it doc_id/chunk_id "
        "fields or pass to_chunks= to the decorator"
    )


def is_chunk_shaped(item: Any) -> bool:
    """Whether :func:`to_record` reads ``item`` as a chunk (the shapes it knows; a chat message is not one)."""
    if isinstance(item, Chunk | ChunkRecord):
        return True
    if isinstance(item, Mapping):
        if "role" in item:
            return False
        return any(k in item for k in ("doc_id", "chunk_id", "page_content", "text"))
    if isinstance(item, tuple) and len(item) == 2 and isinstance(item[1], int | float):
        return is_chunk_shaped(item[0])
    return (
        hasattr(item, "page_content")  # LangChain Document
        or (hasattr(item, "node") and hasattr(item, "score"))  # LlamaIndex NodeWithScore
        or (hasattr(item, "get_content") and hasattr(item, "node_id"))  # LlamaIndex node
        or (hasattr(item, "meta") and hasattr(item, "content") and hasattr(item, "id"))  # Haystack
        or hasattr(item, "chunk_id")
        or hasattr(item, "doc_id")
    )


_EMPTY: dict[str, Any] = {}


def _from_dict(obj: dict[str, Any]) -> ChunkRecord:
    """The common case, kept lean: a plain dict with the canonical field names."""
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        meta = _EMPTY
    doc_id = obj.get("doc_id")
    chunk_id = obj.get("chunk_id")
    if doc_id in (None, "") or chunk_id in (None, "") or meta:
        # some field is elsewhere (metadata, aliases): take the general path
        text = _s(obj.get("text") or obj.get("page_content") or obj.get("content"))
        return _from_fields(obj.get, text, meta or None)
    text = obj.get("text") or ""
    if not isinstance(text, str):
        text = str(text)
    version = obj.get("version")
    score = obj.get("score")
    uri = obj.get("uri")
    title = obj.get("title")
    label = obj.get("label")
    return ChunkRecord(
        doc_id if isinstance(doc_id, str) else str(doc_id),
        chunk_id if isinstance(chunk_id, str) else str(chunk_id),
        "" if version is None else str(version),
        content_hash(text) if text else _s(obj.get("content_hash")),
        score if type(score) is float else _score(score),
        "" if uri is None else str(uri),
        "" if title is None else str(title),
        text,
        None if label is None else str(label),
        acl=_acl(obj.get("acl")),
    )


def _acl(value: Any) -> tuple[str, ...] | None:
    """An ACL as the app wrote it: a list (or one group) of group names; None when it gave none."""
    if value is None:
        return None
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list | tuple | set | frozenset):
        return tuple(str(g) for g in value)
    return None


def _node_record(node: Any) -> ChunkRecord:
    meta = getattr(node, "metadata", None)
    meta = meta if isinstance(meta, Mapping) else {}
    try:
        text = _s(node.get_content())
    except Exception:  # noqa: BLE001 - a node without content is still a chunk
        text = _s(getattr(node, "text", ""))
    node_id = getattr(node, "node_id", None) or getattr(node, "id_", None)
    ref_doc = getattr(node, "ref_doc_id", None)
    fields = {"id": node_id, "ref_doc_id": ref_doc, "start_char_idx": getattr(node, "start_char_idx", None)}
    return _from_fields(fields.get, text, meta)


def chunk_items(value: Any) -> list[Any]:
    """The list of chunk-like items inside a stage's return value."""
    if value is None:
        return []
    if isinstance(value, list | tuple) and not (
        isinstance(value, tuple) and len(value) == 2 and isinstance(value[1], int | float)
    ):
        return list(value)
    if isinstance(value, Mapping):
        for name in _CONTAINER_FIELDS:
            inner = value.get(name)
            if isinstance(inner, list | tuple):
                return list(inner)
        return [value]
    for name in _CONTAINER_FIELDS:
        inner = getattr(value, name, None)
        if isinstance(inner, list | tuple):
            return list(inner)
    if isinstance(value, Iterator):
        # one-shot: reading it here would steal it from the app
        raise TypeError("the stage returned an iterator; return a list or pass to_chunks=")
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        return list(value)
    return [value]


@dataclass(slots=True)
class Columns:
    """Chunks as parallel columns: the shape the span attributes are written in."""

    doc_id: list[str]
    chunk_id: list[str]
    version: list[str]
    content_hash: list[str]
    score: list[float]
    uri: list[str]
    title: list[str]
    text: list[str]
    label: list[str | None]
    derived_ids: int = 0
    """How many chunk ids citeline derived because the app gave none."""
    acl: list[tuple[str, ...] | None] | None = None
    """Each chunk's ACL when any chunk has one (None: no chunk said)."""

    def __len__(self) -> int:
        return len(self.chunk_id)


def _str_col(values: list[Any]) -> list[str]:
    return [v if type(v) is str else ("" if v is None else str(v)) for v in values]


def _plain_dicts(items: list[Any]) -> bool:
    for c in items:
        if type(c) is not dict or "metadata" in c or c.get("doc_id") in (None, "") or c.get("chunk_id") in (None, ""):
            return False
    return True


def to_columns(value: Any) -> Columns:
    """Every chunk in a stage's return value, column by column.

    Plain dicts with the canonical field names take a column-wise fast path
    (this is the hot loop of a 200-chunk retrieval); anything else goes
    through :func:`to_record` one item at a time.
    """
    items = chunk_items(value)
    if items and _plain_dicts(items):
        texts = _str_col([c.get("text") for c in items])
        return Columns(
            doc_id=_str_col([c["doc_id"] for c in items]),
            chunk_id=_str_col([c["chunk_id"] for c in items]),
            version=_str_col([c.get("version") for c in items]),
            content_hash=[
                content_hash(t) if t else _s(c.get("content_hash")) for t, c in zip(texts, items, strict=True)
            ],
            score=[_score(c.get("score")) for c in items],
            uri=_str_col([c.get("uri") for c in items]),
            title=_str_col([c.get("title") for c in items]),
            text=texts,
            label=[None if c.get("label") is None else str(c["label"]) for c in items],
            acl=[_acl(c.get("acl")) for c in items] if any("acl" in c for c in items) else None,
        )
    recs = [to_record(item) for item in items]
    return Columns(
        doc_id=[r.doc_id for r in recs],
        chunk_id=[r.chunk_id for r in recs],
        version=[r.version for r in recs],
        content_hash=[r.content_hash for r in recs],
        score=[r.score for r in recs],
        uri=[r.uri for r in recs],
        title=[r.title for r in recs],
        text=[r.text for r in recs],
        label=[r.label for r in recs],
        derived_ids=sum(r.derived_id for r in recs),
        acl=[r.acl for r in recs] if any(r.acl is not None for r in recs) else None,
    )
