"""The city's service desk: an openai-SDK RAG app with a hybrid retriever and chat-message context.

Wired from README.md ("A plain OpenAI-SDK app", "Add decorators") and docs/testing.md as a new user
would. A question goes through

- a **hybrid retriever**: a BM25 branch over every page and a "vector" branch over the pages
  embedded so far (the embedding job runs nightly, so pages added today are in the keyword index
  only), merged by reciprocal rank fusion and filtered by the asker's groups;
- a **context step** that returns the chat messages sent to ``client.chat.completions.create``
  (the numbered sources rendered into the system message);
- the **model** on a loopback OpenAI-compatible endpoint (``model_server``: a stand-in for a hosted
  model that reads the messages), asked for prose with ``[n]`` markers or, in JSON mode
  (``response_format={"type": "json_object"}``), for ``{"claims": [{"text", "evidence": [{"chunk_id",
  "quote"}]}]}``;
- a resolver (markers, or the JSON evidence, to pages) and the source links the page shows.

Variants (each a request function for ``citeline perturb``):

- :class:`CityDesk`: both retrieval branches go through one ``@retrieval`` function;
- :class:`PartialCityDesk`: ``@retrieval`` on the vector branch only (the keyword branch is not
  decorated: a real-world partial decoration);
- :class:`MisplacedCityDesk`: ``@context_assembly`` on the step that picks the sources, while the
  undecorated step that writes the messages puts them in score order and numbers them.

``answer_case`` / ``json_case`` start a loopback model server on first use (for ``citeline perturb
--app``); tests pass their own server's ``url``.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections import Counter
from typing import Any

from openai import OpenAI

from citeline.instrumentation import context_assembly, generation, render, request, resolution, retrieval

from .model_server import ModelServer
from .reading import stem, words

MODEL = "city-desk-model"
SYSTEM = (
    "You answer residents' questions for the city's service desk, only from the numbered sources below. "
    "Cite the source of each sentence as [n]. If the sources do not answer, say you can't find it."
)
SYSTEM_JSON = (
    "You answer residents' questions for the city's service desk, only from the sources below. Reply with "
    'JSON: {"claims": [{"text": ..., "evidence": [{"chunk_id": ..., "quote": ...}]}]}, an empty claims list '
    "when the sources do not answer."
)
SHOWN = 3  # sources per prompt
BRANCH_K = 3  # hits per retrieval branch

PAGES: list[dict[str, Any]] = [
    {"chunk_id": "parking-v4#permit-fee", "doc_id": "parking", "version": "v4", "title": "Residential parking",
     "text": "A residential parking permit costs $45 per year and covers one vehicle."},
    {"chunk_id": "parking-v4#guest-passes", "doc_id": "parking", "version": "v4", "title": "Residential parking",
     "text": "Each household may buy 20 guest passes per month at $2 each."},
    {"chunk_id": "parking-v4#sweeping", "doc_id": "parking", "version": "v4", "title": "Residential parking",
     "text": "Cars parked on a street during posted sweeping hours are towed."},
    {"chunk_id": "waste-v2#bulk", "doc_id": "waste", "version": "v2", "title": "Waste collection",
     "text": "Bulk items are collected on the first Monday of each month."},
    {"chunk_id": "waste-v2#recycling", "doc_id": "waste", "version": "v2", "title": "Waste collection",
     "text": "Recycling bins are emptied every second Thursday."},
    {"chunk_id": "library-v1#fines", "doc_id": "library", "version": "v1", "title": "Library",
     "text": "Overdue library books cost 25 cents per day, capped at $5 per item."},
    {"chunk_id": "library-v1#hours", "doc_id": "library", "version": "v1", "title": "Library",
     "text": "The central library is open from 9 am to 8 pm on weekdays."},
    {"chunk_id": "permits-v2#deck", "doc_id": "permits", "version": "v2", "title": "Building permits",
     "text": "A building permit is required for any deck higher than 30 inches.", "embedded": False},
    {"chunk_id": "permits-v2#fence", "doc_id": "permits", "version": "v2", "title": "Building permits",
     "text": "Fences up to 6 feet tall need no building permit in residential zones.", "embedded": False},
    {"chunk_id": "snow-v1#overtime", "doc_id": "snow", "version": "v1", "title": "Snow crews (staff)",
     "text": "Snow plow drivers earn overtime at 1.5 times their rate after 8 hours on shift.", "acl": ["staff"]},
]  # fmt: skip

for _p in PAGES:
    _p["uri"] = f"https://city.example.gov/{_p['doc_id']}/{_p['version']}#{_p['chunk_id'].split('#', 1)[1]}"


def _tokens(text: str) -> list[str]:
    return [stem(w) for w in re.findall(r"[a-z0-9$%]+", text.lower())]


def _readable(page: dict[str, Any], groups: tuple[str, ...]) -> bool:
    return not page.get("acl") or bool(set(page["acl"]) & set(groups))


class Bm25:
    """Okapi BM25 over the pages' words (k1 1.2, b 0.75)."""

    def __init__(self, pages: list[dict[str, Any]]) -> None:
        self.pages = pages
        self.docs = [[t for t in _tokens(p["text"]) if t in words(p["text"])] for p in pages]
        self.avg = sum(len(d) for d in self.docs) / len(self.docs)
        df = Counter(t for d in self.docs for t in set(d))
        n = len(self.docs)
        self.idf = {t: math.log(1 + (n - f + 0.5) / (f + 0.5)) for t, f in df.items()}

    def search(self, query: str, k: int, groups: tuple[str, ...]) -> list[dict[str, Any]]:
        q = words(query)
        scored = []
        for page, doc in zip(self.pages, self.docs, strict=True):
            tf = Counter(doc)
            s = sum(
                self.idf[t] * tf[t] * 2.2 / (tf[t] + 1.2 * (0.25 + 0.75 * len(doc) / self.avg)) for t in q if t in tf
            )
            if s > 0 and _readable(page, groups):
                scored.append((s, page))
        scored.sort(key=lambda sp: -sp[0])
        return [{**page, "score": round(s, 4)} for s, page in scored[:k]]


