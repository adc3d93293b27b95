"""Edit a stage's return value in the app's own shape, for the perturbation harness.

A perturbation must hand the next stage a value it can use as it would the
real one: a list stays a list of the same kind of chunk, a wrapper object
keeps its type and other fields, a LangChain ``Document`` stays a
``Document``. Fields are written where the instrumentation reads them (a top
level field, else the ``metadata`` mapping), and every rebuilt chunk is read
back through the instrumentation's own adapter: a shape we could not edit
faithfully raises :class:`CannotEdit` (the cell then says so) instead of
handing on something subtly different.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from citeline.instrumentation.chunks import ChunkRecord, to_record

#: where a stage wraps its chunk list (the instrumentation reads the same names, in this order)
CONTAINERS = ("chunks", "documents", "source_nodes", "nodes", "context", "hits")
_ROW_CONTAINERS = ("resolved", "citations", "sources", "links", "items")
#: the names each chunk field may go by, canonical first (as the instrumentation reads them)
_ALIASES = {
    "chunk_id": ("chunk_id", "id", "node_id", "id_"),
    "doc_id": ("doc_id", "document_id", "ref_doc_id", "source_id"),
    "version": ("version",),
    "text": ("text", "page_content", "content"),
    "uri": ("uri", "url", "source"),
    "title": ("title",),
    "label": ("label",),
    "score": ("score",),
}


class CannotEdit(Exception):
    """This value's shape cannot be changed faithfully; the message says why."""


