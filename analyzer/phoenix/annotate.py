"""Arize Phoenix both ways: pull spans into the store, push failures back as span annotations.

Both use Phoenix's REST API (``GET /v1/projects/{p}/spans``, ``POST
/v1/span_annotations?sync=true``), the endpoints ``arize-phoenix-client`` wraps,
called with its own HTTP library: importing ``phoenix.client`` where the Phoenix
server package is installed too (our test and compose images) imports the whole
server and costs about ten seconds per command.

Pull goes through the same door as trace files: spans fetched from Phoenix
are written as OTLP/JSON lines (one trace per line)
next to the store and ingested by ``queries/ingest_spans.sql``. It is
incremental: the newest span start seen per (server, project) is kept in the
store's ``meta`` table, in nanoseconds, and the next pull starts ``overlap``
(default one hour) before it: a span reaches Phoenix when it *ends*, so a
request span still open during one pull starts before that pull's newest
span. Spans pulled twice are stored once. Pages are fetched until Phoenix
has no more.

Annotate writes one annotation named ``citeline`` per failing claim onto the
span where the chain broke (label = bucket, explanation = reason, identifier =
the claim, so claims sharing a span do not overwrite each other; no score, so
Phoenix shows the bucket), and one named ``citeline.trace`` per joined trace on
its request span (label = the trace's verdict, explanation = its claims per
bucket). Phoenix keys annotations by (name, span, identifier), so re-running
updates, never duplicates. A verdict is only written onto a span of its own trace: a span id another
trace in the store holds too is skipped and named (``analyzer/targets.py``). The API key comes from
``PHOENIX_API_KEY``, never a flag.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import orjson

from citeline.analyzer.escaping import is_span_id
from citeline.analyzer.problems import Problem
from citeline.analyzer.sources.ingest import IngestReport, ingest
from citeline.analyzer.targets import foreign_spans
from citeline.instrumentation._otlp_json import key_values
from citeline.instrumentation._redact import redact_text, redact_url

NAME = "citeline"
BATCH = 100


class PhoenixError(Exception):
    """Phoenix could not be used; the message says why and what to do."""


class _Rest:
    """The few Phoenix REST calls citeline makes; errors are raised as httpx errors."""

    def __init__(self, url: str, timeout: float = 60.0) -> None:
        import httpx

        key = os.environ.get("PHOENIX_API_KEY")
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        # credentials in the URL (user:password@) go as basic auth, so the URL httpx logs has none
        parts = httpx.URL(url.rstrip("/"))
        auth = (parts.username, parts.password) if parts.username or parts.password else None
        base = parts.copy_with(username=None, password=None) if auth else parts
        self.http = httpx.Client(base_url=base, headers=headers, timeout=timeout, auth=auth)

    def annotate_documents(self, items: Sequence[dict[str, Any]]) -> None:
        resp = self.http.post("/v1/document_annotations", params={"sync": "true"}, json={"data": list(items)})
        resp.raise_for_status()

    def spans(self, project: str, start: dt.datetime | None, page_size: int) -> list[dict[str, Any]]:
        """Every span starting at or after ``start``, page after page until Phoenix has no more."""
        out: list[dict[str, Any]] = []
        cursor: str | None = None
        while True:
            params: dict[str, Any] = {"limit": page_size}
            if start is not None:
                params["start_time"] = start.isoformat()
            if cursor:
                params["cursor"] = cursor
            resp = self.http.get(f"/v1/projects/{project}/spans", params=params)
            resp.raise_for_status()
            body = resp.json()
            out += body["data"]
            cursor = body.get("next_cursor")
            if not cursor:
                return out

    def annotate(self, items: Sequence[dict[str, Any]]) -> None:
        resp = self.http.post("/v1/span_annotations", params={"sync": "true"}, json={"data": list(items)})
        resp.raise_for_status()

    def close(self) -> None:
        self.http.close()


def _explain(exc: Exception, url: str, project: str | None = None) -> PhoenixError:
    """One clear message per failure; the URL's credentials and the API key never in it."""
    import httpx

    key = os.environ.get("PHOENIX_API_KEY")
    shown = redact_url(url)
    if isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout):
        why = redact_text(str(exc), [key])
        return PhoenixError(f"cannot reach Phoenix at {shown} ({why}); is it running? check --phoenix")
    if isinstance(exc, httpx.TimeoutException):
        return PhoenixError(f"Phoenix at {shown} did not answer in time; try again or check the server")
    if isinstance(exc, httpx.HTTPStatusError):
        code = exc.response.status_code
        if code in (401, 403):
            return PhoenixError(
                f"Phoenix at {shown} refused the request ({code}): it requires authentication; "
                "set PHOENIX_API_KEY to a key with access"
            )
        if code == 404 and project is not None:
            return PhoenixError(
                f"no project {project!r} in Phoenix at {shown}; check --project "
                "(the Phoenix UI lists projects on its home page)"
            )
        body = redact_text(exc.response.text[:200], [key])
        return PhoenixError(f"Phoenix at {shown} answered {code}: {body}")
    why = redact_text(f"{type(exc).__name__}: {exc}", [key])
    return PhoenixError(f"talking to Phoenix at {shown} failed: {why}")