def embed(text: str, dim: int = 256) -> list[float]:
    """A deterministic stand-in for an embedding model: hashed bag of words, unit length."""
    v = [0.0] * dim
    for w in words(text):
        v[int(hashlib.blake2b(w.encode(), digest_size=4).hexdigest(), 16) % dim] += 1.0
    norm = math.sqrt(sum(x * x for x in v)) or 1.0
    return [x / norm for x in v]


class VectorIndex:
    """Cosine search over the pages the nightly job has embedded."""

    def __init__(self, pages: list[dict[str, Any]]) -> None:
        self.rows = [(embed(p["text"]), p) for p in pages if p.get("embedded", True)]

    def search(self, query: str, k: int, groups: tuple[str, ...]) -> list[dict[str, Any]]:
        q = embed(query)
        scored = [(sum(a * b for a, b in zip(q, v, strict=True)), p) for v, p in self.rows if _readable(p, groups)]
        scored = sorted((sp for sp in scored if sp[0] > 0), key=lambda sp: -sp[0])
        return [{**p, "score": round(s, 4)} for s, p in scored[:k]]


LEXICAL = Bm25(PAGES)
VECTORS = VectorIndex(PAGES)


def fuse(*rankings: list[dict[str, Any]], k: int = 60) -> list[dict[str, Any]]:
    """Reciprocal rank fusion: one hit per chunk, the fused score as its score."""
    fused: dict[str, float] = {}
    first: dict[str, dict[str, Any]] = {}
    for ranking in rankings:
        for rank, hit in enumerate(ranking, start=1):
            fused[hit["chunk_id"]] = fused.get(hit["chunk_id"], 0.0) + 1 / (k + rank)
            first.setdefault(hit["chunk_id"], hit)
    order = sorted(fused, key=lambda cid: -fused[cid])
    return [{**first[cid], "score": round(fused[cid], 6)} for cid in order]


def source_block(hits: list[dict[str, Any]]) -> str:
    return "\n".join(
        f"[{i}] ({h['chunk_id']}, {h['doc_id']}, {h['version']}) {h['text']}" for i, h in enumerate(hits, start=1)
    )


def _groups(principal: Any) -> tuple[str, ...]:
    return tuple(principal.get("groups", [])) if isinstance(principal, dict) else ()


