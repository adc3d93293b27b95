"""A hand-written RAG app on the real ``openai`` SDK and a real in-process vector store (Qdrant, local
mode), traced two ways:

* ``decorated``: every citeline decorator (request, retrieval, context assembly, generation,
  resolution, render);
* ``instrumented``: OpenInference's ``OpenAIInstrumentor`` for the LLM calls, plus ``@retrieval``
  on the app's own search and ``request()`` around each question, as docs/openinference.md and the
  README's "A plain OpenAI-SDK app" invite. No context step is traced: what reached the model is
  read off the LLM span's prompt, with the chunk text ``@retrieval`` recorded.

Only the model is scripted (a hosted LLM cannot run here): a chat-completions server on loopback
answers, plainly, streamed (``stream=True``) or as JSON (``response_format={"type": "json_object"}``),
what the scenario says, writing each ``{chunk_id}`` as the label the prompt gave that chunk. The
embedding is a hashed bag of words for the same reason.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

from citeline.instrumentation import context_assembly, generation, render, request, resolution, retrieval
from tests.extras import needs
from tests.oi_apps import CORPUS, TEXT, Scenario, label_of

if TYPE_CHECKING:
    from openai.types.chat import ChatCompletionMessageParam

PUBLIC = {"id": "bob", "groups": ["public"]}
STAGES = frozenset({"retrieval", "context", "generation", "resolution", "render"})
MODEL = "scripted-model"
SYSTEM = "Answer only from these sources and cite each fact as [n], the number of its source."


# ------------------------------------------------------------------ the model (stands in for a hosted LLM)


def _prompt(messages: list[dict[str, Any]]) -> str:
    return "\n\n".join(str(m.get("content") or "") for m in messages)


def _as_json(prose: str, prompt: str) -> str:
    """The scripted answer as the seed articles' schema: answerText, claims[].evidence[].sourceId."""
    claims = []
    for sentence in re.split(r"(?<=[.!?])\s+", prose.strip()):
        labels = re.findall(r"\[(\w+)\]", sentence)
        text = re.sub(r"\s*\[\w+\]", "", sentence).strip()
        evidence = []
        for label in labels:
            quoted = next((t for cid, t in TEXT.items() if _label_or_none(prompt, cid) == label), "")
            evidence.append({"sourceId": label, "quotedText": quoted[:40]})
        claims.append({"text": text, "evidence": evidence})
    return json.dumps({"answerText": prose, "claims": claims})


def _label_or_none(prompt: str, chunk_id: str) -> str | None:
    try:
        return label_of(prompt, chunk_id)
    except AssertionError:
        return None


class ChatServer:
    """POST /v1/chat/completions: the scenario's answer (header X-Script) for the prompt it was sent."""

    def __init__(self, script: Scenario | None = None) -> None:
        server = self
        self.script = script  # the answer when a request carries no X-Script (an app that is not ours)

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                given = self.headers.get("X-Script")
                script = Scenario(**json.loads(given)) if given else server.script
                assert script is not None, "no X-Script header and no script for the server"
                prompt = _prompt(body["messages"])
                text = script.say(prompt)
                if (body.get("response_format") or {}).get("type") == "json_object":
                    text = _as_json(text, prompt)
                server.requests += 1
                if body.get("stream"):
                    self._stream(text)
                else:
                    self._plain(text)

            def _plain(self, text: str) -> None:
                payload = json.dumps(
                    {
                        "id": "chatcmpl-1",
                        "object": "chat.completion",
                        "created": 0,
                        "model": MODEL,
                        "choices": [
                            {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
                        ],
                        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
                    }
                ).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def _stream(self, text: str) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                words = re.findall(r"\S+\s*", text)
                for i, piece in enumerate(words):
                    delta = {"role": "assistant", "content": piece} if i == 0 else {"content": piece}
                    chunk = {
                        "id": "chatcmpl-1",
                        "object": "chat.completion.chunk",
                        "created": 0,
                        "model": MODEL,
                        "choices": [{"index": 0, "delta": delta, "finish_reason": None}],
                    }
                    self.wfile.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
                end = {
                    "id": "chatcmpl-1",
                    "object": "chat.completion.chunk",
                    "created": 0,
                    "model": MODEL,
                    "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
                }
                self.wfile.write(b"data: " + json.dumps(end).encode() + b"\n\ndata: [DONE]\n\n")

        self.requests = 0
        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.http.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.http.serve_forever, daemon=True)

    def __enter__(self) -> ChatServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.http.shutdown()
        self.http.server_close()


# ------------------------------------------------------------------ the app


def _embed(text: str) -> list[float]:  # a hosted embedding model cannot run here: hashed bag of words
    v = [0.0] * 256
    for w in re.findall(r"[a-z0-9$%]+", text.lower()):
        v[int(hashlib.sha1(w.encode()).hexdigest(), 16) % 256] += 1.0
    return v


_INDEXES: dict[tuple[str, ...], Any] = {}


