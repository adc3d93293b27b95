"""A blind, seeded sample of a run's claims for a person to label (``citeline sample``).

The seed articles: "Blindly sample judge decisions for human review". A sheet row shows what a
reviewer needs to decide support (the question, the claim, the text and version of each cited
passage) and nothing of what the judge or the analyzer decided: no bucket, no label, no reason.
The ``label`` column is left for the person (entailed, contradicted, insufficient or
not_applicable); ``citeline analyze --labels sheet.csv`` reads the sheet back (rows left blank
are not labels), and the report then shows the judge's agreement with people per bucket.

Same run, same ``--n``, same ``--stratify`` and same ``--seed``: the same sheet. Rows are drawn by
a hash of (seed, trace, claim), so a sample does not depend on the order the store holds rows in.
With ``--stratify``, each stratum (bucket, basis or the judge's label) gets an equal share of ``n``
(what is rare gets reviewed too); a stratum smaller than its share gives what it has.
"""

from __future__ import annotations

import csv
import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb

from citeline.analyzer.store import sql

STRATA = ("bucket", "basis", "judge-label")
COLUMNS = (
    "run_id",
    "trace_id",
    "claim",
    "question",
    "claim_text",
    "cited_chunks",
    "cited_versions",
    "cited_text",
    "label",
    "note",
)


@dataclass
class Sheet:
    rows: list[dict[str, Any]]
    strata: dict[str, int]  # stratum -> rows drawn (empty without --stratify)
    population: int


def _key(seed: int, row: dict[str, Any]) -> str:
    return hashlib.sha256(f"{seed}\x1f{row['trace_id']}\x1f{row['claim']}".encode()).hexdigest()


def draw(con: duckdb.DuckDBPyConnection, run_id: str, n: int, stratify: str | None = None, seed: int = 0) -> Sheet:
    """The sample of ``run_id``'s claims (every claim with text, ``ok`` included: a blind sample)."""
    if stratify is not None and stratify not in STRATA:
        raise ValueError(f"--stratify {stratify!r}: choose one of {', '.join(STRATA)}")
    if n <= 0:
        raise ValueError("--n must be a positive number of rows")
    cur = con.execute(sql("sample_claims"), {"run_id": run_id})
    names = [d[0] for d in cur.description or ()]
    rows = [dict(zip(names, r, strict=True)) for r in cur.fetchall()]
    groups: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        stratum = {"bucket": r["bucket"], "basis": r["basis"], "judge-label": r["judge_label"]}.get(stratify or "", "")
        groups.setdefault(str(stratum or "-"), []).append(r)
    for g in groups.values():
        g.sort(key=lambda r: _key(seed, r))
    chosen: list[dict[str, Any]] = []
    if stratify is None:
        chosen = groups.get("-", [])[:n]
    else:  # equal shares, the rest to whoever still has rows, in stratum order
        order = sorted(groups)
        taken = dict.fromkeys(order, 0)
        while len(chosen) < n and any(taken[s] < len(groups[s]) for s in order):
            for s in order:
                if len(chosen) < n and taken[s] < len(groups[s]):
                    chosen.append(groups[s][taken[s]])
                    taken[s] += 1
    chosen.sort(key=lambda r: _key(seed, r))
    strata: dict[str, int] = {}
    if stratify is not None:
        for r in chosen:
            s = {"bucket": r["bucket"], "basis": r["basis"], "judge-label": r["judge_label"]}[stratify]
            strata[str(s or "-")] = strata.get(str(s or "-"), 0) + 1
    sheet_rows = [
        {
            "run_id": run_id,
            "trace_id": r["trace_id"],
            "claim": r["claim"],
            "question": r["question"] or "",
            "claim_text": r["claim_text"] or "",
            "cited_chunks": " ".join(r["cited_chunks"] or []),
            "cited_versions": " ".join(v or "-" for v in r["cited_versions"] or []),
            "cited_text": "\n\n".join(t or "(text not in the corpus)" for t in r["cited_text"] or []),
            "label": "",
            "note": "",
        }
        for r in chosen
    ]
    return Sheet(sheet_rows, strata, len(rows))


def write(sheet: Sheet, out: Path) -> None:
    """The sheet as CSV (opens in any spreadsheet); text cells as they came, quoted."""
    with open(out, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS, quoting=csv.QUOTE_ALL)
        w.writeheader()
        for row in sheet.rows:
            w.writerow({k: _cell(v) for k, v in row.items()})


def _cell(value: Any) -> Any:
    """A cell a spreadsheet shows as text: one starting with = + - @ is not run as a formula."""
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + value
    return value


__all__ = ["COLUMNS", "STRATA", "Sheet", "draw", "write"]
