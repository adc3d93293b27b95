"""A run's verdicts as Phoenix span annotations: what each says and how a person acts on it.

One annotation named ``citeline`` per failing claim on the span where its chain broke:
label = the bucket, no score (Phoenix's chip then reads the bucket, not a mean score),
identifier = the claim (``case/claim/trace``; a claim stated twice in one answer gets ``#1``, ...),
so claims sharing a span keep separate annotations. The explanation starts with the claim and
says what to look at: ``claim window "Opened electronics ...": <reason>; cites [1]
returns-v4#eligibility-2 "Opened electronics may be returned within 30 days ..."``, and for a
context_drop the support chunk retrieved but not given to the model. Text from traces and gold
files is escaped as for a terminal (:func:`citeline.analyzer.escaping.term`: one line, no
control, escape or bidirectional-override character), since Phoenix shows it as plain text.

One annotation named ``citeline.trace`` per joined trace on its request span: label = the
trace's verdict, score = 1 for ok, 0 for a failing verdict, none for not_evaluable (the
mapping ``citeline export`` uses), so Phoenix's annotation score chart plots the share of
requests that pass, run after run.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from collections import defaultdict
from typing import Any

import duckdb

from citeline.analyzer.buckets import CONTEXT_DROP, NOT_EVALUABLE, OK
from citeline.analyzer.escaping import term

NAME = "citeline"
TRACE_NAME = "citeline.trace"
_TEXT_SHOWN = 160  # characters of a claim's text quoted in an explanation
_PASSAGE_SHOWN = 200  # characters of a cited passage


def claim_identifier(trace_id: str, case_id: str | None, gold_claim_id: str | None, claim_text: str | None) -> str:
    """Stable per claim and trace, so claims sharing a span keep separate annotations."""
    claim = gold_claim_id or "text:" + hashlib.sha1((claim_text or "").encode()).hexdigest()[:12]
    return f"{case_id or '-'}/{claim}/{trace_id[:16]}"


def trace_score(verdict: str) -> float | None:
    """The documented score of a trace verdict: ok 1, a failing bucket 0, not_evaluable none."""
    if verdict == NOT_EVALUABLE:
        return None
    return 1.0 if verdict == OK else 0.0


def _clip(text: str, n: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"


def claim_name(gold_claim_id: str | None, claim_text: str | None) -> str:
    """``claim ID "text"``, ``claim "text"`` or ``claim (no text)`` (an answer that should have abstained)."""
    text = _clip(claim_text or "", _TEXT_SHOWN)
    quoted = f'"{text}"' if text else ""
    if gold_claim_id:
        return f"claim {gold_claim_id}" + (f" {quoted}" if quoted else "")
    return f"claim {quoted}" if quoted else "claim (no text)"


def run_info(con: duckdb.DuckDBPyConnection, run_id: str) -> tuple[dt.datetime | None, str]:
    """The run's start time and judge."""
    rows = con.execute("SELECT started_at, judge FROM runs WHERE run_id = $r", {"r": run_id}).fetchall()
    if not rows:
        return None, "unknown"
    return rows[0][0], str(rows[0][1] or "unknown")


