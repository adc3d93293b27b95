"""Verdicts back to Phoenix as span annotations: after annotate, Phoenix shows the run's verdicts.

What each annotation says: ``verdicts.py`` (one ``citeline`` per failing claim on the span where
its chain broke, one ``citeline.trace`` per joined trace on its request span) and the document
annotations below. Before writing, what Phoenix holds on the run's traces is read back
(``held.py``): a trace holding a newer run's verdicts is left alone, and citeline's annotations
this run does not write again are deleted, so a claim now ok or gone loses its old label.
Phoenix keys annotations by (name, span, identifier), so re-running updates, never duplicates.
A verdict is only written onto a span of its own trace: a span id another trace in the store
holds too is skipped and named (``analyzer/targets.py``). Annotation configs for both names are
created on first use so reviewers get a dropdown of buckets. The REST calls and their errors:
``client.py``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import duckdb

from citeline.analyzer.buckets import BUCKETS
from citeline.analyzer.escaping import is_span_id, is_trace_id
from citeline.analyzer.phoenix.client import PhoenixError, Rest, explain
from citeline.analyzer.phoenix.held import delete_annotations, read_held, run_order
from citeline.analyzer.phoenix.verdicts import (
    NAME,
    TRACE_NAME,
    annotation_rows,
    claim_identifier,
    run_info,
    trace_annotation_rows,
    trace_score,
)
from citeline.analyzer.problems import Problem
from citeline.analyzer.targets import foreign_spans
from citeline.instrumentation.redact import public_url, redact_text, redact_url
from citeline.instrumentation.settings import PHOENIX_API_KEY

BATCH = 100
__all__ = ["AnnotateReport", "annotate", "claim_identifier", "document_annotation_rows", "span_filter"]


def span_filter(bucket: str | None, name: str = NAME) -> str:
    """The Spans-tab filter listing the spans where a claim of ``bucket`` broke (None: any failure)."""
    if bucket is None:
        return f"annotations['{name}'].label is not None"
    return f"annotations['{name}'].label == '{bucket}'"


@dataclass(frozen=True)
class ProjectLinks:
    """Where a run's verdicts landed in one Phoenix project, and the URLs that open them."""

    name: str
    url: str
    #: bucket -> (spans annotated with it, the Spans tab already filtered to them), most urgent first
    buckets: list[tuple[str, int, str]]


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
    #: traces left as they are because Phoenix holds a newer run's verdicts on them, and those runs
    superseded: list[str] = field(default_factory=list)
    newer_runs: list[str] = field(default_factory=list)
    #: citeline annotations of earlier runs this run does not hold (a claim now ok or gone): deleted
    removed: int = 0
    #: annotation configs created by this annotate (Phoenix had none of that name)
    configs_created: list[str] = field(default_factory=list)
    #: per Phoenix project the run's traces are in: its URL and a filtered link per bucket
    links: list[ProjectLinks] = field(default_factory=list)


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
    """Make what Phoenix shows on the run's traces the run's verdicts, in batches, synchronously."""
    report = AnnotateReport(run_id)
    rows = _targets(con, annotation_rows(con, run_id) + trace_annotation_rows(con, run_id), report)
    documents = _targets(con, document_annotation_rows(con, run_id, "LLM" if documents_as_llm else "CODE"), report)
    traces = [
        str(t)
        for (t,) in con.execute(
            "SELECT DISTINCT trace_id FROM case_results WHERE run_id = $r ORDER BY 1", {"r": run_id}
        ).fetchall()
        if is_trace_id(t)
    ]
    started, _judge = run_info(con, run_id)
    mine = run_order(started, run_id)
    rest = Rest(url)
    try:
        held = read_held(rest, traces, (NAME, TRACE_NAME))
        report.configs_created = _ensure_configs(rest)
        newer = {t for t, order in held.newest.items() if order > mine}
        report.superseded = sorted(newer)
        report.newer_runs = sorted({held.newest[t][1] for t in newer})
        rows = [r for r in rows if r["metadata"]["trace_id"] not in newer]
        documents = [d for d in documents if d["metadata"]["trace_id"] not in newer]
        keep = {(r["metadata"]["trace_id"], r["span_id"], r["name"], r["identifier"]) for r in rows}
        stale = [aid for key, aid in sorted(held.ours.items()) if key[0] not in newer and key not in keep]
        delete_annotations(rest, stale)
        report.removed = len(stale)
        written = _write_spans(rest, url, rows, report)
        report.documents_not_held = documents_not_held(con, run_id)
        _write_documents(rest, url, documents, report)
        report.links = _links(public_url(url).rstrip("/"), held.project, written)
        for project in sorted({p["name"] for p in held.project.values()}):
            for name in (NAME, TRACE_NAME):
                rest.assign_annotation_config(project, name)
    except PhoenixError:
        raise
    except Exception as exc:  # every other failure becomes one clear message
        raise explain(exc, url) from exc
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


