"""A strict OpenAI-compatible chat endpoint on loopback whose "model" reads the messages it is sent.

Stands in for a hosted model (none can run here). ``POST /v1/chat/completions`` takes the request as
a strict endpoint does: a message with a key other than ``role``, ``content`` or ``name``, or a role
it does not know, is answered HTTP 400 (and counted in ``rejected``). The answer is read off the
messages: the numbered sources of the system message (``[n] (chunk id, doc id, version) text``), the
question of the last user message, through :func:`tests.realapps.reading.pick`. With
``response_format={"type": "json_object"}`` the answer is JSON:
``{"claims": [{"text", "evidence": [{"chunk_id", "quote"}]}]}`` (an empty ``claims`` list and
``"abstained": true`` when it declines); else prose with ``[n]`` markers.
"""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from .reading import Source, pick

NOT_FOUND = "I can't find that in the city's service pages."
MESSAGE_KEYS = frozenset({"role", "content", "name"})
ROLES = frozenset({"system", "user", "assistant", "developer"})
_SOURCE = re.compile(r"^\[(\d+)\] \(([^,\n]+), ([^,\n]+), ([^)\n]+)\) (.+)$", re.M)


def _text(content: Any) -> str:
    if isinstance(content, list):  # content parts
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content or "")


def problems(body: dict[str, Any]) -> list[str]:
    """Why a strict endpoint would refuse the request (empty when it would take it)."""
    out = []
    for i, m in enumerate(body.get("messages") or []):
        if not isinstance(m, dict):
            out.append(f"messages[{i}] is not an object")
            continue
        out += [f"messages[{i}]: unknown key {k!r}" for k in sorted(set(m) - MESSAGE_KEYS)]
        if m.get("role") not in ROLES:
            out.append(f"messages[{i}]: unknown role {m.get('role')!r}")
    if not body.get("messages"):
        out.append("no messages")
    return out


def reply(messages: list[dict[str, Any]], json_mode: bool) -> str:
    """The model's answer to these messages."""
    system = "\n".join(_text(m.get("content")) for m in messages if m.get("role") in ("system", "developer"))
    question = next((_text(m.get("content")) for m in reversed(messages) if m.get("role") == "user"), "")
    sources = [Source(n, doc, version, text, chunk_id) for n, chunk_id, doc, version, text in _SOURCE.findall(system)]
    picks = pick(question, sources)
    if json_mode:
        claims = [
            {"text": f"{p.sentence}.", "evidence": [{"chunk_id": p.source.chunk_id, "quote": p.source.text}]}
            for p in picks
        ]
        return json.dumps({"claims": claims, "abstained": not claims} | ({} if claims else {"text": NOT_FOUND}))
    return " ".join(f"{p.sentence} [{p.source.label}]." for p in picks) if picks else NOT_FOUND


class ModelServer:
    """The loopback endpoint; ``url`` is the SDK's ``base_url``. Use as a context manager."""

    def __init__(self) -> None:
        self.requests = 0
        self.rejected: list[list[str]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                wrong = problems(body)
                server.requests += 1
                if wrong:
                    server.rejected.append(wrong)
                    self._send(400, {"error": {"message": "; ".join(wrong), "type": "invalid_request_error"}})
                    return
                json_mode = (body.get("response_format") or {}).get("type") == "json_object"
                content = reply(body["messages"], json_mode)
                self._send(
                    200,
                    {
                        "id": f"chatcmpl-{server.requests}",
                        "object": "chat.completion",
                        "created": 0,
                        "model": body.get("model", ""),
                        "choices": [
                            {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
                        ],
                        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
                    },
                )

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.http.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.http.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.http.serve_forever, name="realapps-model", daemon=True)

    def start(self) -> ModelServer:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.http.shutdown()
        self.http.server_close()
        self.thread.join(timeout=5)

    def __enter__(self) -> ModelServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
