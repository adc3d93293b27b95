"""Zero-code apps in the pytest plugin: a LangChain app and an openai-SDK app traced by their instrumentors only.

Each suite is a real project run by pytester in a process of its own (an instrumentor and the
global tracer provider are set once per process): the app installs an ``InMemorySpanExporter`` of
its own on its provider, configures citeline at import and hands its instrumentor either
``handle.provider`` or nothing (the global provider). The fixture and the marker must capture the
instrumentor's spans, gate them (a fault fails with its bucket, stage and span; ok passes), and
the app's exporter must get none of the captured tests' spans, and the next span outside a
capture again. Only the model is scripted (a hosted LLM cannot run here): LangChain's
``SimpleChatModel`` answering from a table, and tests/openai_app.py's chat-completions server
on loopback for the openai SDK.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest

from citeline.examples.demo import gold_path
from tests.extras import needs

pytest_plugins = ["pytester"]

pytestmark = pytest.mark.slow  # each run is a python process of its own: ~10 s of CPU

INI = """
[pytest]
addopts = -p no:cacheprovider -p no:phoenix -p no:langsmith_plugin
filterwarnings =
    error
    ignore::DeprecationWarning
"""

# the app's own tracing, as the docs show it: an exporter of the app's (here in memory, to assert
# on) on each of its providers, configure() at import, each instrumentor handed handle.provider or
# nothing (the global provider). "apart": configure() is given a provider of the app's and the
# global is another; "joined": configure() joins the global provider, so handle.provider is it.
WIRING = """
import json
import re
from pathlib import Path

import yaml
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from citeline.instrumentation import configure


def _provider_with(exporter):
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider


GLOBAL_EXPORTER = InMemorySpanExporter()
trace.set_tracer_provider(_provider_with(GLOBAL_EXPORTER))
if {wiring!r} == "joined":
    handle = configure("zero-code-app", trace_dir="app-traces", record_logs=False)
    HANDLE_EXPORTER = GLOBAL_EXPORTER
else:
    HANDLE_EXPORTER = InMemorySpanExporter()
    handle = configure(
        "zero-code-app", trace_dir="app-traces", tracer_provider=_provider_with(HANDLE_EXPORTER), record_logs=False
    )
EXPORTERS = {{"handle": HANDLE_EXPORTER, "global": GLOBAL_EXPORTER}}
# None: the instrumentor finds the global provider
PROVIDERS = {{"handle": handle.provider, "global": None}}

CORPUS = [
    c for c in yaml.safe_load(Path("gold.yaml").read_text())["corpus"]
    if not c["chunk_id"].startswith(("shipping-", "staff-handbook", "returns-holiday"))
]
TEXT = {{c["chunk_id"]: c["text"] for c in CORPUS}}
QUESTION = "How fast are refunds issued to my payment method?"
RIGHT = "Refunds are issued to the original payment method within 5 business days {{returns-v4#refunds-3}}."
ANSWERS = {{"ok": RIGHT, "grounding": RIGHT.replace("5 business", "10 business")}}


def top3(query):
    words = set(re.findall(r"[a-z0-9]+", query.lower()))
    return sorted(CORPUS, key=lambda c: -len(words & set(re.findall(r"[a-z0-9]+", c["text"].lower()))))[:3]
"""

LANGCHAIN = """
from langchain_core.documents import Document
from langchain_core.language_models.chat_models import SimpleChatModel
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableLambda, RunnablePassthrough
from openinference.instrumentation.langchain import LangChainInstrumentor

LangChainInstrumentor().instrument(tracer_provider=PROVIDERS[{langchain!r}])


class KeywordRetriever(BaseRetriever):
    def _get_relevant_documents(self, query, *, run_manager):
        return [Document(page_content=c["text"], metadata={"chunk_id": c["chunk_id"]}) for c in top3(query)]


class ScriptedChat(SimpleChatModel):  # stands in for a hosted chat model: the answer of the mode asked
    mode: str = "ok"

    @property
    def _llm_type(self):
        return "scripted"

    def _call(self, messages, stop=None, run_manager=None, **kw):
        prompt = "\\n".join(str(m.content) for m in messages)

        def label(m):
            return re.search(r"\\[(\\d+)\\] " + re.escape(TEXT[m.group(1)][:30]), prompt).group(1)

        return re.sub(r"\\{([^{}]+)\\}", lambda m: "[" + label(m) + "]", ANSWERS[self.mode])


def ask_langchain(mode):
    prompt = ChatPromptTemplate.from_messages(
        [("system", "Answer only from these sources and cite them as [n].\\n\\n{context}"), ("human", "{question}")]
    )
    fmt = RunnableLambda(lambda docs: "\\n\\n".join(f"[{i}] {d.page_content}" for i, d in enumerate(docs, 1)))
    chain = (
        {"context": KeywordRetriever() | fmt, "question": RunnablePassthrough()}
        | prompt
        | ScriptedChat(mode=mode)
        | StrOutputParser()
    )
    return chain.invoke(QUESTION)
"""

OPENAI = """
from openai import OpenAI

from citeline.instrumentation import request, retrieval

if {instrumentor!r} == "openinference":
    from openinference.instrumentation.openai import OpenAIInstrumentor

    OpenAIInstrumentor().instrument(tracer_provider=PROVIDERS[{openai!r}])
    CHAT = "ChatCompletion"
else:  # OpenTelemetry's own GenAI instrumentor (message content on the span: the environment says so)
    from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor

    OpenAIInstrumentor().instrument(tracer_provider=PROVIDERS[{openai!r}])
    CHAT = "chat scripted-model"

client = OpenAI(base_url={url!r}, api_key="sk-test-not-a-key", max_retries=0)


