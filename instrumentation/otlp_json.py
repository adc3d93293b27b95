"""Encode finished spans and log records as OTLP/JSON (the protobuf JSON mapping).

One call produces one ``ExportTraceServiceRequest`` (or ``ExportLogsServiceRequest``) object, the
same shape the OpenTelemetry Collector's file exporter writes one per line: ids as hex, 64-bit
integers as strings, enums as numbers.

A supported, public module of ``citeline.instrumentation``: it is the trace file format of
``docs/trace-schema.md`` ("File format"), written by the file exporter and by the analyzer
where it makes trace lines itself (spans pulled from Phoenix, spans captured in a test).
"""

from __future__ import annotations

import base64
import math
from collections.abc import Mapping, Sequence
from typing import Any

from opentelemetry.sdk._logs import ReadableLogRecord
from opentelemetry.sdk.trace import ReadableSpan

try:  # orjson is a declared dependency; the fallback keeps a broken install alive
    import orjson

    def dumps(obj: Any) -> bytes:
        """Serialize to compact JSON bytes."""
        return orjson.dumps(obj)

except ImportError:  # pragma: no cover - exercised only without orjson
    import json

    def dumps(obj: Any) -> bytes:
        """Serialize to compact JSON bytes."""
        return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def _double(v: float) -> Any:
    if math.isfinite(v):
        return v
    if math.isnan(v):
        return "NaN"
    return "Infinity" if v > 0 else "-Infinity"


def any_value(v: Any) -> dict[str, Any]:  # noqa: PLR0911 - exact-type dispatch in the export hot loop
    """An OTLP AnyValue for one attribute value (exact-type checks first: this is the hot loop)."""
    t = type(v)
    if t is str:
        return {"stringValue": v}
    if t is tuple or t is list:
        return {"arrayValue": {"values": [{"stringValue": x} if type(x) is str else any_value(x) for x in v]}}
    if t is bool:
        return {"boolValue": v}
    if t is int:
        return {"intValue": str(v)}
    if t is float:
        return {"doubleValue": _double(v)}
    if v is None:
        return {}
    if isinstance(v, str):
        return {"stringValue": str(v)}
    if isinstance(v, bool):
        return {"boolValue": bool(v)}
    if isinstance(v, int):
        return {"intValue": str(int(v))}
    if isinstance(v, float):
        return {"doubleValue": _double(float(v))}
    if isinstance(v, bytes):
        return {"bytesValue": base64.b64encode(v).decode("ascii")}
    if isinstance(v, Mapping):  # a log record's body or attribute may nest (spans' never do)
        return {"kvlistValue": {"values": [{"key": str(k), "value": any_value(x)} for k, x in v.items()]}}
    if isinstance(v, Sequence):
        return {"arrayValue": {"values": [any_value(x) for x in v]}}
    return {"stringValue": str(v)}


