"""Three small RAG apps on real frameworks, traced by their real OpenInference instrumentors only.

No citeline decorator anywhere: the app calls ``configure()`` for the trace files and
hands its provider to the framework's instrumentor, as docs/openinference.md says. The
retrievers, prompt templates, query engines and pipelines are the frameworks' own; only
the model is scripted (a hosted LLM cannot run here), and it is the one thing each
scenario injects a failure into, besides the index and the step between retrieval and
prompt.

A scripted answer names chunks, not labels: ``{returns-v4#refunds-3}`` becomes the label
the prompt put in front of that chunk's text, as a model reading the prompt would write.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider

from citeline.examples.demo import gold_path
from tests.extras import needs

CORPUS: list[dict[str, Any]] = yaml.safe_load(gold_path().read_text())["corpus"]
TEXT = {c["chunk_id"]: c["text"] for c in CORPUS}
_PLACE = re.compile(r"\{([^{}]+)\}")
_LABEL = re.compile(r"(?:\[(\d+)\]|Source (\d+):)\s*$", re.IGNORECASE)


def label_of(prompt: str, chunk_id: str) -> str:
    """The label the prompt wrote just before (a piece of) the chunk's text."""
    flat = " ".join(prompt.split())
    text = " ".join(TEXT[chunk_id].split())
    pos = flat.find(text)
    if pos < 0:
        pos = flat.find(text[:24])
    assert pos >= 0, f"{chunk_id} is not in the prompt"
    m = _LABEL.search(flat[max(0, pos - 40) : pos].rstrip())
    if m:
        return m.group(1) or m.group(2)
    # a prompt that numbers nothing (LlamaIndex's default query engine): a model citing [n] means the
    # n-th source it was shown
    starts = sorted({p for p in (flat.find(" ".join(t.split())) for t in set(TEXT.values())) if p >= 0})
    return str(starts.index(pos) + 1)


@dataclass(frozen=True)
class Scenario:
    """One request: what the index holds, what reaches the prompt, what the model says, where it must land."""

    question: str
    answer: str  # with {chunk_id} placeholders, each written as [label]
    bucket: str
    stage: str | None
    left_out_of_index: tuple[str, ...] = ()
    dropped_before_prompt: tuple[str, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)

    def say(self, prompt: str) -> str:
        return _PLACE.sub(lambda m: "[" + self._label(prompt, m.group(1)) + "]", self.answer)

    @staticmethod
    def _label(prompt: str, ref: str) -> str:
        if not ref.startswith("not "):
            return label_of(prompt, ref)
        # "not X": the first chunk of the prompt that is not X (nor a copy of its text)
        flat = " ".join(prompt.split())
        others = [c for c in TEXT if TEXT[c] != TEXT[ref[4:]] and " ".join(TEXT[c].split())[:24] in flat]
        assert others, f"no chunk but {ref[4:]} in the prompt"
        return label_of(prompt, min(others, key=lambda c: flat.find(" ".join(TEXT[c].split())[:24])))

    def corpus(self) -> list[dict[str, Any]]:
        return [c for c in CORPUS if c["chunk_id"] not in self.left_out_of_index]

    def keep(self, text: str) -> bool:
        return all(" ".join(text.split()) != " ".join(TEXT[c].split()) for c in self.dropped_before_prompt)


REFUND = "How fast are refunds issued to my payment method?"
RIGHT = "Refunds are issued to the original payment method within 5 business days {returns-v4#refunds-3}."
# the public assistant's index: no staff handbook, and no shipping page (its two versions share
# one text, which would make every label ambiguous in scenarios about something else)
SHIPPING = ("shipping-v1#standard-1", "shipping-v2#standard-1")
NO_SHIPPING = (*SHIPPING, "staff-handbook#discount-1")

SCENARIOS: dict[str, Scenario] = {
    "ok": Scenario(REFUND, RIGHT, "ok", None, NO_SHIPPING),
    "grounding": Scenario(REFUND, RIGHT.replace("5 business", "10 business"), "grounding", "generation", NO_SHIPPING),
    "uncited": Scenario(REFUND, RIGHT.replace(" {returns-v4#refunds-3}", ""), "uncited", "generation", NO_SHIPPING),
    "attribution": Scenario(
        REFUND, RIGHT.replace("{returns-v4", "{not returns-v4"), "attribution", "generation", NO_SHIPPING
    ),
    "invalid_citation": Scenario(
        REFUND, RIGHT.replace("{returns-v4#refunds-3}", "[9]"), "invalid_citation", "generation", NO_SHIPPING
    ),
    # a filter between the retriever and the prompt threw the support away
    "context_drop": Scenario(
        REFUND,
        RIGHT.replace("{returns-v4", "{not returns-v4"),
        "context_drop",
        "context",
        NO_SHIPPING,
        dropped_before_prompt=("returns-v4#refunds-3",),
    ),
    # the index was built without the refunds section
    "retrieval_miss": Scenario(
        REFUND,
        RIGHT.replace("{returns-v4", "{not returns-v4"),
        "retrieval_miss",
        "retrieval",
        (*NO_SHIPPING, "returns-v4#refunds-3"),
    ),
    # a stale index: last year's returns policy instead of this year's
    "freshness": Scenario(
        "Can opened electronics be returned after three weeks?",
        "Opened electronics may be returned within 14 days of delivery {returns-v3#eligibility-2}.",
        "freshness",
        "retrieval",
        (*NO_SHIPPING, "returns-v4#eligibility-2"),
    ),
    # the public assistant's index also holds the staff handbook; with no decorator nobody recorded
    # who asked, so the request is entitled to nothing restricted (fail closed; the gold case's principal
    # is never borrowed): access_violation at the retriever span, the reason saying the groups were not
    # recorded; test_access_with_the_principal_recorded adds request(principal=)
    "access_violation": Scenario(
        "Do employees get a discount on devices?",
        "Employees get 25% off accessories, not devices {staff-handbook#discount-1}.",
        "access_violation",
        "retrieval",
        SHIPPING,
    ),
}