class _Evidence:
    """What an explanation cites: the label each chunk had in the trace's context, gold passages,
    the chunks each trace retrieved and gave the model, each case's support."""

    def __init__(self, con: duckdb.DuckDBPyConnection, run_id: str) -> None:
        self.label: dict[tuple[str, str], str] = {}
        self.retrieved: dict[str, set[str]] = defaultdict(set)
        self.context: dict[str, set[str]] = defaultdict(set)
        traces = "SELECT trace_id FROM case_results WHERE run_id = $r"
        for trace_id, stage, chunks, labels, mapped in con.execute(
            # a context span's map is its labels beside its own chunk ids (an older store copied them)
            "SELECT trace_id, stage, chunk_id, map_label, coalesce(map_chunk_id, CASE WHEN stage = 'context' "
            "THEN chunk_id END) FROM spans "
            f"WHERE stage IN ('retrieval', 'context') AND trace_id IN ({traces}) ORDER BY trace_id, start_ns",
            {"r": run_id},
        ).fetchall():
            (self.retrieved if stage == "retrieval" else self.context)[trace_id].update(chunks or [])
            for label, chunk in zip(labels or [], mapped or [], strict=False):
                self.label.setdefault((trace_id, chunk), label)
        self.text: dict[str, str] = dict(
            con.execute(
                "SELECT chunk_id, any_value(text) FROM run_chunks WHERE run_id = $r GROUP BY chunk_id", {"r": run_id}
            ).fetchall()
        )
        self.support: dict[str, list[str]] = {
            case: list(chunks or [])
            for case, chunks in con.execute(
                "SELECT case_id, chunk_ids FROM run_support WHERE run_id = $r", {"r": run_id}
            ).fetchall()
        }

    def explain(
        self, trace_id: str, case_id: str | None, claim: str, bucket: str, reason: str | None, cited: list[str]
    ) -> str:
        parts = [f"{claim}: {reason or bucket}"]
        for chunk in cited:
            label = self.label.get((trace_id, chunk))
            passage = self.text.get(chunk)
            parts.append(
                "cites "
                + (f"[{label}] " if label else "")
                + chunk
                + (f' "{_clip(passage, _PASSAGE_SHOWN)}"' if passage else "")
            )
        if bucket == CONTEXT_DROP:
            dropped = [
                c
                for c in self.support.get(case_id or "", [])
                if c in self.retrieved[trace_id] and c not in self.context[trace_id]
            ]
            if dropped:
                parts.append("retrieved but not given to the model: " + ", ".join(dropped))
        return term("; ".join(parts))


def annotation_rows(con: duckdb.DuckDBPyConnection, run_id: str) -> list[dict[str, Any]]:
    """One ``citeline`` annotation per failing claim of the run that names a span."""
    started, judge = run_info(con, run_id)
    order = started.strftime("%Y-%m-%dT%H:%M:%S.%f") if started else ""
    rows = con.execute(
        "SELECT trace_id, case_id, gold_claim_id, claim_text, bucket, stage, span_id, reason, flags, cited_chunks "
        "FROM claim_results WHERE run_id = ? AND bucket <> 'ok' AND span_id IS NOT NULL "
        "ORDER BY span_id, case_id, gold_claim_id, claim_text, bucket",
        [run_id],
    ).fetchall()
    evidence = _Evidence(con, run_id)
    out = []
    seen: dict[str, int] = {}
    for trace_id, case_id, gold_claim_id, claim_text, bucket, stage, span_id, reason, flags, cited in rows:
        identifier = claim_identifier(trace_id, case_id, gold_claim_id, claim_text)
        n = seen.get(identifier, 0)
        seen[identifier] = n + 1
        if n:  # the same claim stated twice in one answer: each its own annotation
            identifier = f"{identifier}#{n}"
        out.append(
            {
                "span_id": span_id,
                "name": NAME,
                "annotator_kind": "CODE",
                "identifier": identifier,
                # no score: Phoenix's chip then reads the label (the bucket), not "μ 0.00"
                "result": {
                    "label": bucket,
                    "explanation": evidence.explain(
                        trace_id, case_id, claim_name(gold_claim_id, claim_text), bucket, reason, list(cited or [])
                    ),
                },
                "metadata": {
                    "run_id": run_id,
                    "run_started_at": order,
                    "judge": judge,
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


def trace_annotation_rows(con: duckdb.DuckDBPyConnection, run_id: str) -> list[dict[str, Any]]:
    """One summary per joined trace on its request (root) span: label = the trace's verdict, every trace."""
    started, judge = run_info(con, run_id)
    order = started.strftime("%Y-%m-%dT%H:%M:%S.%f") if started else ""
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
            "result": {
                "label": verdict,
                "score": trace_score(verdict),
                "explanation": term("claims: " + ", ".join(counts or [])),
            },
            "metadata": {
                "run_id": run_id,
                "run_started_at": order,
                "judge": judge,
                "case_id": case_id,
                "trace_id": trace_id,
            },
        }
        for trace_id, case_id, verdict, span_id, counts in rows
    ]