class App:
    """One question at a time: Qdrant search -> a prompt written by hand -> the openai SDK."""

    def __init__(
        self,
        base_url: str,
        scenario: Scenario,
        *,
        decorated: bool = True,
        call: str = "plain",
        faults: str = "",
        decorators: frozenset[str] | None = None,
    ):
        needs("openai", "the OpenAI SDK the app calls")
        needs("qdrant_client", "the app's in-process vector store")
        from openai import OpenAI
        from qdrant_client import QdrantClient, models

        self.client = OpenAI(base_url=base_url, api_key="sk-test-not-a-key", max_retries=0)
        self.scenario, self.decorated, self.call, self.faults = scenario, decorated, call, faults
        # this app's index has no holiday page (a superseded chunk that ranks high here would turn
        # every "cite another chunk" scenario into freshness)
        docs = [c for c in scenario.corpus() if c["chunk_id"] != "returns-holiday#window"]
        key = tuple(c["chunk_id"] for c in docs)
        if key not in _INDEXES:  # one index per corpus, built once: the app's own startup cost
            db = QdrantClient(":memory:")
            db.create_collection("kb", vectors_config=models.VectorParams(size=256, distance=models.Distance.COSINE))
            db.upsert(
                "kb",
                points=[models.PointStruct(id=i, vector=_embed(c["text"]), payload=c) for i, c in enumerate(docs)],
            )
            _INDEXES[key] = db
        self.db = _INDEXES[key]
        # which stage decorators the app carries: all of them, only @retrieval (the instrumented mode), or any subset
        on = decorators if decorators is not None else (STAGES if decorated else frozenset({"retrieval"}))
        self.search = retrieval(self._search) if "retrieval" in on else self._search
        self.build = context_assembly(self._build) if "context" in on else self._build
        gen = self._generate_stream if call == "stream" else self._generate
        self.generate = generation(gen) if "generation" in on else self._generate
        self.resolve = resolution(self._resolve) if "resolution" in on else self._resolve
        self.show = render(self._render) if "render" in on else self._render

    def _search(self, query: str) -> list[dict[str, Any]]:
        hits = self.db.query_points("kb", query=_embed(query), limit=3).points
        return [
            {k: h.payload[k] for k in ("doc_id", "chunk_id", "version", "text", "uri", "title") if k in h.payload}
            | {"score": float(h.score)}
            for h in hits
            if h.payload is not None
        ]

    def _build(self, question: str, hits: list[dict[str, Any]]) -> list[dict[str, Any]]:
        kept = [h for h in hits if self.scenario.keep(h["text"])]  # a filter between retrieval and prompt
        return [{**h, "label": str(i)} for i, h in enumerate(kept, start=1)]

    def _messages(self, question: str, context: list[dict[str, Any]]) -> list[ChatCompletionMessageParam]:
        sources = "\n\n".join(f"[{c['label']}] {c['text']}" for c in context)
        return [{"role": "system", "content": f"{SYSTEM}\n\n{sources}"}, {"role": "user", "content": question}]

    def _create(self, messages: list[ChatCompletionMessageParam], **kw: Any) -> Any:
        script = {k: getattr(self.scenario, k) for k in ("question", "answer", "bucket", "stage")}
        script["left_out_of_index"] = list(self.scenario.left_out_of_index)
        script["dropped_before_prompt"] = list(self.scenario.dropped_before_prompt)
        if self.call == "json":
            kw["response_format"] = {"type": "json_object"}
        return self.client.chat.completions.create(
            model=MODEL, messages=messages, extra_headers={"X-Script": json.dumps(script)}, **kw
        )

    def _generate(self, messages: list[ChatCompletionMessageParam]) -> str:
        if self.call == "stream":
            return "".join(c.choices[0].delta.content or "" for c in self._create(messages, stream=True) if c.choices)
        return str(self._create(messages).choices[0].message.content)

    def _generate_stream(self, messages: list[ChatCompletionMessageParam]) -> Iterator[str]:
        for c in self._create(messages, stream=True):
            if c.choices and c.choices[0].delta.content:
                yield c.choices[0].delta.content

    def _resolve(self, answer: str, context: list[dict[str, Any]]) -> list[dict[str, str]]:
        rows = [{"marker": c["label"], "chunk_id": c["chunk_id"], "version": c.get("version", "")} for c in context]
        if "resolver-off-by-one" in self.faults and len(rows) > 1:  # the resolver's own bug
            ids = [r["chunk_id"] for r in rows]
            rows = [{**r, "chunk_id": ids[(i + 1) % len(ids)]} for i, r in enumerate(rows)]
        return rows

    def _render(self, resolved: list[dict[str, str]]) -> list[dict[str, str]]:
        uri = {c["chunk_id"]: c["uri"] for c in CORPUS}
        return [{"label": r["marker"], "chunk_id": r["chunk_id"], "uri": uri.get(r["chunk_id"], "")} for r in resolved]

    def ask(self) -> str:
        """Answer the scenario's question; the trace id of the request."""
        from opentelemetry import trace

        q = self.scenario.question
        with request(question=q, principal=PUBLIC, as_of="2026-08-10"):
            trace_id = f"{trace.get_current_span().get_span_context().trace_id:032x}"
            context = self.build(q, self.search(q))
            messages = self._messages(q, context)
            raw = self.generate(messages)
            answer = raw if isinstance(raw, str) else "".join(raw)
            self.show(self.resolve(answer, context))
        return trace_id


@contextmanager
def openai_instrumented(provider: Any) -> Iterator[None]:
    """OpenAIInstrumentor on for the process (once, as an app does at start-up), spans to ``provider``."""
    needs("openinference.instrumentation.openai", "the OpenAI SDK's OpenInference instrumentor")
    from openinference.instrumentation.openai import OpenAIInstrumentor

    from tests.oi_apps import traced_by

    with traced_by(OpenAIInstrumentor, provider):
        yield
