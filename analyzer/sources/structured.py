"""Structured answers wherever they are recorded: JSON on a generation span or an LLM span's output.

An app that asks its model for JSON (``response_format``, a tool or function call) records the
JSON text as the answer. Read as prose it is one long claim: right answers come out
``grounding``. Here each distinct JSON answer is read as the claims and evidence it states, in
any of the shapes below, and the trace's generation becomes a structured one (claims with the
chunk ids they cite), exactly as if ``@generation`` had returned the object.

Accepted keys (case-sensitive; the first present wins; ``answer_keys`` adds a user's own name
for any role, before these):

====================  ==========================================================================
role                  keys
====================  ==========================================================================
``text``              ``answerText``, ``answer_text``, ``answer``, ``text``, ``response``
``claims``            ``claims``, ``statements``, ``sentences``
``claim_text``        ``text``, ``claim``, ``statement``, ``sentence``
``evidence``          ``evidence``, ``citations``, ``sources``, ``references``, ``support``
``chunk_id``          ``chunkId``, ``chunk_id``, ``sourceId``, ``source_id``, ``id``, ``docId``,
                      ``doc_id``, ``label``, ``source``
``quote``             ``quotedText``, ``quoted_text``, ``quote``, ``excerpt``, ``snippet``
``abstained``         ``abstained``, ``abstain``, ``cannot_answer``
====================  ==========================================================================

An evidence item is an object with a ``chunk_id`` key, or the id itself (a string or number).
An id is a chunk id or a label the prompt gave (``1``, ``[1]``, ``S1``): labels go through the
label map in force. An object with answer text and no claims is prose inside JSON (its markers
are read as usual). JSON that matches none of this is ``not_evaluable`` at generation, its
reason naming the keys it saw: it is never split as prose.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

KEYS: dict[str, tuple[str, ...]] = {
    "text": ("answerText", "answer_text", "answer", "text", "response"),
    "claims": ("claims", "statements", "sentences"),
    "claim_text": ("text", "claim", "statement", "sentence"),
    "evidence": ("evidence", "citations", "sources", "references", "support"),
    "chunk_id": ("chunkId", "chunk_id", "sourceId", "source_id", "id", "docId", "doc_id", "label", "source"),
    "quote": ("quotedText", "quoted_text", "quote", "excerpt", "snippet"),
    "abstained": ("abstained", "abstain", "cannot_answer"),
}
ROLES = tuple(KEYS)


class AnswerKeysError(ValueError):
    """An answer_keys mapping names a role citeline does not read."""


def keys_for(answer_keys: Mapping[str, str] | None) -> dict[str, tuple[str, ...]]:
    """The accepted keys with a user's names first; raises AnswerKeysError on an unknown role."""
    out = dict(KEYS)
    for role, key in (answer_keys or {}).items():
        if role not in KEYS:
            raise AnswerKeysError(
                f"answer key role {role!r} is not one citeline reads; roles: {', '.join(ROLES)} "
                "(e.g. claims=statements)"
            )
        out[role] = (key, *(k for k in KEYS[role] if k != key))
    return out


@dataclass
class Read:
    """One JSON answer as claims (or prose text, or the reason it cannot be read)."""

    prose: str | None = None  # prose inside JSON: split as usual
    claims: list[str] = field(default_factory=list)
    evidence_claim: list[int] = field(default_factory=list)
    evidence_ref: list[str] = field(default_factory=list)
    evidence_quote: list[str] = field(default_factory=list)
    abstained: bool | None = None
    error: str | None = None


def looks_like_json(text: str) -> bool:
    s = text.lstrip()
    return s.startswith("{") or (s.startswith("[") and s.rstrip().endswith("]") and s[1:2] in ("{", '"', " ", "\n"))


def _first(obj: Mapping[str, Any], names: Sequence[str]) -> Any:
    for n in names:
        if n in obj:
            return obj[n]
    return None


