"""``citeline rejudge``: a stored run's claims judged again by another judge, side by side.

The seed articles: "Evaluator upgrades can change labels even when the RAG system does not, so
version evaluator prompts and models and re-baseline before enforcing a new threshold". Before a
judge change moves a gate, this shows which claims the new judge labels otherwise, and which
buckets move with them, on exactly the traces of a run: the run's spans are copied into a store
in memory and analyzed again there with the new judge (the same steps as ``analyze``), so the
stored run and every report of it stay as they were.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from citeline.analyzer.store import connect, rows_of

_KEY = "coalesce(gold_claim_id, claim_text)"
_CLAIMS = (
    f"SELECT trace_id, case_id, {_KEY} AS claim, support_label, bucket FROM {{table}} "
    "WHERE run_id = $r AND claim_text IS NOT NULL"
)


@dataclass
class Rejudged:
    run_id: str
    before: str  # the run's judge
    now: str  # the judge asked now
    claims: int = 0
    changes: list[dict[str, Any]] = field(default_factory=list)


def rejudge(db: str | Path, run_id: str, judge: Any, gold: str | Path | None = None) -> Rejudged:
    """Judge ``run_id``'s claims again with ``judge`` (a loaded Judge); the label changes."""
    from citeline.analyzer import judges
    from citeline.analyzer.run.analyze import analyze

    mem = connect(":memory:")
    try:
        mem.execute("ATTACH ? AS src (READ_ONLY)", [str(db)])
        rows = rows_of(mem, "src")  # a partitioned run's spans and claims are Parquet files the store lists
        spans, claims = (f"({rows[t]})" if rows[t] else f"src.{t}" for t in ("spans", "claim_results"))
        [(before, gold_source)] = mem.execute(
            "SELECT judge, gold_source FROM src.runs WHERE run_id = ?", [run_id]
        ).fetchall()
        mem.execute(
            f"INSERT INTO spans BY NAME SELECT * FROM {spans} WHERE trace_id IN "
            f"(SELECT DISTINCT trace_id FROM {claims} WHERE run_id = ?)",
            [run_id],
        )
        judged = f"({rows['judgments']})" if rows["judgments"] else "src.judgments"  # a partitioned run's: files
        mem.execute(f"INSERT OR IGNORE INTO judgments BY NAME SELECT * FROM {judged}")  # asked before: not again
        old = {
            (t, c, k): (lab, b)
            for t, c, k, lab, b in mem.execute(_CLAIMS.format(table=claims), {"r": run_id}).fetchall()
        }
        gold_part, _, corpus_part = str(gold_source).partition("corpus:")  # "GOLD; corpus:FILE" (_analyze)
        result = analyze(
            ":memory:",
            gold=gold or gold_part.removesuffix("; ") or None,
            corpus=corpus_part or None,
            judge=judge,
            con=mem,
        )
        new = {
            (t, c, k): (lab, b)
            for t, c, k, lab, b in mem.execute(_CLAIMS.format(table="claim_results"), {"r": result.run_id}).fetchall()
        }
    finally:
        mem.close()
    out = Rejudged(run_id, str(before), judges.ident(judge), claims=len(old))
    for key in sorted(old.keys() | new.keys(), key=lambda k: tuple(str(x) for x in k)):
        (lab0, b0), (lab1, b1) = old.get(key, (None, None)), new.get(key, (None, None))
        if (lab0, b0) != (lab1, b1):
            out.changes.append(
                {
                    "trace_id": key[0],
                    "case_id": key[1],
                    "claim": key[2],
                    "label_before": lab0,
                    "label_now": lab1,
                    "bucket_before": b0,
                    "bucket_now": b1,
                }
            )
    return out


__all__ = ["Rejudged", "rejudge"]