def _write_spans(rest: Rest, url: str, rows: list[dict[str, Any]], report: AnnotateReport) -> list[dict[str, Any]]:
    """The span and trace annotations, in batches; what Phoenix took."""
    written: list[dict[str, Any]] = []
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
        written += taken
    return written


def _write_documents(rest: Rest, url: str, documents: list[dict[str, Any]], report: AnnotateReport) -> None:
    """The document annotations, in batches; a span Phoenix does not know is named."""
    for batch in _batches(documents, BATCH):
        if _post(rest, url, batch, documents=True, report=report):
            report.document_annotations += len(batch)
            continue
        for span_id in sorted({item["span_id"] for item in batch}):
            mine = [item for item in batch if item["span_id"] == span_id]
            if _post(rest, url, mine, documents=True, report=report, one=True):
                report.document_annotations += len(mine)
            elif span_id not in report.missing_spans and not _refused(report, mine[0]):
                report.missing_spans.append(span_id)


def _configs() -> list[dict[str, Any]]:
    """A dropdown per name: ``citeline`` offers every bucket (no score: its chip reads the bucket),
    ``citeline.trace`` every verdict with its score (ok 1, failing 0)."""
    return [
        {
            "name": NAME,
            "type": "CATEGORICAL",
            "description": "citeline: the bucket of a claim whose evidence chain broke at this span",
            "optimization_direction": "NONE",
            "values": [{"label": b} for b in BUCKETS],
        },
        {
            "name": TRACE_NAME,
            "type": "CATEGORICAL",
            "description": "citeline: the request's verdict, its most urgent bucket (1 = ok)",
            "optimization_direction": "MAXIMIZE",
            "values": [{"label": b, "score": trace_score(b)} for b in BUCKETS],
        },
    ]


def _ensure_configs(rest: Rest) -> list[str]:
    """Create citeline's annotation configs where Phoenix has none of that name (an existing one,
    perhaps edited by a team, is kept)."""
    created = []
    for config in _configs():
        if rest.annotation_config(config["name"]) is None:
            rest.create_annotation_config(config)
            created.append(str(config["name"]))
    return created


def _links(base_url: str, projects: dict[str, dict[str, str]], written: list[dict[str, Any]]) -> list[ProjectLinks]:
    """Per project the run's traces are in: its URL and, per bucket written, the Spans tab filtered to it."""
    spans: dict[str, dict[str, set[str]]] = {}
    for item in written:
        where = projects.get(str(item["metadata"]["trace_id"]))
        if where is not None and item["name"] == NAME:
            spans.setdefault(where["id"], {}).setdefault(item["result"]["label"], set()).add(item["span_id"])
    out = []
    for project_id, name in sorted({(p["id"], p["name"]) for p in projects.values()}, key=lambda p: p[1]):
        base = f"{base_url}/projects/{quote(project_id, safe='')}"
        by_bucket = spans.get(project_id, {})
        out.append(
            ProjectLinks(
                name,
                base,
                [
                    (b, len(by_bucket[b]), f"{base}/spans?spanFilterCondition={quote(span_filter(b), safe='')}")
                    for b in BUCKETS
                    if b in by_bucket
                ],
            )
        )
    return out


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