class Forward(SpanProcessor):
    """Hands every span to the provider of the run under way (set by traced_by)."""

    target: Any = None

    def on_start(self, span: Any, parent_context: Any = None) -> None:
        if self.target is not None:
            self.target._active_span_processor.on_start(span, parent_context=parent_context)

    def on_end(self, span: Any) -> None:
        if self.target is not None:
            self.target._active_span_processor.on_end(span)


_FORWARD = Forward()
_SHARED = TracerProvider()
_SHARED.add_span_processor(_FORWARD)
_INSTRUMENTED: set[type] = set()


@contextmanager
def traced_by(instrumentor: type, provider: Any) -> Iterator[None]:
    """Instrument the framework once per process, as an app does at start-up; send this run's spans to provider.

    (Instrumenting and uninstrumenting LlamaIndex again and again in one process loses spans.)
    """
    if instrumentor not in _INSTRUMENTED:
        instrumentor().instrument(tracer_provider=_SHARED)
        _INSTRUMENTED.add(instrumentor)
    _FORWARD.target = provider
    try:
        yield
    finally:
        _FORWARD.target = None


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9$%]+", text.lower())


# ---------------------------------------------------------------- LlamaIndex


def run_llama_index(
    scenario: Scenario,
    provider: Any,
    *,
    citation_chunk_size: int = 512,
    engine: str = "citation",
    qa_template: str | None = None,
) -> str:
    """A VectorStoreIndex behind LlamaIndex's CitationQueryEngine (or, with engine="plain", the index's
    default query engine, whose prompt numbers nothing); the answer text."""
    needs("llama_index.core", "LlamaIndex")
    needs("openinference.instrumentation.llama_index", "LlamaIndex's OpenInference instrumentor")
    from llama_index.core import Document, Settings, VectorStoreIndex
    from llama_index.core.embeddings import BaseEmbedding
    from llama_index.core.llms import CompletionResponse, CustomLLM, LLMMetadata
    from llama_index.core.llms.callbacks import llm_completion_callback
    from llama_index.core.postprocessor.types import BaseNodePostprocessor
    from llama_index.core.query_engine import CitationQueryEngine
    from openinference.instrumentation.llama_index import LlamaIndexInstrumentor

    class WordHashEmbedding(BaseEmbedding):  # a hosted embedding model cannot run here: hashed bag of words
        def _vec(self, text: str) -> list[float]:
            v = [0.0] * 512
            for w in _words(text):
                v[int(hashlib.sha1(w.encode()).hexdigest(), 16) % 512] += 1.0
            return v

        def _get_query_embedding(self, query: str) -> list[float]:
            return self._vec(query)

        async def _aget_query_embedding(self, query: str) -> list[float]:
            return self._vec(query)

        def _get_text_embedding(self, text: str) -> list[float]:
            return self._vec(text)

    class ScriptedLLM(CustomLLM):  # stands in for a hosted model
        @property
        def metadata(self) -> LLMMetadata:
            return LLMMetadata(model_name="scripted")

        @llm_completion_callback()
        def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
            return CompletionResponse(text=scenario.say(prompt))

        @llm_completion_callback()
        def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> Any:
            raise NotImplementedError

    class DropSome(BaseNodePostprocessor):
        def _postprocess_nodes(self, nodes: list[Any], query_bundle: Any = None) -> list[Any]:
            return [n for n in nodes if scenario.keep(n.node.get_content())]

    with traced_by(LlamaIndexInstrumentor, provider):
        Settings.embed_model = WordHashEmbedding()
        Settings.llm = ScriptedLLM()
        docs = [Document(text=c["text"], metadata={"uri": c["uri"]}) for c in scenario.corpus()]
        index = VectorStoreIndex.from_documents(docs)
        if engine == "plain":
            extra: dict[str, Any] = {}
            if qa_template is not None:
                from llama_index.core import PromptTemplate

                extra["text_qa_template"] = PromptTemplate(qa_template)
            query_engine = index.as_query_engine(similarity_top_k=3, node_postprocessors=[DropSome()], **extra)
        else:
            query_engine = CitationQueryEngine.from_args(
                index,
                similarity_top_k=3,
                citation_chunk_size=citation_chunk_size,
                citation_chunk_overlap=0,
                node_postprocessors=[DropSome()],
            )
        return str(query_engine.query(scenario.question))


