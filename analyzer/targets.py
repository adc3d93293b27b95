"""Where a verdict may land: only on a span of its own trace.

Phoenix keys annotations by span id alone, and many OTel backends look a span up by its id
too. A trace file is untrusted: a hostile trace can reuse the span id of an honest trace, and
its verdict would then be written onto the honest trace's span. So every writer of verdicts
(``phoenix.annotate``, ``exporters.otel``) asks :func:`foreign_spans` first and skips, with a
named problem, any span id that is not held by the verdict's own trace or is held by another
trace in the store as well (it is ambiguous there: the verdict of either trace could land on
the other's span).
"""

from __future__ import annotations

from collections.abc import Iterable

import duckdb

from citeline.analyzer.problems import Problem


def span_owners(con: duckdb.DuckDBPyConnection, span_ids: Iterable[str]) -> dict[str, set[str]]:
    """Each span id -> the traces in the store holding a span with that id (empty: none does)."""
    wanted = sorted(set(span_ids))
    owners: dict[str, set[str]] = {s: set() for s in wanted}
    if not wanted:
        return owners
    rows = con.execute(
        # a join, not list_contains per stored span: a run annotates up to all of its spans
        "SELECT s.span_id, list(DISTINCT s.trace_id) FROM spans AS s "
        "JOIN (SELECT unnest($ids) AS span_id) AS w ON w.span_id = s.span_id GROUP BY s.span_id",
        {"ids": wanted},
    ).fetchall()
    for span_id, traces in rows:
        owners[span_id] = set(traces)
    return owners


def foreign_spans(
    con: duckdb.DuckDBPyConnection, pairs: Iterable[tuple[str, str]], source: str
) -> tuple[set[tuple[str, str]], list[Problem]]:
    """The (trace id, span id) pairs a verdict must not be written to, and one problem per pair.

    A pair is refused when the span id is held by no span of that trace, or by a span of another
    trace too. ``source`` names the writer in the problems (``phoenix``, ``otlp``)."""
    todo = sorted(set(pairs))
    owners = span_owners(con, (s for _t, s in todo))
    refused: set[tuple[str, str]] = set()
    problems: list[Problem] = []
    for trace_id, span_id in todo:
        held = owners.get(span_id, set())
        if held == {trace_id}:
            continue
        refused.add((trace_id, span_id))
        others = sorted(held - {trace_id})
        if trace_id not in held:
            why = "is not a span of this trace" + (f" (trace {others[0]} holds it)" if others else "")
        else:
            why = f"is also the id of a span of trace {others[0]}" + (
                f" and {len(others) - 1} more" if len(others) > 1 else ""
            )
        problems.append(
            Problem(source, f"trace {trace_id}", f"span {span_id}", f"{why}: its verdict was not written there")
        )
    return refused, problems