class CityDesk:
    """The service desk, every stage decorated; both retrieval branches go through ``search_branch``."""

    def __init__(self, base_url: str, *, json_mode: bool = False) -> None:
        self.client = OpenAI(base_url=base_url, api_key="not-a-key", max_retries=0)
        self.json_mode = json_mode

    # retrieval ------------------------------------------------------------------------------
    @retrieval
    def search_branch(self, branch: str, query: str, groups: tuple[str, ...]) -> list[dict[str, Any]]:
        index = LEXICAL if branch == "lexical" else VECTORS
        return index.search(query, BRANCH_K, groups)

    def retrieve(self, question: str, groups: tuple[str, ...]) -> list[dict[str, Any]]:
        return fuse(self.search_branch("lexical", question, groups), self.search_branch("vector", question, groups))

    # context --------------------------------------------------------------------------------
    def messages_for(self, question: str, hits: list[dict[str, Any]]) -> list[dict[str, str]]:
        system = SYSTEM_JSON if self.json_mode else SYSTEM
        return [
            {"role": "system", "content": f"{system}\n\nSources:\n{source_block(hits)}"},
            {"role": "user", "content": question},
        ]

    @context_assembly
    def build_messages(self, question: str, hits: list[dict[str, Any]]) -> list[dict[str, str]]:
        return self.messages_for(question, hits)

    def context(self, question: str, hits: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, str]]]:
        shown = hits[:SHOWN]
        return shown, self.build_messages(question, shown)

    # generation -----------------------------------------------------------------------------
    @generation
    def generate(self, messages: list[dict[str, str]]) -> Any:
        extra: dict[str, Any] = {"response_format": {"type": "json_object"}} if self.json_mode else {}
        reply = self.client.chat.completions.create(model=MODEL, messages=messages, **extra)  # type: ignore[arg-type]
        content = reply.choices[0].message.content or ""
        return json.loads(content) if self.json_mode else content

    # resolution and render ------------------------------------------------------------------
    @resolution
    def resolve(self, answer: Any, shown: list[dict[str, Any]]) -> list[dict[str, str]]:
        keys = ("doc_id", "chunk_id", "version", "uri")
        if isinstance(answer, dict):  # JSON mode: the evidence names the chunks
            by_id = {h["chunk_id"]: (str(i), h) for i, h in enumerate(shown, start=1)}
            cited = [e.get("chunk_id") for c in answer.get("claims", []) for e in c.get("evidence", [])]
            return [
                {"marker": by_id[cid][0], **{k: by_id[cid][1][k] for k in keys}}
                for cid in dict.fromkeys(cited)
                if cid in by_id
            ]
        rows = []
        for marker in dict.fromkeys(re.findall(r"\[(\d+)\]", answer)):
            if 1 <= int(marker) <= len(shown):
                rows.append({"marker": marker, **{k: shown[int(marker) - 1][k] for k in keys}})
        return rows

    @render
    def links(self, resolved: list[dict[str, str]]) -> list[dict[str, str]]:
        titles = {p["chunk_id"]: p["title"] for p in PAGES}
        return [
            {"label": r["marker"], "uri": r["uri"], "title": titles.get(r["chunk_id"], ""), "chunk_id": r["chunk_id"]}
            for r in resolved
        ]

    # one request ----------------------------------------------------------------------------
    def answer(self, question: str, *, case_id: str | None = None, principal: Any = None, as_of: Any = None) -> Any:
        with request(question=question, case_id=case_id, principal=principal, as_of=as_of) as req:
            shown, messages = self.context(question, self.retrieve(question, _groups(principal)))
            answer = self.generate(messages)
            self.links(self.resolve(answer, shown))
            req.set_output(answer if isinstance(answer, str) else json.dumps(answer))
            return answer

    def answer_case(self, case: Any) -> Any:
        """The request function for ``citeline perturb``: one gold case through the desk."""
        return self.answer(case.question, case_id=case.case_id, principal=case.principal, as_of=case.as_of)


class PartialCityDesk(CityDesk):
    """``@retrieval`` on the vector branch only; the keyword branch runs undecorated beside it."""

    def lexical_search(self, query: str, groups: tuple[str, ...]) -> list[dict[str, Any]]:
        return LEXICAL.search(query, BRANCH_K, groups)

    @retrieval
    def vector_search(self, query: str, groups: tuple[str, ...]) -> list[dict[str, Any]]:
        return VECTORS.search(query, BRANCH_K, groups)

    def retrieve(self, question: str, groups: tuple[str, ...]) -> list[dict[str, Any]]:
        return fuse(self.lexical_search(question, groups), self.vector_search(question, groups))


class MisplacedCityDesk(CityDesk):
    """``@context_assembly`` on the step that picks the sources; the messages are written by an undecorated
    step that lists them best score first and numbers them."""

    @context_assembly
    def pick_sources(self, question: str, hits: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [{**h, "label": str(i)} for i, h in enumerate(hits[:SHOWN], start=1)]

    def context(self, question: str, hits: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, str]]]:
        picked = self.pick_sources(question, hits)
        shown = sorted(picked, key=lambda h: -float(h.get("score") or 0.0))
        return shown, self.messages_for(question, shown)


_default: dict[object, Any] = {}


def _desk(kind: type[CityDesk], json_mode: bool = False) -> CityDesk:
    if "server" not in _default:
        _default["server"] = ModelServer().start()
    key = (kind, json_mode)
    if key not in _default:
        _default[key] = kind(_default["server"].url, json_mode=json_mode)
    desk: CityDesk = _default[key]
    return desk


def answer_case(case: Any) -> Any:
    """The desk in prose mode on a loopback model it starts on first use."""
    return _desk(CityDesk).answer_case(case)


def json_case(case: Any) -> Any:
    """The desk in JSON mode on a loopback model it starts on first use."""
    return _desk(CityDesk, json_mode=True).answer_case(case)
