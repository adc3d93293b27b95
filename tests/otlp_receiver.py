"""A loopback OTLP/HTTP logs receiver: decodes each ``ExportLogsServiceRequest`` with opentelemetry-proto
(the real wire format a Collector reads), keeps the records and the headers it was sent.

No Collector binary can be installed where the suite runs; this decodes the same protobuf a Collector's
``otlphttp`` receiver does and answers as it does (an ``ExportLogsServiceResponse``)."""

from __future__ import annotations

import gzip
import threading
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest, ExportLogsServiceResponse
from opentelemetry.proto.common.v1.common_pb2 import AnyValue


def plain(v: AnyValue) -> Any:
    """An OTLP AnyValue as a Python value."""
    which = v.WhichOneof("value")
    if which == "array_value":
        return [plain(x) for x in v.array_value.values]
    return None if which is None else getattr(v, which)


@dataclass
class Received:
    """One decoded log record with its resource and scope."""

    trace_id: str
    span_id: str
    event_name: str
    severity: int
    attributes: dict[str, Any]
    resource: dict[str, Any]
    scope: str


@dataclass
class Receiver:
    url: str
    requests: list[dict[str, str]] = field(default_factory=list)  # the headers of each request
    records: list[Received] = field(default_factory=list)
    status: int = 200  # what the next requests are answered with


@contextmanager
def otlp_receiver() -> Iterator[Receiver]:
    """Listen on 127.0.0.1 (a free port) until the block ends; ``url`` is the base (``/v1/logs`` is served)."""
    state = Receiver("")
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            encoding = (self.headers.get("Content-Encoding") or "").lower()
            if encoding == "gzip":
                body = gzip.decompress(body)
            elif encoding == "deflate":
                body = zlib.decompress(body)
            with lock:
                state.requests.append({k.lower(): v for k, v in self.headers.items()})
                status = state.status
            if self.path != "/v1/logs" or status != 200:
                self.send_response(404 if self.path != "/v1/logs" else status)
                self.end_headers()
                return
            request = ExportLogsServiceRequest()
            request.ParseFromString(body)
            got = []
            for rl in request.resource_logs:
                resource = {a.key: plain(a.value) for a in rl.resource.attributes}
                for sl in rl.scope_logs:
                    for rec in sl.log_records:
                        got.append(
                            Received(
                                rec.trace_id.hex(),
                                rec.span_id.hex(),
                                rec.event_name,
                                rec.severity_number,
                                {a.key: plain(a.value) for a in rec.attributes},
                                resource,
                                sl.scope.name,
                            )
                        )
            with lock:
                state.records += got
            out = ExportLogsServiceResponse().SerializeToString()
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)

        def log_message(self, format: str, *args: Any) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