# --- pull -------------------------------------------------------------------------------


@dataclass
class PullReport:
    spans: int = 0
    traces: int = 0
    file: Path | None = None
    ingest: IngestReport = field(default_factory=IngestReport)


def _since(text: str | None) -> dt.datetime | None:
    """'24h', '7d', '30m' or an ISO time."""
    if not text:
        return None
    units = {"m": "minutes", "h": "hours", "d": "days"}
    if text[-1:] in units and text[:-1].isdigit():
        return dt.datetime.now(dt.UTC) - dt.timedelta(**{units[text[-1]]: int(text[:-1])})
    try:
        parsed = dt.datetime.fromisoformat(text)
    except ValueError as exc:
        raise PhoenixError(f"--since {text!r}: give a duration such as 24h, 7d, 30m or an ISO time") from exc
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.UTC)


_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_ISO = re.compile(r"^(?P<base>[^.]*T\d\d:\d\d:\d\d)(?:\.(?P<frac>\d+))?(?P<zone>Z|[+-]\d\d:?\d\d)?$")


def _ns(ts: Any) -> int:
    """Nanoseconds since the epoch, in integers all the way (a float loses the last digits)."""
    if isinstance(ts, int):
        return ts
    if isinstance(ts, str):
        m = _ISO.match(ts.strip())
        if m is None:
            raise ValueError(f"not an ISO time: {ts!r}")
        zone = m.group("zone") or "+00:00"
        whole = dt.datetime.fromisoformat(m.group("base") + ("+00:00" if zone == "Z" else zone))
        frac = int((m.group("frac") or "0").ljust(9, "0")[:9])
        seconds: int = (whole - _EPOCH) // dt.timedelta(seconds=1)
        return seconds * 1_000_000_000 + frac
    if isinstance(ts, dt.datetime):
        if ts.tzinfo is None:
            ts = ts.replace(tzinfo=dt.UTC)
        micros: int = (ts - _EPOCH) // dt.timedelta(microseconds=1)
        return micros * 1000
    return int(ts or 0)


_KIND = {"SERVER": 2, "CLIENT": 3, "PRODUCER": 4, "CONSUMER": 5}


def _otlp_span(s: dict[str, Any]) -> dict[str, Any]:
    """A Phoenix v1 span -> an OTLP/JSON span, so pulled spans ingest like trace files."""
    attrs = dict(s.get("attributes") or {})
    kind = s.get("span_kind")
    if kind and "openinference.span.kind" not in attrs:
        attrs["openinference.span.kind"] = kind
    out: dict[str, Any] = {
        "traceId": s["context"]["trace_id"],
        "spanId": s["context"]["span_id"],
        "name": s.get("name") or "",
        "kind": 1,
        "startTimeUnixNano": str(_ns(s.get("start_time"))),
        "endTimeUnixNano": str(_ns(s.get("end_time"))),
        "attributes": key_values({k: v for k, v in attrs.items() if v is not None}),
        "status": {
            "code": 2 if s.get("status_code") == "ERROR" else 0,
            "message": s.get("status_message") or "",
        },
    }
    if s.get("parent_id"):
        out["parentSpanId"] = s["parent_id"]
    return out


