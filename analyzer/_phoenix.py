"""Arize Phoenix both ways: pull spans into the store, push failures back as span annotations.

Pull goes through the same door as trace files: spans fetched with
``arize-phoenix-client`` are written as OTLP/JSON lines (one trace per line)
next to the store and ingested by ``queries/ingest_spans.sql``. It is
incremental: the newest span start seen per (server, project) is kept in the
store's ``meta`` table and the next pull starts there.

Annotate writes one annotation named ``citeline`` per failing claim onto the
span where the chain broke (label = bucket, explanation = reason, identifier =
the claim, so claims sharing a span do not overwrite each other). Phoenix keys
annotations by (name, span, identifier), so re-running updates, never
duplicates. The API key comes from ``PHOENIX_API_KEY``, never a flag.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import orjson

from citeline.instrumentation._otlp_json import key_values

from ._ingest import IngestReport, ingest

NAME = "citeline"
BATCH = 100


class PhoenixError(Exception):
    """Phoenix could not be used; the message says why and what to do."""


def _client(url: str) -> Any:
    from phoenix.client import Client

    return Client(base_url=url, api_key=os.environ.get("PHOENIX_API_KEY") or None)


def _explain(exc: Exception, url: str, project: str | None = None) -> PhoenixError:
    import httpx

    if isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout):
        return PhoenixError(f"cannot reach Phoenix at {url} ({exc}); is it running? check --phoenix")
    if isinstance(exc, httpx.TimeoutException):
        return PhoenixError(f"Phoenix at {url} did not answer in time; try again or check the server")
    if isinstance(exc, httpx.HTTPStatusError):
        code = exc.response.status_code
        if code in (401, 403):
            return PhoenixError(
                f"Phoenix at {url} refused the request ({code}): it requires authentication; "
                "set PHOENIX_API_KEY to a key with access"
            )
        if code == 404 and project is not None:
            return PhoenixError(
                f"no project {project!r} in Phoenix at {url}; check --project "
                "(the Phoenix UI lists projects on its home page)"
            )
        return PhoenixError(f"Phoenix at {url} answered {code}: {exc.response.text[:200]}")
    return PhoenixError(f"talking to Phoenix at {url} failed: {type(exc).__name__}: {exc}")


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


def _ns(ts: Any) -> int:
    if isinstance(ts, str):
        ts = dt.datetime.fromisoformat(ts)
    if isinstance(ts, dt.datetime):
        if ts.tzinfo is None:
            ts = ts.replace(tzinfo=dt.UTC)
        return int(ts.timestamp() * 1e9)
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
    limit: int = 1_000_000,
) -> PullReport:
    """Fetch spans newer than the last pull (or ``since``) and ingest them."""
    key = f"pull:{url.rstrip('/')}:{project}"
    rows = con.execute("SELECT value FROM meta WHERE key = ?", [key]).fetchall()
    start = _since(since)
    if rows:
        last = dt.datetime.fromisoformat(rows[0][0])
        start = max(start, last) if start else last
    try:
        spans = _client(url).spans.get_spans(project_identifier=project, start_time=start, limit=limit, timeout=60)
    except Exception as exc:
        raise _explain(exc, url, project) from exc
    report = PullReport(spans=len(spans))
    if not spans:
        return report
    traces: dict[str, list[dict[str, Any]]] = {}
    newest = start or dt.datetime.fromtimestamp(0, dt.UTC)
    for s in spans:
        traces.setdefault(s["context"]["trace_id"], []).append(_otlp_span(s))
        st = s.get("start_time")
        st = dt.datetime.fromisoformat(st) if isinstance(st, str) else st
        if isinstance(st, dt.datetime):
            st = st if st.tzinfo else st.replace(tzinfo=dt.UTC)
            newest = max(newest, st)
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
    con.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", [key, newest.isoformat()])
    return report


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "-" for c in name) or "project"


# --- annotate ----------------------------------------------------------------------------


@dataclass
class AnnotateReport:
    run_id: str
    annotations: int = 0
    batches: int = 0
    missing_spans: list[str] = field(default_factory=list)


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
                "result": {"label": bucket, "score": 0.0, "explanation": reason or ""},
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


def _batches(items: Sequence[dict[str, Any]], size: int) -> Iterable[Sequence[dict[str, Any]]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


def annotate(con: duckdb.DuckDBPyConnection, url: str, run_id: str) -> AnnotateReport:
    """Post one annotation per failing claim of ``run_id``, in batches, synchronously."""
    import httpx

    report = AnnotateReport(run_id)
    rows = annotation_rows(con, run_id)
    client = _client(url)
    for batch in _batches(rows, BATCH):
        try:
            client.spans.log_span_annotations(span_annotations=list(batch), sync=True)
            report.annotations += len(batch)
            report.batches += 1
            continue
        except httpx.HTTPStatusError as exc:
            if exc.response.status_code != 404:
                raise _explain(exc, url) from exc
        except Exception as exc:
            raise _explain(exc, url) from exc
        # a span Phoenix does not know sinks the whole batch: post one by one to name it
        for item in batch:
            try:
                client.spans.log_span_annotations(span_annotations=[item], sync=True)
                report.annotations += 1
            except httpx.HTTPStatusError as exc:
                if exc.response.status_code != 404:
                    raise _explain(exc, url) from exc
                report.missing_spans.append(item["span_id"])
            except Exception as exc:
                raise _explain(exc, url) from exc
        report.batches += 1
    return report