search = retrieval(top3)  # the app's own search, decorated: the one decorator a zero-code openai app adds


def ask_openai(mode):
    script = {{"question": QUESTION, "answer": ANSWERS[mode], "bucket": mode, "stage": None}}
    with request(question=QUESTION, principal={{"id": "bob", "groups": ["public"]}}, as_of="2026-08-10"):
        hits = search(QUESTION)
        sources = "\\n\\n".join(f"[{{i}}] {{h['text']}}" for i, h in enumerate(hits, 1))
        reply = client.chat.completions.create(
            model="scripted-model",
            messages=[
                {{"role": "system", "content": "Cite each fact as [n], the number of its source.\\n\\n" + sources}},
                {{"role": "user", "content": QUESTION}},
            ],
            extra_headers={{"X-Script": json.dumps(script)}},
        )
    return reply.choices[0].message.content
"""

CAPTURED = """
import pytest

from app import CHAT, EXPORTERS, ask_langchain, ask_openai

GATE = pytest.mark.citeline(gold="gold.yaml", fail_on=["grounding>0"])


@pytest.mark.parametrize(
    ("ask", "chat"), [(ask_langchain, (8, "ScriptedChat")), (ask_openai, (3, CHAT))], ids=["langchain", "openai"]
)
def test_ok_passes(citeline, ask, chat):
    ask("ok")
    result = citeline.analyze(gold="gold.yaml")
    assert {b: n for b, n in result.summary.items() if n} == {"ok": 1}
    assert {s.context.trace_id for s in citeline.spans()} == {1}  # the capture's ids, one trace
    # the span a failure names: the instrumentor's chat span, the same number on every run
    assert [s.name for s in citeline.spans() if s.context.span_id == chat[0]] == [chat[1]]
    assert [e.get_finished_spans() for e in EXPORTERS.values()] == [(), ()]


@GATE
def test_langchain_wrong_number():
    ask_langchain("grounding")


@GATE
def test_openai_wrong_number():
    ask_openai("grounding")
"""

# runs after the captured tests (file order)
AFTER = """
from app import EXPORTERS, ask_langchain, ask_openai


def test_the_app_exports_again_once_no_capture_is_on():
    assert [e.get_finished_spans() for e in EXPORTERS.values()] == [(), ()]
    ask_langchain("ok")
    ask_openai("ok")
    names = {{w: {{s.name for s in e.get_finished_spans()}} for w, e in EXPORTERS.items()}}
    assert "ScriptedChat" in names[{langchain!r}]
    assert {generation!r} in names[{openai!r}]
    for e in EXPORTERS.values():  # the app's own random ids, not the capture's 1, 2, 3
        assert all(s.context.span_id > 2**32 for s in e.get_finished_spans())
"""


@pytest.fixture(scope="module")
def chat_url() -> Iterator[str]:
    needs("openai", "the OpenAI SDK the app calls")
    from tests.openai_app import ChatServer

    with ChatServer() as server:
        yield server.url


@pytest.mark.parametrize(
    ("wiring", "langchain", "openai", "instrumentor"),
    [
        # LangChain's instrumentor on handle.provider, OpenInference's openai one on the global provider
        ("apart", "handle", "global", "openinference"),
        # one provider, the global one configure() joined: LangChain's instrumentor finds it, OpenTelemetry's
        # GenAI instrumentor for openai is handed it as handle.provider
        ("joined", "global", "handle", "genai"),
    ],
)
def test_zero_code_langchain_and_openai_suites_are_captured_gated_and_kept_from_the_app(
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    chat_url: str,
    wiring: str,
    langchain: str,
    openai: str,
    instrumentor: str,
) -> None:
    needs("langchain_core", "LangChain")
    needs("openinference.instrumentation.langchain", "LangChain's OpenInference instrumentor")
    if instrumentor == "openinference":
        needs("openinference.instrumentation.openai", "the OpenAI SDK's OpenInference instrumentor")
        generation = "ChatCompletion"
    else:
        needs("opentelemetry.instrumentation.openai_v2", "OpenTelemetry's GenAI instrumentor for the OpenAI SDK")
        monkeypatch.setenv("OTEL_SEMCONV_STABILITY_OPT_IN", "gen_ai_latest_experimental")
        monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "span_only")
        generation = "chat scripted-model"
    shutil.copy(gold_path(), pytester.path / "gold.yaml")
    pytester.makeini(INI)
    app = (
        WIRING.format(wiring=wiring)
        + LANGCHAIN.replace("{langchain!r}", repr(langchain))
        + OPENAI.format(instrumentor=instrumentor, url=chat_url, openai=openai)
    )
    after = AFTER.format(langchain=langchain, openai=openai, generation=generation)
    pytester.makepyfile(app=app, test_a_captured=CAPTURED, test_b_after=after)
    result = pytester.runpytest_subprocess("-q", "-p", "no:randomly")
    result.assert_outcomes(passed=3, failed=2)
    # the LangChain chain's spans in order of start: RunnableSequence 1, ..., ScriptedChat 8;
    # the openai app's: the request span 1, the decorated search 2, the chat call 3
    for test, span in (
        ("test_langchain_wrong_number", "0000000000000008"),
        ("test_openai_wrong_number", "0000000000000003"),
    ):
        result.stdout.fnmatch_lines(
            [
                f"*_ {test} _*",
                "citeline: run * 1 of 1 gate failed:",
                "  1 claim is grounding (gate grounding>0)",
                "citeline: 1 of 1 claim(s) not ok:",
                f"  refund-speed/speed: grounding at generation, span {span}",
                "    reason: contradicted: states 10 bday where the gold fact is '5 business days'",
                "    claim: Refunds are issued to the original payment method within 10 business days.",
            ]
        )