def _ref(ev: Any, keys: dict[str, tuple[str, ...]]) -> tuple[str, str] | None:
    """(id, quote) of one evidence item, or None when it names nothing."""
    if isinstance(ev, str | int) and not isinstance(ev, bool):
        return str(ev), ""
    if isinstance(ev, Mapping):
        ref = _first(ev, keys["chunk_id"])
        if isinstance(ref, str | int) and not isinstance(ref, bool) and str(ref):
            quote = _first(ev, keys["quote"])
            return str(ref), quote if isinstance(quote, str) else ""
    return None


def read(answer: str, keys: dict[str, tuple[str, ...]]) -> Read | None:
    """``answer`` read as a structured answer; None when it is not JSON at all (it is prose)."""
    try:
        doc = json.loads(answer)
    except (ValueError, RecursionError):
        return None
    if isinstance(doc, list):  # a bare list of claims
        doc = {keys["claims"][0]: doc}
    if not isinstance(doc, dict):
        return None  # a JSON string or number: prose that happens to parse
    out = Read()
    flag = _first(doc, keys["abstained"])
    if isinstance(flag, bool):
        out.abstained = flag
    claims = _first(doc, keys["claims"])
    text = _first(doc, keys["text"])
    if isinstance(claims, list):
        for i, c in enumerate(claims):
            if isinstance(c, str):
                out.claims.append(c)
                continue
            if not isinstance(c, Mapping) or not isinstance(ct := _first(c, keys["claim_text"]), str):
                shown = ", ".join(map(repr, c)) if isinstance(c, Mapping) else type(c).__name__
                return _unknown(doc, f"claim {i} has no text ({shown})")
            out.claims.append(ct)
            evidence = _first(c, keys["evidence"])
            for ev in evidence if isinstance(evidence, list) else [evidence] if evidence is not None else []:
                ref = _ref(ev, keys)
                if ref is not None:
                    out.evidence_claim.append(i)
                    out.evidence_ref.append(ref[0])
                    out.evidence_quote.append(ref[1])
        return out
    if isinstance(text, str):
        out.prose = text
        return out
    if out.abstained:
        return out
    return _unknown(doc, None)


def _unknown(doc: Mapping[str, Any], detail: str | None) -> Read:
    seen = ", ".join(sorted(map(str, doc))[:12]) or "none"
    why = f"; {detail}" if detail else ""
    return Read(
        error=(
            f"not readable: the answer is JSON with keys {seen}, which match no answer shape citeline reads{why}: "
            "map your keys with --answer-key ROLE=KEY (roles: " + ", ".join(ROLES) + "; docs/analyzer.md)"
        )
    )


def normalise_ref(ref: str) -> str:
    """A label as a model may write it back: '[1]' -> '1', 'Source 2' -> '2', '【3】' -> '3'."""
    r = ref.strip().strip("[]【】()").strip()
    low = r.lower()
    for prefix in ("source ", "document ", "doc ", "passage ", "chunk "):
        if low.startswith(prefix):
            return r[len(prefix) :].strip()
    return r


def tables(answers: Sequence[str], keys: dict[str, tuple[str, ...]]) -> dict[str, list[Any]]:
    """The columns of t_json_answers for the distinct ``answers`` (those that parse as JSON)."""
    cols: dict[str, list[Any]] = {
        k: [] for k in ("answer", "prose", "claims", "ev_claim", "refs", "norm_refs", "quotes", "abstained", "error")
    }
    for answer in answers:
        got = read(answer, keys)
        if got is None:
            continue
        cols["answer"].append(answer)
        cols["prose"].append(got.prose)
        cols["claims"].append(got.claims)
        cols["ev_claim"].append(got.evidence_claim)
        cols["refs"].append(got.evidence_ref)
        cols["norm_refs"].append([normalise_ref(r) for r in got.evidence_ref])
        cols["quotes"].append(got.evidence_quote)
        cols["abstained"].append(got.abstained)
        cols["error"].append(got.error)
    return cols


__all__ = ["KEYS", "ROLES", "AnswerKeysError", "Read", "keys_for", "looks_like_json", "normalise_ref", "read", "tables"]
