"""The policy assistant as a LangChain app, with citeline's six hooks (needs ``langchain-core``).

A real LangChain pipeline: a ``BaseRetriever`` over ``Document``s, an LCEL
chain ``ChatPromptTemplate | chat model | StrOutputParser``. The chat model is
an offline stand-in for a hosted one (none can run here): it reads the
numbered sources in its prompt and answers with the source sentence that
shares most words with the question (its title breaks a tie, then the
order), citing its label; when two versions of one document tie it takes
the newer; with no source sharing at least three words it says it cannot
verify. Because it reads its prompt, every
perturbation the harness makes reaches it as a real model's input would.

Not imported by citeline itself: ``citeline.examples.langchain_app`` imports
LangChain when you import it, and only then.

    from citeline.examples.langchain_app import answer
    answer("Which orders ship free?", case_id="free-shipping", as_of="2026-08-10")
"""

from __future__ import annotations

import re
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.output_parsers import StrOutputParser
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.retrievers import BaseRetriever

from citeline.instrumentation import context_assembly, generation, render, request, resolution, retrieval

from .policy_bot import CORPUS

ABSTAIN = "I cannot verify that from the policies I have."
_WORD = re.compile(r"[a-z0-9$%]+")
_STOP = frozenset(
    "a an the is are be can i my of on or to for in with what how do does it its by and there after".split()
)
_SOURCE = re.compile(r"^\[(\d+)\] \(([^ )]*) ([^ )]*)\) ([^:\n]*): (.*)$", re.M)


def _stem(word: str) -> str:
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def _words(text: str) -> set[str]:
    return {_stem(w) for w in _WORD.findall(text.lower()) if w not in _STOP}


def _version_key(version: str) -> int:
    digits = re.findall(r"\d+", version)
    return int(digits[-1]) if digits else -1


def documents() -> list[Document]:
    """The knowledge base as LangChain ``Document``s: ids, version, uri and ACL in ``metadata``."""
    return [
        Document(
            page_content=c.text,
            metadata={
                "chunk_id": c.chunk_id,
                "doc_id": c.doc_id,
                "version": c.version,
                "uri": c.uri,
                "title": c.title,
                "acl": c.acl or [],
            },
        )
        for c in CORPUS
    ]


class PolicyRetriever(BaseRetriever):
    """Lexical retrieval over the knowledge base, filtered by the asker's groups."""

    docs: list[Document]
    groups: tuple[str, ...] = ()
    k: int = 5

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        q = _words(query)
        allowed = [d for d in self.docs if not d.metadata["acl"] or set(d.metadata["acl"]) & set(self.groups)]
        scored = sorted(
            ((len(q & _words(d.page_content + " " + d.metadata["title"])), d.metadata["chunk_id"], d) for d in allowed),
            key=lambda t: (-t[0], t[1]),
        )
        return [d for score, _, d in scored[: self.k] if score]


class ExtractiveChatModel(BaseChatModel):
    """An offline chat model that answers from the sources in its prompt, or says it cannot verify."""

    min_shared: int = 3

    @property
    def _llm_type(self) -> str:
        return "citeline-extractive"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        prompt = "\n".join(str(m.content) for m in messages)
        question = prompt.rsplit("Question:", 1)[-1]
        q = _words(question)
        best: tuple[tuple[int, int], str, int, str, str] | None = None  # (shared, in title), doc, version, label, text
        for label, doc_id, version, title, text in _SOURCE.findall(prompt):
            key = (len(q & (_words(text) | _words(title))), len(q & _words(title)))
            newer_twin = best is not None and (key, doc_id) == best[:2] and _version_key(version) > best[2]
            if best is None or key > best[0] or newer_twin:
                best = (key, doc_id, _version_key(version), label, text)
        answer = ABSTAIN if best is None or best[0][0] < self.min_shared else f"{best[4].rstrip('.')} [{best[3]}]."
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=answer))])


PROMPT = ChatPromptTemplate.from_messages(
    [
        ("system", "Answer only from the numbered sources and cite each claim as [n]; else say you cannot verify."),
        ("human", "Sources:\n{sources}\n\nQuestion: {question}"),
    ]
)
CHAIN = PROMPT | ExtractiveChatModel() | StrOutputParser()
KB = documents()
CONTEXT_BUDGET = 3


@retrieval
def retrieve(question: str, groups: tuple[str, ...]) -> list[Document]:
    return PolicyRetriever(docs=KB, groups=groups).invoke(question)


@context_assembly
def select_context(question: str, docs: list[Document]) -> list[Document]:
    """The chunks that reach the model, each labelled as the prompt will show it."""
    return [
        d.model_copy(update={"metadata": {**d.metadata, "label": str(i + 1)}})
        for i, d in enumerate(docs[:CONTEXT_BUDGET])
    ]


@generation
def generate(question: str, context: list[Document]) -> str:
    sources = "\n".join(
        f"[{m['label']}] ({m['doc_id']} {m['version']}) {m['title']}: {d.page_content}"
        for d, m in ((d, d.metadata) for d in context)
    )
    return CHAIN.invoke({"sources": sources, "question": question})


@resolution
def resolve(answer: str, context: list[Document]) -> list[dict[str, str]]:
    by_label = {d.metadata["label"]: d.metadata for d in context}
    return [
        {"marker": m, **{k: by_label[m][k] for k in ("doc_id", "chunk_id", "version", "uri")}}
        for m in dict.fromkeys(re.findall(r"\[(\d+)\]", answer))
        if m in by_label
    ]


@render
def render_links(resolved: list[dict[str, str]]) -> list[dict[str, str]]:
    titles = {d.metadata["chunk_id"]: d.metadata["title"] for d in KB}
    return [{"label": r["marker"], "uri": r["uri"], "title": titles.get(r["chunk_id"], "")} for r in resolved]


def answer(question: str, *, case_id: str | None = None, principal: Any = None, as_of: Any = None) -> str:
    """One request through the six stages."""
    groups = tuple(principal.get("groups", [])) if isinstance(principal, dict) else ()
    with request(question=question, case_id=case_id, principal=principal, as_of=as_of) as req:
        docs = retrieve(question, groups)
        context = select_context(question, docs)
        text = generate(question, context)
        render_links(resolve(text, context))
        req.set_output(text)
        return text


def answer_case(case: Any) -> str:
    """The request function for ``citeline perturb`` (a gold case: question, case_id, principal, as_of)."""
    return answer(case.question, case_id=case.case_id, principal=case.principal, as_of=case.as_of)