def key_values(attrs: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """OTLP KeyValue list for an attribute mapping."""
    if not attrs:
        return []
    # BoundedAttributes wraps a plain dict; iterating that skips the Mapping ABC machinery
    items = getattr(attrs, "_dict", attrs).items()
    return [{"key": k, "value": any_value(v)} for k, v in items]


def _raw_attributes(s: ReadableSpan) -> Mapping[str, Any] | None:
    """The span's attribute dict without the read-only proxy layers (a hot path)."""
    inner = getattr(getattr(s, "_attributes", None), "_dict", None)
    return inner if isinstance(inner, dict) else s.attributes


def _span(s: ReadableSpan) -> dict[str, Any]:
    ctx = s.context
    assert ctx is not None
    out: dict[str, Any] = {
        "traceId": f"{ctx.trace_id:032x}",
        "spanId": f"{ctx.span_id:016x}",
        "name": s.name,
        "kind": s.kind.value + 1,  # OTLP enum: 0 is UNSPECIFIED, SDK's INTERNAL is 0
        "startTimeUnixNano": str(s.start_time or 0),
        "endTimeUnixNano": str(s.end_time or 0),
        "attributes": key_values(_raw_attributes(s)),
    }
    if s.parent is not None:
        out["parentSpanId"] = f"{s.parent.span_id:016x}"
    if s.dropped_attributes:
        out["droppedAttributesCount"] = s.dropped_attributes
    status = s.status
    if status.status_code.value:
        out["status"] = {"code": status.status_code.value, "message": status.description or ""}
    if s.events:
        out["events"] = [
            {
                "timeUnixNano": str(e.timestamp),
                "name": e.name,
                "attributes": key_values(e.attributes),
            }
            for e in s.events
        ]
    if s.links:
        out["links"] = [
            {
                "traceId": f"{link.context.trace_id:032x}",
                "spanId": f"{link.context.span_id:016x}",
                "attributes": key_values(link.attributes),
            }
            for link in s.links
        ]
    return out


_resources: dict[int, tuple[Any, list[dict[str, Any]]]] = {}


def _resource_attributes(res: Any) -> list[dict[str, Any]]:
    """Encoded resource attributes, cached: a process has one or two resources."""
    hit = _resources.get(id(res))
    if hit is not None and hit[0] is res:
        return hit[1]
    encoded = key_values(res.attributes if res is not None else None)
    if len(_resources) > 64:
        _resources.clear()
    _resources[id(res)] = (res, encoded)
    return encoded


def encode_request(spans: Sequence[ReadableSpan]) -> dict[str, Any]:
    """Group spans by resource and scope into one ExportTraceServiceRequest."""
    by_resource: dict[int, tuple[Any, dict[tuple[str, str], list[dict[str, Any]]]]] = {}
    for s in spans:
        res = s.resource
        entry = by_resource.get(id(res))
        if entry is None:
            entry = (res, {})
            by_resource[id(res)] = entry
        scope = s.instrumentation_scope
        key = (scope.name, scope.version or "") if scope is not None else ("", "")
        entry[1].setdefault(key, []).append(_span(s))
    resource_spans = []
    for res, scopes in by_resource.values():
        resource_spans.append(
            {
                "resource": {"attributes": _resource_attributes(res)},
                "scopeSpans": [
                    {"scope": {"name": name, "version": version}, "spans": encoded}
                    for (name, version), encoded in scopes.items()
                ],
            }
        )
    return {"resourceSpans": resource_spans}


def _valid_text(value: Any) -> Any:
    """The same structure with every string made valid UTF-8.

    A surrogate pair split into two code points is joined back into its
    character; a lone surrogate becomes U+FFFD. Nothing else changes.
    """
    if isinstance(value, str):
        return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    if isinstance(value, dict):
        return {_valid_text(k): _valid_text(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_valid_text(v) for v in value]
    return value


def encode_line(spans: Sequence[ReadableSpan]) -> bytes:
    """One newline-terminated OTLP/JSON line for these spans.

    A string that is not valid Unicode (a lone surrogate, as from a bad decode
    upstream) is repaired rather than costing the trace (see ``_valid_text``).
    """
    request = encode_request(spans)
    try:
        return dumps(request) + b"\n"
    except (TypeError, ValueError, UnicodeEncodeError):
        return dumps(_valid_text(request)) + b"\n"


def _log_record(r: ReadableLogRecord) -> dict[str, Any]:
    rec = r.log_record
    out: dict[str, Any] = {"attributes": key_values(rec.attributes)}
    if rec.timestamp:  # an event often has only the time it was observed
        out["timeUnixNano"] = str(rec.timestamp)
    if rec.observed_timestamp:
        out["observedTimeUnixNano"] = str(rec.observed_timestamp)
    if rec.severity_number is not None:
        out["severityNumber"] = rec.severity_number.value
    if rec.severity_text:
        out["severityText"] = rec.severity_text
    if rec.body is not None:
        out["body"] = any_value(rec.body)
    if r.dropped_attributes:
        out["droppedAttributesCount"] = r.dropped_attributes
    if rec.trace_flags is not None:
        out["flags"] = int(rec.trace_flags)
    if rec.trace_id:  # a record emitted outside any span carries no ids (written as absent, not zeros)
        out["traceId"] = f"{rec.trace_id:032x}"
    if rec.span_id:
        out["spanId"] = f"{rec.span_id:016x}"
    if rec.event_name:
        out["eventName"] = rec.event_name
    return out


def encode_logs_line(records: Sequence[ReadableLogRecord]) -> bytes:
    """One newline-terminated OTLP/JSON ``ExportLogsServiceRequest`` line (``resourceLogs``), grouped
    by resource and scope as the Collector's file exporter writes logs."""
    by_resource: dict[int, tuple[Any, dict[tuple[str, str], list[dict[str, Any]]]]] = {}
    for r in records:
        res = r.resource
        entry = by_resource.setdefault(id(res), (res, {}))
        scope = r.instrumentation_scope
        key = (scope.name, scope.version or "") if scope is not None else ("", "")
        entry[1].setdefault(key, []).append(_log_record(r))
    request = {
        "resourceLogs": [
            {
                "resource": {"attributes": _resource_attributes(res)},
                "scopeLogs": [
                    {"scope": {"name": name, "version": version}, "logRecords": encoded}
                    for (name, version), encoded in scopes.items()
                ],
            }
            for res, scopes in by_resource.values()
        ]
    }
    try:
        return dumps(request) + b"\n"
    except (TypeError, ValueError, UnicodeEncodeError):
        return dumps(_valid_text(request)) + b"\n"


#: how deep :func:`plain_value` follows arrays and kvlists (someone else's file may nest without end)
PLAIN_DEPTH = 32


def plain_value(v: Any, depth: int = 0) -> Any:  # noqa: PLR0911 - one return per AnyValue kind
    """The reverse of :func:`any_value`, for values read from someone else's file: an OTLP/JSON AnyValue
    as the plain value it stands for (kvlist -> dict, array -> list, int64 text -> int, bytes -> text);
    None for what is no AnyValue or nests past :data:`PLAIN_DEPTH`."""
    if depth > PLAIN_DEPTH or not isinstance(v, dict):
        return None
    if "stringValue" in v:
        return v["stringValue"]
    if "boolValue" in v:
        return v["boolValue"]
    if "intValue" in v:
        try:
            return int(v["intValue"])
        except (TypeError, ValueError):
            return None
    if "doubleValue" in v:
        return v["doubleValue"]
    if "arrayValue" in v:
        items = (v["arrayValue"] or {}).get("values") or []
        return [plain_value(x, depth + 1) for x in items] if isinstance(items, list) else None
    if "kvlistValue" in v:
        items = (v["kvlistValue"] or {}).get("values") or []
        if not isinstance(items, list):
            return None
        return {str(kv.get("key")): plain_value(kv.get("value"), depth + 1) for kv in items if isinstance(kv, dict)}
    if "bytesValue" in v:
        try:
            return base64.b64decode(v["bytesValue"]).decode("utf-8", "replace")
        except (ValueError, TypeError):
            return None
    return None