def set_attr(obj: Any, name: str, value: Any) -> Any:
    """A copy of ``obj`` with attribute ``name`` set (dataclass, pydantic model, plain object)."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        names = {f.name for f in dataclasses.fields(obj) if f.init}
        if name in names:
            return dataclasses.replace(obj, **{name: value})
    model_copy = getattr(obj, "model_copy", None)
    if callable(model_copy):
        return model_copy(update={name: value})
    twin = copy.copy(obj)
    try:
        setattr(twin, name, value)
    except (AttributeError, TypeError) as err:
        raise CannotEdit(f"cannot set {name!r} on a {type(obj).__name__}") from err
    return twin


def _get(obj: Any, name: str) -> Any:
    return obj.get(name) if isinstance(obj, Mapping) else getattr(obj, name, None)


def _is_pair(value: Any) -> bool:
    return isinstance(value, tuple) and len(value) == 2 and isinstance(value[1], int | float)


def items_of(value: Any) -> list[Any] | None:
    """The chunk list a stage returned (bare, or in a wrapper under a known name); None for a prompt."""
    if isinstance(value, list | tuple) and not _is_pair(value):
        return list(value)
    if isinstance(value, str) or value is None:
        return None
    for name in CONTAINERS:
        inner = _get(value, name)
        if isinstance(inner, list | tuple):
            return list(inner)
    return None


def with_items(value: Any, items: list[Any]) -> Any:
    """``value`` holding ``items`` instead of its chunks, in the same shape."""
    if isinstance(value, tuple) and not _is_pair(value):
        return tuple(items)
    if isinstance(value, list):
        return type(value)(items) if type(value) is not list else items
    for name in CONTAINERS:
        inner = _get(value, name)
        if isinstance(inner, list | tuple):
            new = tuple(items) if isinstance(inner, tuple) else items
            if isinstance(value, Mapping):
                return {**value, name: new}
            return set_attr(value, name, new)
    raise CannotEdit(f"found no chunk list in a {type(value).__name__}")


def record(item: Any) -> ChunkRecord:
    """The identity the instrumentation reads off one chunk."""
    return to_record(item)


def _set_field(item: Any, field: str, value: Any) -> Any:
    names = _ALIASES[field]
    if isinstance(item, tuple) and _is_pair(item):
        return (_set_field(item[0], field, value), item[1])
    meta = _get(item, "metadata")
    meta = meta if isinstance(meta, Mapping) else None
    if isinstance(item, Mapping):
        return _set_in_mapping(item, meta, names, value)
    return _set_on_object(item, meta, field, names, value)


def _first_set(holder: Mapping[str, Any], names: Sequence[str]) -> str | None:
    """The first of ``names`` that ``holder`` has a value under."""
    return next((name for name in names if holder.get(name) not in (None, "")), None)


def _set_in_mapping(item: Mapping[str, Any], meta: Mapping[str, Any] | None, names: Sequence[str], value: Any) -> Any:
    """A dict chunk: the name it already uses, at the top or in its metadata; else the first name, at the top."""
    if (name := _first_set(item, names)) is not None:
        return {**item, name: value}
    if meta is not None and (name := _first_set(meta, names)) is not None:
        return {**item, "metadata": {**meta, name: value}}
    return {**item, names[0]: value}


def _set_on_object(item: Any, meta: Mapping[str, Any] | None, field: str, names: Sequence[str], value: Any) -> Any:
    """An object chunk: the attribute or metadata key it already uses; else a dataclass field, else metadata."""
    # LangChain Document: text is page_content, everything else lives in metadata
    if field == "text" and hasattr(item, "page_content"):
        return set_attr(item, "page_content", value)
    if meta is not None and not hasattr(item, "chunk_id") and (name := _first_set(meta, names)) is not None:
        return set_attr(item, "metadata", {**meta, name: value})
    for name in names:
        if getattr(item, name, None) not in (None, "") or (
            dataclasses.is_dataclass(item) and name in {f.name for f in dataclasses.fields(item)}
        ):
            return set_attr(item, name, value)
    if meta is not None:
        return set_attr(item, "metadata", {**meta, names[0]: value})
    return set_attr(item, names[0], value)


def with_chunk_fields(item: Any, **changes: Any) -> Any:
    """A copy of chunk ``item`` whose ``chunk_id``/``doc_id``/``version``/``text``/``uri``/``title``/``label``
    read as ``changes``; raises CannotEdit when the instrumentation would not read them back so."""
    new = item
    for field, value in changes.items():
        new = _set_field(new, field, value)
    try:
        got = record(new)
    except TypeError as err:
        raise CannotEdit(f"the edited {type(item).__name__} is no longer a chunk: {err}") from err
    for field, value in changes.items():
        if field in ("score",):
            continue
        read = getattr(got, field)
        if (read or "") != (value or ""):
            raise CannotEdit(f"set {field}={value!r} on a {type(item).__name__}, but it reads back as {read!r}")
    return new


def rows_of(value: Any, containers: Sequence[str] = _ROW_CONTAINERS) -> list[Any] | None:
    """The rows a resolution or render step returned (bare list, or under a known name)."""
    if isinstance(value, list | tuple):
        return list(value)
    for name in containers:
        inner = _get(value, name)
        if isinstance(inner, list | tuple):
            return list(inner)
    return None


def with_rows(value: Any, rows: list[Any], containers: Sequence[str] = _ROW_CONTAINERS) -> Any:
    if isinstance(value, list | tuple):
        return type(value)(rows)
    for name in containers:
        inner = _get(value, name)
        if isinstance(inner, list | tuple):
            return {**value, name: rows} if isinstance(value, Mapping) else set_attr(value, name, rows)
    raise CannotEdit(f"found no rows in a {type(value).__name__}")


def row_get(row: Any, name: str) -> str:
    value = _get(row, name)
    return "" if value is None else str(value)


def with_row_fields(row: Any, **changes: str) -> Any:
    """A copy of a resolution/render row with these fields (only those it has, plus ``uri``)."""
    new = row
    for name, value in changes.items():
        if name != "uri" and _get(row, name) is None:
            continue
        new = {**new, name: value} if isinstance(new, Mapping) else set_attr(new, name, value)
    return new


# --- answers -------------------------------------------------------------------------------


def answer_text(value: Any) -> str | None:
    """The prose of an answer (a string, or ``text``/``content`` of an object or dict)."""
    if isinstance(value, str):
        return value
    for name in ("text", "content"):
        inner = _get(value, name)
        if isinstance(inner, str):
            return inner
    return None


def with_answer_text(value: Any, text: str) -> Any:
    if isinstance(value, str):
        return text
    for name in ("text", "content"):
        if isinstance(_get(value, name), str):
            return {**value, name: text} if isinstance(value, Mapping) else set_attr(value, name, text)
    raise CannotEdit(f"found no answer text in a {type(value).__name__}")


def claims_of(value: Any) -> list[Any] | None:
    """A structured answer's claims, or None for prose."""
    if isinstance(value, str):
        return None
    claims = _get(value, "claims")
    return list(claims) if isinstance(claims, list | tuple) else None


def with_claims(value: Any, claims: list[Any]) -> Any:
    return {**value, "claims": claims} if isinstance(value, Mapping) else set_attr(value, "claims", claims)


def claim_evidence(claim: Any) -> list[Any]:
    evidence = _get(claim, "evidence")
    return list(evidence) if isinstance(evidence, list | tuple) else []


def with_claim(claim: Any, **changes: Any) -> Any:
    """A copy of one structured claim (or evidence item) with these fields."""
    new = claim
    for name, value in changes.items():
        new = {**new, name: value} if isinstance(new, Mapping) else set_attr(new, name, value)
    return new
