"""What a Phoenix already holds of citeline's verdicts, read back before annotate writes.

Phoenix keys a span annotation by (name, span, identifier) and offers no "replace all of a
trace": writing a run's verdicts alone would leave every verdict an earlier run wrote and this
one has not (a claim now ok, a claim the gold set dropped, a claim that broke at another span).
So, per trace of the run, annotate first reads what Phoenix holds (GraphQL
``getTraceByOtelId``: the trace's project and its spans' annotations, the same query the UI's
span redirect makes), then:

- a trace holding a verdict of a **newer** run (metadata ``run_started_at``, then ``run_id``, is
  greater than this run's) is left as it is: annotating an older run never overwrites a newer one;
- otherwise every citeline annotation on the trace's spans that this run does not write again
  (same name, span and identifier) is deleted (GraphQL ``deleteSpanAnnotations``, by id), so
  what Phoenix shows is exactly this run's verdicts.

Only citeline's own annotations count: annotator kind CODE, name ``citeline`` or ``citeline.trace``,
metadata with a ``run_id``. A reviewer's (HUMAN) annotation under the same name is never touched.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from citeline.analyzer.phoenix.client import Rest

#: traces asked about per GraphQL request (each an alias of one query)
TRACES_PER_QUERY = 40
#: spans read per trace; a trace with more keeps the rest's annotations as they are
SPANS_PER_TRACE = 1000

_TRACE = (
    "t{i}: getTraceByOtelId(traceId: $t{i}) {{ project {{ id name }} "
    "spans(first: " + str(SPANS_PER_TRACE) + ") {{ edges {{ node {{ spanId "
    "spanAnnotations {{ id name identifier annotatorKind metadata }} }} }} }} }}"
)
_DELETE = "mutation ($ids: [ID!]!) { deleteSpanAnnotations(input: {annotationIds: $ids}) { query { __typename } } }"


def run_order(started_at: dt.datetime | None, run_id: str) -> tuple[str, str]:
    """How runs are ordered (the store's ``latest_run``: start time, then id), as metadata strings."""
    return (started_at.strftime("%Y-%m-%dT%H:%M:%S.%f") if started_at else "", run_id)


@dataclass
class Held:
    """Per trace: its Phoenix project, the newest run that wrote to it, citeline's annotations on it."""

    project: dict[str, dict[str, str]] = field(default_factory=dict)  # trace id -> {"id": ..., "name": ...}
    newest: dict[str, tuple[str, str]] = field(default_factory=dict)  # trace id -> run_order
    #: (trace id, span id, name, identifier) -> annotation id (a GraphQL global id)
    ours: dict[tuple[str, str, str, str], str] = field(default_factory=dict)


def is_ours(annotation: dict[str, Any], names: Iterable[str]) -> bool:
    meta = annotation.get("metadata")
    return (
        annotation.get("name") in set(names)
        and annotation.get("annotatorKind") == "CODE"
        and isinstance(meta, dict)
        and isinstance(meta.get("run_id"), str)
    )


def read_held(rest: Rest, trace_ids: Sequence[str], names: Sequence[str]) -> Held:
    """What Phoenix holds of ``names`` on the spans of ``trace_ids`` (a trace it does not know: nothing)."""
    held = Held()
    for start in range(0, len(trace_ids), TRACES_PER_QUERY):
        batch = trace_ids[start : start + TRACES_PER_QUERY]
        params = ", ".join(f"$t{i}: String!" for i in range(len(batch)))
        body = " ".join(_TRACE.format(i=i) for i in range(len(batch)))
        data = rest.graphql(f"query ({params}) {{ {body} }}", {f"t{i}": t for i, t in enumerate(batch)})
        for i, trace_id in enumerate(batch):
            trace = data.get(f"t{i}")
            if not trace:
                continue
            held.project[trace_id] = {"id": str(trace["project"]["id"]), "name": str(trace["project"]["name"])}
            for edge in trace["spans"]["edges"]:
                span = edge["node"]
                for a in span["spanAnnotations"]:
                    if not is_ours(a, names):
                        continue
                    meta = a["metadata"]
                    order = (str(meta.get("run_started_at") or ""), str(meta["run_id"]))
                    held.newest[trace_id] = max(held.newest.get(trace_id, order), order)
                    held.ours[(trace_id, span["spanId"], a["name"], a["identifier"])] = str(a["id"])
    return held


def delete_annotations(rest: Rest, ids: Sequence[str], batch: int = 200) -> None:
    """Delete span annotations by GraphQL id."""
    for start in range(0, len(ids), batch):
        rest.graphql(_DELETE, {"ids": list(ids[start : start + batch])})
