"""Verdicts back to Phoenix as span annotations.

Annotate writes one annotation named ``citeline`` per failing claim onto the
span where the chain broke (label = bucket, explanation = reason, identifier =
the claim, so claims sharing a span do not overwrite each other; no score, so
Phoenix shows the bucket), and one named ``citeline.trace`` per joined trace on
its request span (label = the trace's verdict, explanation = its claims per
bucket). Phoenix keys annotations by (name, span, identifier), so re-running
updates, never duplicates. A verdict is only written onto a span of its own trace: a span id another
trace in the store holds too is skipped and named (``analyzer/targets.py``). The REST calls and their
errors: ``client.py``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import duckdb

from citeline.analyzer.escaping import is_span_id
from citeline.analyzer.phoenix.client import PhoenixError, Rest, explain
from citeline.analyzer.problems import Problem
from citeline.analyzer.targets import foreign_spans
from citeline.instrumentation.redact import redact_text, redact_url
from citeline.instrumentation.settings import PHOENIX_API_KEY

NAME = "citeline"
BATCH = 100


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


class SpansNotInPhoenix(PhoenixError):
    """Nothing was written because no span of the run is in that Phoenix (exit 2: the input cannot be used);
    ``report`` says what was tried."""

    def __init__(self, report: AnnotateReport, message: str) -> None:
        super().__init__(message)
        self.report = report


def annotate(con: duckdb.DuckDBPyConnection, url: str, run_id: str, documents_as_llm: bool = False) -> AnnotateReport:
    """Post one annotation per failing claim of ``run_id``, in batches, synchronously."""
    report = AnnotateReport(run_id)
    rows = _targets(con, annotation_rows(con, run_id) + trace_annotation_rows(con, run_id), report)
    rest = Rest(url)
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
    landed = report.annotations + report.trace_annotations + report.document_annotations
    if report.missing_spans and not landed and not report.rejected:  # the traces went to another Phoenix
        raise SpansNotInPhoenix(
            report,
            f"none of run {run_id}'s {len(report.missing_spans)} span(s) to annotate is in Phoenix at "
            f"{redact_url(url)}, so nothing was written; send the traces there first (configure(otlp_endpoint=...) "
            "or citeline demo --phoenix URL) and wait until they show, or pass the Phoenix they went to "
            "(docs/phoenix.md)",
        )
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
    rest: Rest,
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
                why = redact_text(exc.response.text[:200], [PHOENIX_API_KEY.get()])
                report.rejected.append((str(items[0]["span_id"]), f"HTTP {code}: {why}"))
            return False
        raise explain(exc, url) from exc
    except Exception as exc:  # every other failure becomes one clear message
        raise explain(exc, url) from exc
    return True
