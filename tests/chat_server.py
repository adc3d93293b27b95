"""A real chat-completions server on loopback, answering from a table (stands in for a hosted LLM).

No model can be downloaded here, so the model's *answers* are scripted; everything between citeline
and the model (HTTP, JSON, timeouts, retries, concurrency) is real. The table maps a claim (or a
part of one) to what the "model" does:

    {"label": "entailed"}            a valid verdict
    {"reply": "free text"}           a reply with no JSON verdict (every time)
    {"malformed_once": "entailed"}   a bad reply first, the verdict when asked again
    {"status": 500, "times": 1}      that HTTP status for the first ``times`` requests, then ``default``
    {"sleep": 5}                     answers after 5 s (longer than the client's timeout)
    {"label": ..., "fields": {...}}  a verdict with more fields in its JSON (prompt 3's bindings, ...)

With ``require_context=True`` the server checks every request for what prompt 2 must carry (the rubric
with its four labels and the instruction not to use outside knowledge; the question, the claim, and each
evidence text under its document, chunk, version and effective-date line): a request lacking any is
answered HTTP 422 and listed in ``missing`` with what it lacked. ``parse_prompt`` reads a prompt back
into its fields, for tests to compare exactly.
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class ChatServer:
    table: dict[str, dict[str, Any]]
    default: dict[str, Any] = field(default_factory=lambda: {"label": "insufficient"})
    url: str = ""
    requests: Counter[str] = field(default_factory=Counter)
    seen: list[dict[str, Any]] = field(default_factory=list)
    active: int = 0
    most_active: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)
    require_context: bool = False
    missing: list[tuple[str, list[str]]] = field(default_factory=list)

    def action(self, claim: str) -> dict[str, Any]:
        for key, act in self.table.items():
            if key in claim:
                return act
        return self.default


def _claim(messages: list[dict[str, str]]) -> str:
    for m in messages:
        if m.get("role") == "user":
            for line in m.get("content", "").splitlines():
                if line.startswith("Claim: "):
                    return line.removeprefix("Claim: ")
    return ""


_EVIDENCE_HEAD = re.compile(r"^\[(\d+)\] \((.*)\)$")
_RUBRIC = ("entailed", "contradicted", "insufficient", "not_applicable", "rationale", "outside knowledge")
_METADATA = ("document", "chunk", "version", "effective")


def parse_prompt(messages: list[dict[str, str]]) -> dict[str, Any]:
    """Prompt 2 read back: system text, question, claim, and each evidence text with its metadata fields."""
    system = next((m["content"] for m in messages if m.get("role") == "system"), "")
    user = next((m["content"] for m in messages if m.get("role") == "user"), "")
    out: dict[str, Any] = {"system": system, "question": None, "claim": None, "evidence": []}
    lines = user.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("Question: ") and out["question"] is None:
            out["question"] = line.removeprefix("Question: ")
        elif line.startswith("Claim: ") and out["claim"] is None:
            out["claim"] = line.removeprefix("Claim: ")
        elif (head := _EVIDENCE_HEAD.match(line)) is not None:
            meta = dict(part.split(": ", 1) for part in head.group(2).split("; ") if ": " in part)
            text = lines[i + 1] if i + 1 < len(lines) else ""
            out["evidence"].append({"n": int(head.group(1)), "metadata": meta, "text": text})
    return out


def lacks(messages: list[dict[str, str]]) -> list[str]:
    """What a prompt 2 request leaves out, by name (empty when it carries every field)."""
    p = parse_prompt(messages)
    gone = [f"rubric: {w}" for w in _RUBRIC if w not in p["system"]]
    gone += [f for f in ("question", "claim") if not p[f]]
    if not p["evidence"]:
        gone.append("evidence")
    for e in p["evidence"]:
        gone += [f"evidence [{e['n']}] {k}" for k in _METADATA if k not in e["metadata"]]
    return gone


def _handler(server: ChatServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # quiet
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            claim = _claim(body["messages"])
            with server.lock:
                server.requests[claim] += 1
                n = server.requests[claim]
                server.seen.append(body)
                server.active += 1
                server.most_active = max(server.most_active, server.active)
            act = server.action(claim)
            gone = lacks(body["messages"]) if server.require_context else []
            if gone:
                with server.lock:
                    server.missing.append((claim, gone))
                    server.active -= 1
                self.send_response(422)
                self.end_headers()
                self.wfile.write(json.dumps({"error": "prompt lacks " + ", ".join(gone)}).encode())
                return
            time.sleep(float(act.get("sleep", 0.02)))  # a little latency, so concurrency shows
            with server.lock:  # counted as done before the answer leaves, so the next request cannot overlap it
                server.active -= 1
            # the client may have given up (its timeout): that is what the test wanted
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                self._answer(body, act, n)

        def _answer(self, body: dict[str, Any], act: dict[str, Any], n: int) -> None:
            if "status" in act and n <= int(act.get("times", 10**9)):
                self.send_response(int(act["status"]))
                self.end_headers()
                self.wfile.write(b'{"error": "scripted"}')
                return
            if "status" in act:
                act = server.default
            if "reply" in act:
                content = act["reply"]
            elif "malformed_once" in act:
                asked_again = len(body["messages"]) > 2
                content = (
                    json.dumps({"label": act["malformed_once"], "rationale": "scripted, asked again"})
                    if asked_again
                    else "Sure! The claim looks fine to me."
                )
            else:
                label = act.get("label", "entailed")
                content = json.dumps({"label": label, "rationale": f"scripted {label}", **act.get("fields", {})})
            prompt_words = sum(len(m["content"].split()) for m in body["messages"])
            payload = {
                "id": "chatcmpl-test",
                "object": "chat.completion",
                "model": body["model"],
                "choices": [
                    {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
                ],
                "usage": {"prompt_tokens": prompt_words, "completion_tokens": 10, "total_tokens": prompt_words + 10},
            }
            data = json.dumps(payload).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler


@contextmanager
def chat_server(
    table: dict[str, dict[str, Any]], default: dict[str, Any] | None = None, require_context: bool = False
) -> Iterator[ChatServer]:
    state = ChatServer(table, default or {"label": "insufficient"}, require_context=require_context)
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    httpd.daemon_threads = True
    state.url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    thread = threading.Thread(target=httpd.serve_forever, name="chat-server", daemon=True)
    thread.start()
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)
