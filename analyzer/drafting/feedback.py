"""Users' reports become regression cases: ``citeline gold draft --from-feedback``.

The seed articles: "User reports such as 'this source does not say that' are high-value seeds ...
Add a minimized case to the regression set". A report recorded on the request
(``request.feedback(...)``, or a ``citeline.feedback`` span event the app writes itself) reaches
the run as the flag ``user_feedback`` on the claims it is about (``queries/flag_feedback.sql``).
Each report here becomes one draft case: the question, the claim as the answer stated it, the
chunks it cited as the proposed support (a person decides what the real support is), and the
incident as it happened (trace, answer, what the user said, each cited chunk's version and text
then). ``status: draft`` until a person confirms it, so ``validate`` and every run warn about it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from citeline.analyzer.drafting.draft import Drafted, _base_corpus, _corpus_entry, _slug
from citeline.analyzer.store import connect, sql


def _facts(text: str) -> list[str]:
    from citeline.analyzer.text import fold, value_spans

    folded = fold(text)
    return list(dict.fromkeys(folded[a:b] for a, b, _v in value_spans(folded)))


def draft_from_feedback(db: str | Path, run: str | None = None, *, corpus: str | Path | None = None) -> Drafted:
    """One draft case per report of the run (the latest by default)."""
    from citeline.analyzer.reports.report import resolve_run

    con = connect(db, read_only=True)
    try:
        run_id, _ = resolve_run(con, run)
        rows = con.execute(sql("feedback_cases"), {"run_id": run_id}).fetchall()
    finally:
        con.close()
    _base, entries = _base_corpus(corpus)
    out = Drafted(corpus=list(entries))
    known = {e["chunk_id"] for e in out.corpus}
    taken: set[str] = set()
    by_report: dict[tuple[str, str, str, str], list[tuple[Any, ...]]] = {}
    for row in rows:
        by_report.setdefault(row[:4], []).append(row)
    if not rows:
        out.problems.append(f"run {run_id} holds no user report (citeline.feedback) on a classified claim")
    for (trace_id, reported, _claim, _chunk), claims in by_report.items():
        question, asked_case, answer = claims[0][4], claims[0][5], claims[0][6]
        # the app's own case id, so the trace joins the draft case; else one made from the trace
        case_id = asked_case if asked_case and asked_case not in taken else _slug(f"feedback {trace_id[:12]}", taken)
        taken.add(case_id)
        case: dict[str, Any] = {"case_id": case_id, "question": question or "", "status": "draft", "claims": []}
        incident: dict[str, Any] = {"trace_id": trace_id, "reported": reported, "answer": answer or "", "claims": []}
        for i, (*_k, claim_text, cited_ids, versions, texts) in enumerate(claims, start=1):
            cited = list(cited_ids or [])
            drafted: dict[str, Any] = {"claim_id": f"reported-{i}", "text": claim_text}
            if facts := _facts(claim_text):  # the values it states: the judge checks them deterministically
                drafted["facts"] = facts
            drafted["support"] = [cited] if cited else []
            case["claims"].append(drafted)
            incident["claims"].append(
                {
                    "text": claim_text,
                    "cited": [
                        {"chunk_id": c, "version": v or "", "text": t or ""}
                        for c, v, t in zip(cited, versions or [], texts or [], strict=False)
                    ],
                }
            )
            for c, v, t in zip(cited, versions or [], texts or [], strict=False):
                if c not in known:  # the chunk as the run saw it (a --corpus entry wins)
                    known.add(c)
                    out.corpus.append(_corpus_entry(c, t or "", version=v or ""))
        case["incident"] = incident  # what happened, for the person who confirms it (the analyzer ignores it)
        out.cases.append(case)
    return out


__all__ = ["draft_from_feedback"]