def pull(
    con: duckdb.DuckDBPyConnection,
    url: str,
    project: str,
    *,
    since: str | None = None,
    folder: Path,
    page_size: int = 1000,
    overlap: dt.timedelta = dt.timedelta(hours=1),
) -> PullReport:
    """Fetch spans newer than the last pull minus ``overlap`` (or ``since``) and ingest them."""
    # the watermark is kept per server and project, under the URL without its credentials (a store
    # made before kept the URL as given: its row moves to the redacted key)
    key = f"pull:{redact_url(url.rstrip('/'))}:{project}"
    raw_key = f"pull:{url.rstrip('/')}:{project}"
    if raw_key != key:
        con.execute(
            "UPDATE meta SET key = $k WHERE key = $raw AND NOT EXISTS (SELECT 1 FROM meta WHERE key = $k)",
            {"k": key, "raw": raw_key},
        )
        con.execute("DELETE FROM meta WHERE key = $raw", {"raw": raw_key})
    rows = con.execute("SELECT value FROM meta WHERE key = ?", [key]).fetchall()
    start = _since(since)
    if rows:
        last = _EPOCH + dt.timedelta(microseconds=_watermark(rows[0][0]) // 1000) - overlap
        start = max(start, last) if start else last
    rest = _Rest(url)
    try:
        spans = rest.spans(project, start, page_size)
    except Exception as exc:  # every failure becomes one clear message
        raise _explain(exc, url, project) from exc
    finally:
        rest.close()
    report = PullReport(spans=len(spans))
    if not spans:
        return report
    traces: dict[str, list[dict[str, Any]]] = {}
    newest_ns = _watermark(rows[0][0]) if rows else 0
    for s in spans:
        span = _otlp_span(s)
        traces.setdefault(span["traceId"], []).append(span)
        newest_ns = max(newest_ns, int(span["startTimeUnixNano"]))
    resource = {"attributes": key_values({"service.name": f"phoenix:{project}"})}
    folder.mkdir(parents=True, exist_ok=True)
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S%f")
    path = folder / f"phoenix-{_safe(project)}-{stamp}.jsonl"
    with open(path, "wb") as f:
        for spans_of_trace in traces.values():
            request = {
                "resourceSpans": [
                    {
                        "resource": resource,
                        "scopeSpans": [{"scope": {"name": "phoenix"}, "spans": spans_of_trace}],
                    }
                ]
            }
            f.write(orjson.dumps(request) + b"\n")
    report.traces = len(traces)
    report.file = path
    report.ingest = ingest(con, [path])
    con.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", [key, str(newest_ns)])
    return report


def _watermark(value: str) -> int:
    """The stored newest span start: nanoseconds (older stores kept an ISO time)."""
    return int(value) if value.isdigit() else _ns(value)


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "-" for c in name) or "project"


# --- annotate ----------------------------------------------------------------------------


@dataclass
class AnnotateReport:
    run_id: str
    annotations: int = 0
    batches: int = 0
    missing_spans: list[str] = field(default_factory=list)
    trace_annotations: int = 0
    document_annotations: int = 0
    #: span ids that are not OTLP span ids (16 hex digits): never sent, named here
    invalid_spans: list[str] = field(default_factory=list)
    #: retrieved chunks with no OpenInference document on their span (the span's attribute limit):
    #: Phoenix holds no document at that position, so none is annotated there
    documents_not_held: int = 0
    #: annotations Phoenix refused, one (span, reason) each; the others still landed
    rejected: list[tuple[str, str]] = field(default_factory=list)
    #: verdicts not written because their span id is not only their own trace's (analyzer/targets.py):
    #: Phoenix keys annotations by span id, so they could land on another trace's span
    not_own_spans: list[Problem] = field(default_factory=list)


def claim_identifier(trace_id: str, case_id: str | None, gold_claim_id: str | None, claim_text: str | None) -> str:
    """Stable per claim and trace, so claims sharing a span keep separate annotations."""
    claim = gold_claim_id or "text:" + hashlib.sha1((claim_text or "").encode()).hexdigest()[:12]
    return f"{case_id or '-'}/{claim}/{trace_id[:16]}"


def annotation_rows(con: duckdb.DuckDBPyConnection, run_id: str) -> list[dict[str, Any]]:
    rows = con.execute(
        "SELECT trace_id, case_id, gold_claim_id, claim_text, bucket, stage, span_id, reason, flags "
        "FROM claim_results WHERE run_id = ? AND bucket <> 'ok' AND span_id IS NOT NULL "
        "ORDER BY span_id, case_id, gold_claim_id, claim_text",
        [run_id],
    ).fetchall()
    out = []
    for trace_id, case_id, gold_claim_id, claim_text, bucket, stage, span_id, reason, flags in rows:
        out.append(
            {
                "span_id": span_id,
                "name": NAME,
                "annotator_kind": "CODE",
                "identifier": claim_identifier(trace_id, case_id, gold_claim_id, claim_text),
                # no score: Phoenix's chip then reads the label (the bucket), not "μ 0.00"
                "result": {"label": bucket, "explanation": reason or ""},
                "metadata": {
                    "run_id": run_id,
                    "case_id": case_id,
                    "gold_claim_id": gold_claim_id,
                    "claim_text": claim_text,
                    "stage": stage,
                    "flags": list(flags or []),
                    "trace_id": trace_id,
                },
            }
        )
    return out


