"""Northwind Drive's help desk: a LangChain RAG app whose context step returns a ``Prompt`` wrapper.

Wired from README.md and docs/testing.md as a new user would: a ``BaseRetriever`` over ``Document``s
(ACL-filtered by the asker's groups), a context step that builds ``Prompt(messages, documents)``
(the chat model reads ``.messages``, where the numbered sources are rendered; ``.documents`` keeps
the ``Document``s the numbers stand for, which the resolver reads), a chat model, a resolver and a
source list. The chat model is an offline stand-in for a hosted one (no model can run here): it
reads its messages and answers each part of the question with the source that shares most words
with it, citing its number, or says it cannot find the answer (``tests.realapps.reading``).

Request functions for ``citeline perturb``:

- :func:`answer_case`: every decorator where it belongs;
- :func:`misplaced_case`: ``@context_assembly`` on the reranker, whose output an undecorated step
  cuts to the prompt's budget and numbers (the labels the trace records are not the model's).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.retrievers import BaseRetriever

from citeline.instrumentation import context_assembly, generation, render, request, resolution, retrieval

from .reading import Source, pick, words

NOT_FOUND = "I could not find that in the Northwind Drive help center."
SYSTEM = (
    "You are the Northwind Drive help desk. Answer only from the numbered sources below and cite the "
    "source of each sentence as [n]. If they do not answer the question, say you could not find it."
)
BUDGET = 3  # sources per prompt

# The help center as indexed today: current articles only (older versions live in the archive, not the index).
ARTICLES: list[dict[str, Any]] = [
    {"chunk_id": "plans-v3#team-storage", "doc_id": "plans", "version": "v3", "title": "Plans",
     "text": "The Team plan includes 2 TB of pooled storage per workspace."},
    {"chunk_id": "pricing-v3#team-price", "doc_id": "pricing", "version": "v3", "title": "Pricing",
     "text": "The Team plan costs $12 per user per month when billed annually."},
    {"chunk_id": "pricing-v3#business-price", "doc_id": "pricing", "version": "v3", "title": "Pricing",
     "text": "The Business plan costs $20 per user per month when billed annually."},
    {"chunk_id": "trash-v2#retention", "doc_id": "trash", "version": "v2", "title": "Trash and recovery",
     "text": "Deleted files stay in the trash for 30 days before they are erased for good."},
    {"chunk_id": "trash-v2#restore", "doc_id": "trash", "version": "v2", "title": "Trash and recovery",
     "text": "Any workspace member can restore a file from the trash to its original folder."},
    {"chunk_id": "sla-v1#uptime", "doc_id": "sla", "version": "v1", "title": "Service level agreement",
     "text": "The Enterprise plan guarantees 99.9% monthly uptime."},
    {"chunk_id": "sla-v1#credits", "doc_id": "sla", "version": "v1", "title": "Service level agreement",
     "text": "Each hour of downtime beyond the guarantee earns a service credit of 5% of the monthly fee."},
    {"chunk_id": "sharing-v1#links", "doc_id": "sharing", "version": "v1", "title": "Sharing",
     "text": "Shared links expire after 7 days unless a workspace admin extends them."},
    {"chunk_id": "desktop-v2#offline", "doc_id": "desktop", "version": "v2", "title": "Desktop app",
     "text": "The desktop app keeps files available offline and uploads changes when the connection returns."},
    {"chunk_id": "keys-v1#rotation", "doc_id": "keys", "version": "v1", "title": "Encryption keys (internal)",
     "text": "Workspace encryption keys are rotated every 90 days by the security team.", "acl": ["security"]},
]  # fmt: skip


def _uri(a: dict[str, Any]) -> str:
    anchor = a["chunk_id"].split("#", 1)[1]
    return f"https://help.northwind.example/{a['doc_id']}/{a['version']}#{anchor}"


INDEX = [
    Document(
        page_content=a["text"],
        metadata={k: a[k] for k in ("chunk_id", "doc_id", "version", "title")}
        | {"uri": _uri(a), "acl": a.get("acl", [])},
    )
    for a in ARTICLES
]


@dataclass
class Prompt:
    """What the model is sent (``messages``) and the documents its numbered sources stand for."""

    messages: list[BaseMessage]
    documents: list[Document]


class HelpCenterRetriever(BaseRetriever):
    """Keyword overlap over text and title, restricted to the articles the asker's groups may read."""

    docs: list[Document]
    groups: tuple[str, ...] = ()
    k: int = 5

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        q = words(query)
        readable = [d for d in self.docs if not d.metadata["acl"] or set(d.metadata["acl"]) & set(self.groups)]
        scored = [(len(q & words(f"{d.page_content} {d.metadata['title']}")), d) for d in readable]
        ranked = sorted((s for s in scored if s[0] > 0), key=lambda s: -s[0])  # stable: index order breaks ties
        return [d for _, d in ranked[: self.k]]


