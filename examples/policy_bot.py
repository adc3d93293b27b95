"""A small policy assistant instrumented with all six citeline hooks.

Everything is deterministic and offline: retrieval is lexical overlap over
a handful of versioned policy chunks, and generation follows a script per
question (standing in for a hosted LLM, which cannot run here). Each
request can carry faults -- a skipped ACL filter, a tight context budget, an
off-by-one resolver -- so one app produces every failure citeline knows.

Answer scripts cite chunks by id, e.g. ``30 days [[returns-v4#eligibility-2]]``;
the generator turns each into the label that chunk got in this request's
context, as a model citing its context would.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from citeline.instrumentation import (
    Chunk,
    context_assembly,
    generation,
    render,
    request,
    resolution,
    retrieval,
)

_TOKEN = re.compile(r"[a-z0-9]+")
_CITE = re.compile(r"\[\[([^\]]+)\]\]")
_STOP = frozenset(
    "a an the is are be can i my of on or to for in with what how do does after "
    "it its by and within if when which who".split()
)

KB = "https://kb.example.com"


def _c(chunk_id: str, version: str, title: str, text: str, acl: list[str] | None = None) -> Chunk:
    doc_id = chunk_id.split("#", 1)[0].rsplit("-v", 1)[0]
    anchor = chunk_id.split("#", 1)[1]
    return Chunk(
        doc_id=doc_id,
        chunk_id=chunk_id,
        version=version,
        text=text,
        uri=f"{KB}/{doc_id}/{version}#{anchor}",
        title=title,
        acl=acl,
    )


CORPUS: list[Chunk] = [
    _c(
        "returns-v4#eligibility-2",
        "v4",
        "Returns policy",
        "Opened electronics may be returned within 30 days of delivery with proof of purchase.",
    ),
    _c(
        "returns-v4#refunds-3",
        "v4",
        "Returns policy",
        "Refunds are issued to the original payment method within 5 business days of receiving the item.",
    ),
    _c(
        "returns-v3#eligibility-2",
        "v3",
        "Returns policy (2025)",
        "Opened electronics may be returned within 14 days of delivery.",
    ),
    _c(
        "returns-holiday#window",
        "2025",
        "Holiday returns",
        "Items bought between November 15 and December 31 may be returned until January 31.",
    ),
    _c(
        "restocking-v2#fee-1",
        "v2",
        "Restocking fees",
        "A 15% restocking fee applies to opened electronics returned after 14 days.",
    ),
    _c(
        "shipping-v2#standard-1",
        "v2",
        "Shipping",
        "Standard shipping takes 3 to 5 business days and costs $4.99.",
    ),
    _c(
        "shipping-v1#standard-1",
        "v1",
        "Shipping (2024)",
        "Standard shipping takes 3 to 5 business days and costs $4.99.",
    ),
    _c("shipping-v2#free-2", "v2", "Shipping", "Orders over $50 ship free within the continental US."),
    _c(
        "warranty-v1#coverage-1",
        "v1",
        "Warranty",
        "Devices carry a one-year limited warranty covering manufacturing defects.",
    ),
    _c(
        "warranty-v1#exclusions-2",
        "v1",
        "Warranty",
        "The warranty does not cover accidental damage or water damage.",
    ),
    _c(
        "warranty-v1#claims-3",
        "v1",
        "Warranty",
        "Warranty claims must be filed online with the order number and a photo of the defect.",
    ),
    _c(
        "staff-handbook#discount-1",
        "v1",
        "Staff handbook",
        "Employees receive a 25% discount on accessories, not on devices.",
        acl=["staff"],
    ),
    _c(
        "price-match-v1#policy-1",
        "v1",
        "Price match",
        "We match a competitor's advertised price within 14 days of purchase.",
    ),
]


@dataclass(frozen=True)
class Faults:
    """Knobs that break one stage on purpose."""

    skip_acl_filter: bool = False
    top_k: int = 6
    context_budget: int = 4
    hide: frozenset[str] = frozenset()  # chunk ids the index "lost"
    drop_from_context: frozenset[str] = frozenset()  # retrieved but cut before the prompt
    resolver_offset: int = 0  # marker n resolves to context entry n + offset
    resolver_version: str | None = None  # resolver pins every citation to this version
    render_uri: Mapping[str, str] = field(default_factory=dict)  # chunk id -> wrong link on the page
    shuffle_seed: int | None = None  # reorder the context (labels follow the new order)
    label_offset: int = 0  # number context labels from 1 + offset
    extra_chunks: tuple[Chunk, ...] = ()  # chunks only this request's index holds
    buggy_adapter: str | None = None  # "retrieval" or "context": that stage's to_chunks adapter raises


@dataclass
class Prompt:
    """What the model receives: the question and the labelled chunks."""

    question: str
    chunks: list[Chunk]

    @property
    def text(self) -> str:
        body = "\n".join(f"[{c.label}] {c.title}: {c.text}" for c in self.chunks)
        return f"Answer with citations.\n{body}\nQuestion: {self.question}"


def _tokens(text: str) -> set[str]:
    return {t for t in _TOKEN.findall(text.lower()) if t not in _STOP}


def _adapter_bug(result: Any) -> Any:
    """Stands in for an app's own ``to_chunks`` adapter with a bug: it raises on every call."""
    raise KeyError("chunk_id")


