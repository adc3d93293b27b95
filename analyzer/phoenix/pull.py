"""Pull spans from Phoenix into the store.

Pull goes through the same door as trace files: spans fetched from Phoenix
are written as OTLP/JSON lines (one trace per line)
next to the store and ingested by ``queries/ingest_spans.sql``. It is
incremental: the newest span start seen per (server, project) is kept in the
store's ``meta`` table, in nanoseconds, and the next pull starts ``overlap``
(default one hour) before it: a span reaches Phoenix when it *ends*, so a
request span still open during one pull starts before that pull's newest
span. Spans pulled twice are stored once. Pages are fetched until Phoenix
has no more.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import orjson

from citeline.analyzer.phoenix.client import PhoenixError, Rest, explain
from citeline.analyzer.sources.ingest import IngestReport, ingest
from citeline.instrumentation.otlp_json import key_values
from citeline.instrumentation.redact import redact_url
from citeline.instrumentation.schema import OI_SPAN_KIND


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
    if kind and OI_SPAN_KIND not in attrs:
        attrs[OI_SPAN_KIND] = kind
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
    rest = Rest(url)
    try:
        spans = rest.spans(project, start, page_size)
    except Exception as exc:  # every failure becomes one clear message
        raise explain(exc, url, project) from exc
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