_SOURCE_LINE = re.compile(r"^\[(\d+)\] ([^\n]*?) \(([^,\n]+), ([^)\n]+)\): (.+)$", re.M)


class HelpDeskModel(BaseChatModel):
    """Offline stand-in for a hosted chat model: answers from the sources in its messages, or declines."""

    @property
    def _llm_type(self) -> str:
        return "northwind-offline"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        system = "\n".join(str(m.content) for m in messages if isinstance(m, SystemMessage))
        question = next((str(m.content) for m in reversed(messages) if isinstance(m, HumanMessage)), "")
        sources = [Source(label, doc, version, text) for label, _, doc, version, text in _SOURCE_LINE.findall(system)]
        picks = pick(question, sources)
        text = " ".join(f"{p.sentence} [{p.source.label}]." for p in picks) if picks else NOT_FOUND
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=text))])


MODEL = HelpDeskModel()


def render_sources(docs: list[Document]) -> str:
    return "\n".join(
        f"[{i}] {d.metadata['title']} ({d.metadata['doc_id']}, {d.metadata['version']}): {d.page_content}"
        for i, d in enumerate(docs, start=1)
    )


def prompt_for(question: str, docs: list[Document]) -> Prompt:
    chosen = docs[:BUDGET]
    messages: list[BaseMessage] = [
        SystemMessage(f"{SYSTEM}\n\nSources:\n{render_sources(chosen)}"),
        HumanMessage(question),
    ]
    return Prompt(messages, chosen)


@retrieval
def retrieve(question: str, groups: tuple[str, ...]) -> list[Document]:
    return HelpCenterRetriever(docs=INDEX, groups=groups).invoke(question)


@context_assembly
def build_prompt(question: str, docs: list[Document]) -> Prompt:
    return prompt_for(question, docs)


@generation
def generate(prompt: Prompt) -> str:
    return str(MODEL.invoke(prompt.messages).content)


@resolution
def resolve(answer: str, prompt: Prompt) -> list[dict[str, str]]:
    rows = []
    for marker in dict.fromkeys(re.findall(r"\[(\d+)\]", answer)):
        n = int(marker)
        if 1 <= n <= len(prompt.documents):
            m = prompt.documents[n - 1].metadata
            rows.append({"marker": marker, **{k: m[k] for k in ("doc_id", "chunk_id", "version", "uri")}})
    return rows


@render
def source_list(resolved: list[dict[str, str]]) -> list[dict[str, str]]:
    titles = {d.metadata["chunk_id"]: d.metadata["title"] for d in INDEX}
    return [{"label": r["marker"], "uri": r["uri"], "title": titles.get(r["chunk_id"], "")} for r in resolved]


def _groups(principal: Any) -> tuple[str, ...]:
    return tuple(principal.get("groups", [])) if isinstance(principal, dict) else ()


def answer(question: str, *, case_id: str | None = None, principal: Any = None, as_of: Any = None) -> str:
    """One question through the help desk."""
    with request(question=question, case_id=case_id, principal=principal, as_of=as_of) as req:
        prompt = build_prompt(question, retrieve(question, _groups(principal)))
        text = generate(prompt)
        source_list(resolve(text, prompt))
        req.set_output(text)
        return text


def answer_case(case: Any) -> str:
    """The request function for ``citeline perturb``: one gold case through the help desk."""
    return answer(case.question, case_id=case.case_id, principal=case.principal, as_of=case.as_of)


# ------------------------------------------------------------------ a decorator in the wrong place


@context_assembly
def rerank(question: str, docs: list[Document]) -> list[Document]:
    """Misplaced: the reranker's order is recorded as the context, but the prompt is cut and numbered later."""
    q = words(question)
    return sorted(docs, key=lambda d: -len(q & words(d.page_content)))


def answer_misplaced(question: str, *, case_id: str | None = None, principal: Any = None, as_of: Any = None) -> str:
    with request(question=question, case_id=case_id, principal=principal, as_of=as_of) as req:
        ranked = rerank(question, retrieve(question, _groups(principal)))
        prompt = prompt_for(question, ranked)  # undecorated: keeps the budget's worth and numbers them
        text = generate(prompt)
        source_list(resolve(text, prompt))
        req.set_output(text)
        return text


def misplaced_case(case: Any) -> str:
    """The help desk with ``@context_assembly`` on the reranker instead of the step that builds the prompt."""
    return answer_misplaced(case.question, case_id=case.case_id, principal=case.principal, as_of=case.as_of)