class PolicyBot:
    """The example app. ``ask()`` runs one request through all six stages."""

    def __init__(self, corpus: list[Chunk] | None = None) -> None:
        self.corpus = list(CORPUS if corpus is None else corpus)

    # --- the six stages ------------------------------------------------------------
    @retrieval
    def search(self, query: str, groups: frozenset[str], faults: Faults) -> list[Chunk]:
        q = _tokens(query)
        scored = []
        for chunk in (*self.corpus, *faults.extra_chunks):
            if chunk.chunk_id in faults.hide:
                continue
            if not faults.skip_acl_filter and chunk.acl and not (groups & set(chunk.acl)):
                continue
            words = _tokens(chunk.text + " " + chunk.title)
            overlap = len(q & words)
            if overlap:
                scored.append((overlap / (len(words) ** 0.5), chunk.chunk_id, chunk))
        scored.sort(key=lambda t: (-t[0], t[1]))
        return [replace(chunk, score=round(score, 4)) for score, _, chunk in scored[: faults.top_k]]

    @context_assembly
    def build_prompt(self, question: str, hits: list[Chunk], faults: Faults) -> Prompt:
        kept = [h for h in hits if h.chunk_id not in faults.drop_from_context][: faults.context_budget]
        if faults.shuffle_seed is not None:
            random.Random(faults.shuffle_seed).shuffle(kept)
        labelled = [replace(c, label=str(i + 1 + faults.label_offset)) for i, c in enumerate(kept)]
        return Prompt(question, labelled)

    # the same two stages behind an adapter with a bug: the trace cannot show what they did
    @retrieval(to_chunks=_adapter_bug, name="search")
    def search_via_buggy_adapter(self, query: str, groups: frozenset[str], faults: Faults) -> list[Chunk]:
        return PolicyBot.search.__wrapped__(self, query, groups, faults)  # type: ignore[attr-defined,no-any-return]

    @context_assembly(to_chunks=_adapter_bug, name="build_prompt")
    def build_prompt_via_buggy_adapter(self, question: str, hits: list[Chunk], faults: Faults) -> Prompt:
        return PolicyBot.build_prompt.__wrapped__(self, question, hits, faults)  # type: ignore[attr-defined,no-any-return]

    @generation
    def answer(self, prompt: Prompt, script: Any) -> Any:
        return _follow_script(prompt, script, {c.chunk_id for c in self.corpus})

    @generation
    def answer_stream(self, prompt: Prompt, script: str) -> Iterator[str]:
        yield from re.findall(r"\S+\s*", _follow_script(prompt, script, set()))

    @resolution
    def resolve(self, answer: Any, prompt: Prompt, faults: Faults) -> list[dict[str, str]]:
        text = answer if isinstance(answer, str) else answer.get("text", "")
        markers = sorted(set(re.findall(r"\[(\d+)\]", text)), key=int)
        by_label = {c.label: i for i, c in enumerate(prompt.chunks)}
        out = []
        for marker in markers:
            if marker not in by_label:
                continue
            i = by_label[marker] + faults.resolver_offset
            if not 0 <= i < len(prompt.chunks):
                continue
            c = prompt.chunks[i]
            version = faults.resolver_version or c.version
            out.append(
                {
                    "marker": marker,
                    "doc_id": c.doc_id,
                    "chunk_id": c.chunk_id.replace(f"-{c.version}#", f"-{version}#"),
                    "version": version,
                    "uri": c.uri.replace(f"/{c.version}#", f"/{version}#"),
                }
            )
        return out

    @render
    def to_html(self, resolved: list[dict[str, str]], faults: Faults) -> list[dict[str, str]]:
        titles = {c.chunk_id: c.title for c in self.corpus}
        return [
            {
                "label": r["marker"],
                "uri": faults.render_uri.get(r["chunk_id"], r["uri"]),
                "title": titles.get(r["chunk_id"], ""),
            }
            for r in resolved
        ]

    # --- one request ----------------------------------------------------------------
    def ask(
        self,
        question: str,
        script: Any,
        *,
        case_id: str | None = None,
        principal: Any = None,
        as_of: Any = None,
        faults: Faults | None = None,
        stream: bool = False,
    ) -> str:
        faults = faults or Faults()
        groups = frozenset(principal.get("groups", [])) if isinstance(principal, dict) else frozenset()
        with request(question=question, case_id=case_id, principal=principal, as_of=as_of) as req:
            search = self.search_via_buggy_adapter if faults.buggy_adapter == "retrieval" else self.search
            hits = search(question, groups, faults)
            build = self.build_prompt_via_buggy_adapter if faults.buggy_adapter == "context" else self.build_prompt
            prompt = build(question, hits, faults)
            if stream and isinstance(script, str):
                answer: Any = "".join(self.answer_stream(prompt, script))
            else:
                answer = self.answer(prompt, script)
            resolved = self.resolve(answer, prompt, faults)
            self.to_html(resolved, faults)
            text = answer if isinstance(answer, str) else str(answer.get("text", ""))
            req.set_output(text)
            return text