# ---------------------------------------------------------------- LangChain


def run_langchain(scenario: Scenario, provider: Any) -> str:
    """An LCEL chain: retriever | format | ChatPromptTemplate | chat model | StrOutputParser."""
    needs("langchain_core", "LangChain")
    needs("openinference.instrumentation.langchain", "LangChain's OpenInference instrumentor")
    from langchain_core.callbacks import CallbackManagerForRetrieverRun
    from langchain_core.documents import Document
    from langchain_core.language_models.chat_models import SimpleChatModel
    from langchain_core.messages import BaseMessage
    from langchain_core.output_parsers import StrOutputParser
    from langchain_core.prompts import ChatPromptTemplate
    from langchain_core.retrievers import BaseRetriever
    from langchain_core.runnables import RunnableLambda, RunnablePassthrough
    from openinference.instrumentation.langchain import LangChainInstrumentor

    class KeywordRetriever(BaseRetriever):  # word overlap, top 3: the app's own small retriever
        docs: list[Document]

        def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
            q = set(_words(query))
            ranked = sorted(self.docs, key=lambda d: -len(q & set(_words(d.page_content))))
            return ranked[:3]

    class ScriptedChat(SimpleChatModel):  # stands in for a hosted chat model
        @property
        def _llm_type(self) -> str:
            return "scripted"

        def _call(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any) -> str:
            return scenario.say("\n\n".join(str(m.content) for m in messages))

    def fmt(docs: list[Document]) -> str:
        kept = [d for d in docs if scenario.keep(d.page_content)]
        return "\n\n".join(f"[{i}] {d.page_content}" for i, d in enumerate(kept, 1))

    with traced_by(LangChainInstrumentor, provider):
        docs = [Document(page_content=c["text"], metadata={"chunk_id": c["chunk_id"]}) for c in scenario.corpus()]
        prompt = ChatPromptTemplate.from_messages(
            [("system", "Answer only from these sources and cite them as [n].\n\n{context}"), ("human", "{question}")]
        )
        chain = (
            {"context": KeywordRetriever(docs=docs) | RunnableLambda(fmt), "question": RunnablePassthrough()}
            | prompt
            | ScriptedChat()
            | StrOutputParser()
        )
        return str(chain.invoke(scenario.question))


# ---------------------------------------------------------------- Haystack


def run_haystack(scenario: Scenario, provider: Any) -> str:
    """A Haystack pipeline: InMemoryBM25Retriever -> filter -> PromptBuilder -> generator."""
    needs("haystack", "Haystack")
    needs("openinference.instrumentation.haystack", "Haystack's OpenInference instrumentor")
    from haystack import Document, Pipeline
    from haystack.components.builders import PromptBuilder
    from haystack.components.retrievers.in_memory import InMemoryBM25Retriever
    from haystack.document_stores.in_memory import InMemoryDocumentStore
    from openinference.instrumentation.haystack import HaystackInstrumentor

    from tests.oi_haystack_components import Keep, ScriptedGenerator

    with traced_by(HaystackInstrumentor, provider):
        store = InMemoryDocumentStore()
        store.write_documents([Document(id=c["chunk_id"], content=c["text"]) for c in scenario.corpus()])
        template = (
            "Answer only from these sources and cite them as [n].\n"
            "{% for d in documents %}[{{ loop.index }}] {{ d.content }}\n{% endfor %}\nQuestion: {{ question }}"
        )
        pipe = Pipeline()
        pipe.add_component("retriever", InMemoryBM25Retriever(store, top_k=3))
        pipe.add_component("keep", Keep(scenario))
        pipe.add_component("prompt", PromptBuilder(template=template, required_variables=["documents", "question"]))
        pipe.add_component("llm", ScriptedGenerator(scenario))
        pipe.connect("retriever.documents", "keep.documents")
        pipe.connect("keep.documents", "prompt.documents")
        pipe.connect("prompt.prompt", "llm.prompt")
        out = pipe.run({"retriever": {"query": scenario.question}, "prompt": {"question": scenario.question}})
        return str(out["llm"]["replies"][0])


APPS: dict[str, Callable[..., str]] = {
    "llama_index": run_llama_index,
    "llama_index_plain": lambda scenario, provider: run_llama_index(scenario, provider, engine="plain"),
    "langchain": run_langchain,
    "haystack": run_haystack,
}


def trace_dir_for(tmp: Path, name: str) -> Path:
    return tmp / name / "traces"