TRACE_NAME = "citeline.trace"


def trace_annotation_rows(con: duckdb.DuckDBPyConnection, run_id: str) -> list[dict[str, Any]]:
    """One summary per joined trace on its request (root) span: label = the trace's verdict, every trace."""
    rows = con.execute(
        """
        SELECT c.trace_id, c.case_id, c.verdict, r.span_id,
               (SELECT list(b ORDER BY b) FROM (SELECT bucket || ' ' || count(*) AS b FROM claim_results k
                 WHERE k.run_id = c.run_id AND k.trace_id = c.trace_id GROUP BY bucket)) AS counts
        FROM case_results AS c
        JOIN (SELECT trace_id, min(span_id) AS span_id FROM spans WHERE stage = 'request' GROUP BY trace_id) AS r
          USING (trace_id)
        WHERE c.run_id = $r
        ORDER BY c.trace_id
        """,
        {"r": run_id},
    ).fetchall()
    return [
        {
            "span_id": span_id,
            "name": TRACE_NAME,
            "annotator_kind": "CODE",
            "identifier": "trace",
            "result": {"label": verdict, "explanation": "claims: " + ", ".join(counts or [])},
            "metadata": {"run_id": run_id, "case_id": case_id, "trace_id": trace_id},
        }
        for trace_id, case_id, verdict, span_id, counts in rows
    ]


DOCUMENT_NAME = "citeline.gold_relevance"


def documents_not_held(con: duckdb.DuckDBPyConnection, run_id: str) -> int:
    """Retrieved chunks of the run's traces that have no OpenInference document on their span."""
    rows = con.execute(
        "SELECT coalesce(sum(s.docs_omitted), 0) FROM case_results AS c "
        "JOIN spans AS s ON s.trace_id = c.trace_id AND s.stage = 'retrieval' WHERE c.run_id = $r",
        {"r": run_id},
    ).fetchall()
    return int(rows[0][0])


def document_annotation_rows(con: duckdb.DuckDBPyConnection, run_id: str, kind: str = "CODE") -> list[dict[str, Any]]:
    """Each document of each retrieval span of a joined trace: score 1 when it is a gold support chunk
    of the trace's case, else 0 (by chunk id, in the order the span recorded them; a document the run
    joined to a gold chunk by content or a derived id is judged as that chunk: run_span_chunks).

    ``kind`` is the annotator kind: CODE (what it is). Phoenix 20.x computes its retrieval metrics (NDCG,
    precision, hit) only from document annotations of kind LLM; ``annotate(..., documents_as_llm=True)``
    writes LLM so they appear, at the price of a kind that is not true."""
    rows = con.execute(
        """
        SELECT s.trace_id, s.span_id, coalesce(j.chunk_ids, s.chunk_id) AS chunk_id,
               coalesce(r.chunk_ids, []) AS support,
               -- Phoenix holds a document per position the span wrote one for
               len(s.chunk_id) - coalesce(s.docs_omitted, 0) AS held
        FROM case_results AS c
        JOIN spans AS s ON s.trace_id = c.trace_id AND s.stage = 'retrieval'
        LEFT JOIN run_support AS r ON r.run_id = c.run_id AND r.case_id = c.case_id
        LEFT JOIN run_span_chunks AS j ON j.run_id = c.run_id AND j.span_id = s.span_id
        WHERE c.run_id = $r AND len(s.chunk_id) > 0
        ORDER BY s.span_id
        """,
        {"r": run_id},
    ).fetchall()
    out = []
    for trace_id, span_id, chunk_ids, support, held in rows:
        wanted = set(support)
        for position, chunk_id in enumerate(chunk_ids[: max(0, held)]):
            hit = chunk_id in wanted
            out.append(
                {
                    "span_id": span_id,
                    "document_position": position,
                    "name": DOCUMENT_NAME,
                    "annotator_kind": kind,
                    "result": {"label": "support" if hit else "not support", "score": 1.0 if hit else 0.0},
                    "metadata": {"run_id": run_id, "chunk_id": chunk_id, "trace_id": trace_id},
                }
            )
    return out