def _follow_script(prompt: Prompt, script: Any, known: set[str]) -> Any:
    """The scripted model: ``[[chunk-id]]`` becomes that chunk's label, or vanishes if not in context.

    Structured scripts name chunk ids directly; like a model, the script cannot cite a real
    chunk it was not shown (that evidence is dropped), but an id it makes up stays.
    """
    if not isinstance(script, str):
        shown = {c.chunk_id for c in prompt.chunks}
        claims = [
            {
                **claim,
                "evidence": [e for e in claim["evidence"] if e["chunk_id"] in shown or e["chunk_id"] not in known],
            }
            for claim in script["claims"]
        ]
        return {**script, "claims": claims}
    label_of = {c.chunk_id: c.label for c in prompt.chunks}
    return _CITE.sub(lambda m: f"[{label_of[m.group(1)]}]" if m.group(1) in label_of else "", script)


#: a few questions with scripted answers, used by the demo and the tests
SAMPLE: list[dict[str, Any]] = [
    {
        "case_id": "returns-45d",
        "question": "Can an opened device be returned after 45 days?",
        "script": "No. Opened electronics may be returned within 30 days of delivery [[returns-v4#eligibility-2]].",
        "principal": {"id": "alice", "groups": ["staff"]},
        "as_of": "2026-08-10",
    },
    {
        "case_id": "shipping-cost",
        "question": "How much does standard shipping cost and how long does it take?",
        "script": "Standard shipping costs $4.99 [[shipping-v2#standard-1]]. "
        "It takes 3 to 5 business days [[shipping-v2#standard-1]].",
        "principal": "bob",
        "as_of": "2026-08-10",
    },
    {
        "case_id": "warranty-water",
        "question": "Does the warranty cover water damage on devices?",
        "script": {
            "text": "No, the warranty does not cover water damage.",
            "claims": [
                {
                    "text": "The warranty does not cover water damage.",
                    "evidence": [{"chunk_id": "warranty-v1#exclusions-2", "quote": "does not cover accidental damage"}],
                }
            ],
            "abstained": False,
        },
        "principal": {"id": "carol", "groups": ["public"]},
        "as_of": "2026-08-10",
    },
]


def run_sample(bot: PolicyBot | None = None, *, stream: bool = False) -> list[str]:
    """Ask every sample question once; returns the answers."""
    bot = bot or PolicyBot()
    return [
        bot.ask(
            case["question"],
            case["script"],
            case_id=case["case_id"],
            principal=case["principal"],
            as_of=case["as_of"],
            stream=stream,
        )
        for case in SAMPLE
    ]
