"""citeline.instrumentation: record the evidence chain of every RAG request.

``configure()`` once, then decorate the app's stages::

    configure(service_name="policy-bot", trace_dir="traces/")

    @retrieval
    def search(query): ...

    with request(question=q, case_id="returns-45d", principal="alice"):
        ...

Imports only OpenTelemetry and the standard library: it runs inside the
host app.

Besides the names below, these modules are supported and public, because the
analyzer (or a harness) reads with them what the decorators write with them:
``schema`` (the trace schema: every attribute key and enumerated value),
``labels`` (the citation label grammar), ``chunks`` (chunk identity and the
content hash), ``prompt`` (which chunks a prompt holds), ``otlp_json`` (the
trace file encoding), ``redact`` (what counts as a secret), ``settings`` (the
environment variables citeline reads) and ``testing`` (capture and perturbation
hooks). Modules named ``_*`` are machinery and may change at any time.
"""

from ._config import Citeline, configure
from ._files import OTLPJsonFileExporter, TraceFileProcessor
from ._request import RequestScope, request
from ._wrap import context_assembly, generation, render, resolution, retrieval
from .chunks import Chunk, ChunkRecord, content_hash
from .schema import SCHEMA_VERSION

__all__ = [
    "SCHEMA_VERSION",
    "Chunk",
    "ChunkRecord",
    "Citeline",
    "OTLPJsonFileExporter",
    "RequestScope",
    "TraceFileProcessor",
    "configure",
    "content_hash",
    "context_assembly",
    "generation",
    "render",
    "request",
    "resolution",
    "retrieval",
]