def _batches(items: Sequence[dict[str, Any]], size: int) -> Iterable[Sequence[dict[str, Any]]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


def annotate(con: duckdb.DuckDBPyConnection, url: str, run_id: str, documents_as_llm: bool = False) -> AnnotateReport:
    """Post one annotation per failing claim of ``run_id``, in batches, synchronously."""
    report = AnnotateReport(run_id)
    rows = _targets(con, annotation_rows(con, run_id) + trace_annotation_rows(con, run_id), report)
    rest = _Rest(url)
    try:
        for batch in _batches(rows, BATCH):
            taken = list(batch) if _post(rest, url, batch, report=report) else []
            if not taken:
                # a span Phoenix does not know (or refuses) sinks the whole batch: one by one, to name it
                for item in batch:
                    if _post(rest, url, [item], report=report, one=True):
                        taken.append(item)
                    elif item["span_id"] not in report.missing_spans and not _refused(report, item):
                        report.missing_spans.append(item["span_id"])
            report.annotations += sum(1 for item in taken if item["name"] == NAME)
            report.trace_annotations += sum(1 for item in taken if item["name"] == TRACE_NAME)
            report.batches += 1
        documents = _targets(con, document_annotation_rows(con, run_id, "LLM" if documents_as_llm else "CODE"), report)
        report.documents_not_held = documents_not_held(con, run_id)
        for batch in _batches(documents, BATCH):
            if _post(rest, url, batch, documents=True, report=report):
                report.document_annotations += len(batch)
                continue
            for span_id in sorted({item["span_id"] for item in batch}):  # name the span Phoenix does not know
                mine = [item for item in batch if item["span_id"] == span_id]
                if _post(rest, url, mine, documents=True, report=report, one=True):
                    report.document_annotations += len(mine)
                elif span_id not in report.missing_spans and not _refused(report, mine[0]):
                    report.missing_spans.append(span_id)
    finally:
        rest.close()
    return report


def _targets(
    con: duckdb.DuckDBPyConnection, items: list[dict[str, Any]], report: AnnotateReport
) -> list[dict[str, Any]]:
    """The items whose span id is one (a hostile trace file may name any string) and is a span of the
    item's own trace only (a hostile trace may reuse an honest trace's span id, and Phoenix keys
    annotations by span id); the rest named in the report."""
    kept = []
    for item in items:
        if is_span_id(item["span_id"]):
            kept.append(item)
        elif item["span_id"] not in report.invalid_spans:
            report.invalid_spans.append(item["span_id"])
    pairs = {(str(item["metadata"]["trace_id"]), str(item["span_id"])) for item in kept}
    refused, problems = foreign_spans(con, pairs, "phoenix")
    report.not_own_spans += [p for p in problems if p not in report.not_own_spans]
    return [item for item in kept if (str(item["metadata"]["trace_id"]), str(item["span_id"])) not in refused]


def _refused(report: AnnotateReport, item: dict[str, Any]) -> bool:
    return any(span == item["span_id"] for span, _why in report.rejected)


def _post(
    rest: _Rest,
    url: str,
    items: Sequence[dict[str, Any]],
    documents: bool = False,
    report: AnnotateReport | None = None,
    one: bool = False,
) -> bool:
    """True when Phoenix took the annotations; False when it does not know a span (404) or refused
    them (4xx: posted ``one`` span's items at a time, the refusal is named in ``report.rejected``)."""
    import httpx

    try:
        if documents:
            rest.annotate_documents(items)
        else:
            rest.annotate(items)
    except httpx.HTTPStatusError as exc:
        code = exc.response.status_code
        if code == 404:
            return False
        if report is not None and 400 <= code < 500 and code not in (401, 403):
            if one:  # this span's annotations only: name it, keep going
                why = redact_text(exc.response.text[:200], [os.environ.get("PHOENIX_API_KEY")])
                report.rejected.append((str(items[0]["span_id"]), f"HTTP {code}: {why}"))
            return False
        raise _explain(exc, url) from exc
    except Exception as exc:  # every other failure becomes one clear message
        raise _explain(exc, url) from exc
    return True
