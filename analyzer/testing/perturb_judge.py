"""Judge each perturbation cell: did the analyzer's rows move the way the perturbation declared?

Rows are the analyzer's own (``claim_results``), read per trace. A declared
bucket holds when its flag is raised on every gold claim of the case and,
where it is the claim's primary bucket, at a span the perturbation changed;
"nothing changes" holds when every claim keeps its bucket. A flag the
baseline already raised cannot show anything: that cell is skipped, not
passed. Reactions are judged only where the baseline was all ok.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from citeline.analyzer.gold.goldset import GoldCase
from citeline.analyzer.testing.perturbations import Perturbation
from citeline.instrumentation import schema as K

ROW_KEYS = ("gold_claim_id", "claim_text", "bucket", "stage", "span_id", "flags", "reason", "cited_chunks", "abstained")


@dataclass
class Cell:
    """One (case, perturbation): what was declared, what the analyzer got, whether it holds."""

    case_id: str
    perturbation: str
    stage: str
    declared: str
    status: str  # holds | differs | n/a | skipped | error
    got: str = ""
    note: str = ""
    spans: list[str] = field(default_factory=list)  # the spans the perturbation changed
    claims: list[str] = field(default_factory=list)  # the gold claims whose evidence it changed
    rows: list[dict[str, Any]] = field(default_factory=list)
    reaction: str | None = None
    reaction_good: bool | None = None
    reaction_note: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "case_id": self.case_id,
            "perturbation": self.perturbation,
            "stage": self.stage,
            "declared": self.declared,
            "status": self.status,
            "got": self.got,
            "note": self.note,
            "spans": self.spans,
            "claims": self.claims,
            "rows": self.rows,
            "reaction": (
                None
                if self.reaction is None
                else {"expected": self.reaction, "good": self.reaction_good, "what": self.reaction_note}
            ),
        }


@dataclass
class Run:
    """One perturbed (or baseline) call of the app: the case, what was changed, the trace it left."""

    case: GoldCase
    perturbation: Perturbation | None
    trace_id: str | None = None
    change: Any = None
    note: str = ""
    error: str = ""


def _slim(row: dict[str, Any]) -> dict[str, Any]:
    return {k: row.get(k) for k in ROW_KEYS}


def _gold_rows(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in rows if r["gold_claim_id"] not in (None, "(abstain)")]


def _shown(r: dict[str, Any]) -> str:
    where = f" at {r['stage']}" if r["stage"] else ""
    span = f" (span {r['span_id']})" if r["span_id"] else ""
    return f"{r['gold_claim_id'] or 'extra claim'}: {r['bucket']}{where}{span}"


def _bucket_cell(cell: Cell, expect: Any, base: dict[str, dict[str, Any]], rows: list[dict[str, Any]]) -> None:
    """The declared flag on each claim the perturbation touched; every other gold claim keeps its baseline bucket."""
    gold = _gold_rows(rows)
    if not gold:
        cell.status, cell.note = "error", "the perturbed trace has no gold claim row (did it join its case?)"
        return
    touched = set(cell.claims) or {r["gold_claim_id"] for r in gold}
    got: list[str] = []
    bad: list[str] = []
    already: list[str] = []
    early: list[str] = []
    for r in gold:
        b = base.get(r["gold_claim_id"])
        if r["gold_claim_id"] not in touched:
            kept = b is not None and b["bucket"] == r["bucket"]
            if not kept:
                was = b["bucket"] if b is not None else "no row"
                bad.append(f"{_shown(r)}: not touched by the perturbation, but was {was} ({r['reason']})")
            continue
        if b is not None and expect.bucket in (b["flags"] or []):
            already.append(r["gold_claim_id"])
            continue
        raised = expect.bucket in (r["flags"] or [])
        if not raised and b is not None and b["bucket"] != "ok":
            # the chain already broke before this perturbation (a retrieval miss before a context cell)
            early.append(f"{r['gold_claim_id']} is {b['bucket']} at {b['stage'] or 'no stage'} in the baseline")
            continue
        at_span = r["bucket"] != expect.bucket or (r["stage"] == expect.stage and r["span_id"] in cell.spans)
        text = _shown(r)
        if raised and r["bucket"] != expect.bucket:
            text += f", {expect.bucket} raised"
        got.append(text)
        if not (raised and at_span):
            bad.append(f"{text}: {r['reason']}")
    missing = sorted(touched - {r["gold_claim_id"] for r in gold})
    if missing:
        bad.append(f"no row for {', '.join(missing)}")
    if (already or early) and not got and not bad:
        said = [f"the baseline already raised {expect.bucket} ({', '.join(already)})"] if already else []
        said += [f"{e}: this cell cannot show {expect.bucket}" for e in early]
        cell.status, cell.note = "skipped", "; ".join(said)
        return
    cell.got = "; ".join(got) or "no touched claim changed"
    cell.status = "differs" if bad else "holds"
    if bad:
        cell.note = "; ".join(bad)


def _unchanged_cell(cell: Cell, base_rows: list[dict[str, Any]], rows: list[dict[str, Any]]) -> None:
    def key(rs: Sequence[dict[str, Any]]) -> Counter[tuple[str, str]]:
        return Counter((r["gold_claim_id"] or "(extra claim)", r["bucket"]) for r in rs)

    before, after = key(base_rows), key(rows)
    if before == after:
        cell.status, cell.got = "holds", "nothing changed"
        return
    base = {r["gold_claim_id"]: r for r in base_rows}
    said = {r["gold_claim_id"]: r["claim_text"] for r in base_rows}
    reworded = [r for r in _gold_rows(rows) if said.get(r["gold_claim_id"], r["claim_text"]) != r["claim_text"]]
    if reworded and len(reworded) == len(_gold_rows(rows)):
        # the model answered otherwise: the app's reaction to the order, not a fact about the labels
        cell.status = "skipped"
        cell.note = "the answer changed with the chunk order, so alignment cannot be judged from this case"
        return
    rows = [r for r in rows if r not in reworded]
    moved = []
    for r in rows:
        before_bucket = base[r["gold_claim_id"]]["bucket"] if r["gold_claim_id"] in base else "-"
        if before_bucket != r["bucket"]:
            why = f" ({r['reason']})" if r["bucket"] != "ok" else ""
            moved.append(f"{r['gold_claim_id'] or 'extra claim'}: {before_bucket} -> {r['bucket']}{why}")
    cell.status, cell.got = "differs", "; ".join(moved) or "the claims changed"


def _reaction(cell: Cell, kind: str, change: Any, rows: list[dict[str, Any]], base_rows: list[dict[str, Any]]) -> None:
    targeted = [r for r in _gold_rows(rows) if not cell.claims or r["gold_claim_id"] in cell.claims]
    said = {r["gold_claim_id"]: r["claim_text"] for r in base_rows}
    if not targeted:
        return
    if kind == "same_answer":
        changed = [r for r in targeted if r["claim_text"] != said.get(r["gold_claim_id"])]
        cell.reaction_good = not changed
        cell.reaction_note = (
            "; ".join(f"the answer changed with the chunk order: {r['claim_text']!r}" for r in changed)
            if changed
            else "the same answer under the new order and labels"
        )
        return
    if kind == "abstain_or_qualify":
        kept = [r for r in targeted if r["claim_text"] and not r["abstained"]]
        cell.reaction_good = not kept
        if kept:
            cell.reaction_note = "; ".join(
                f"kept the claim {r['claim_text']!r} (grounding: stated without its support)" for r in kept
            )
        elif any(r["abstained"] for r in targeted):
            cell.reaction_note = "abstained"
        else:
            cell.reaction_note = "left the claim out"
        return
    newer = {old: new.chunk_id for old, new in change.ctx.newer.items()}
    notes, good = [], True
    for r in targeted:
        cited = set(r["cited_chunks"] or [])
        olds = sorted(cited & set(newer))
        news = sorted(cited & set(newer.values()))
        if news and not olds and r["bucket"] == "ok":
            notes.append(f"followed the newer version: cites {', '.join(news)}")
        elif olds:
            good = False
            notes.append(f"ignored the newer version: kept citing {', '.join(olds)} ({r['bucket']})")
        else:
            good = False
            notes.append(f"did not follow the newer version: {r['bucket']}: {r['reason']}")
    cell.reaction_good, cell.reaction_note = good, "; ".join(notes)


def judge_cells(
    runs: Sequence[Run],
    rows: dict[str, list[dict[str, Any]]],
    changed: dict[str, dict[str, list[str]]],
    *,
    spans_by_trace: dict[str, list[Any]],
) -> tuple[list[Cell], dict[str, list[dict[str, Any]]]]:
    """The cells of the matrix, and each case's baseline rows."""
    cells: list[Cell] = []
    baseline: dict[str, list[dict[str, Any]]] = {}
    base_rows: dict[str, list[dict[str, Any]]] = {}
    base_error: dict[str, str] = {}
    for run in runs:
        cid = run.case.case_id
        if run.perturbation is None:
            base_rows[cid] = rows.get(run.trace_id or "", [])
            baseline[cid] = [_slim(r) for r in base_rows[cid]]
            if run.error:
                base_error[cid] = run.error
            continue
        p = run.perturbation
        cell = Cell(cid, p.name, p.stage, str(p.expect), "n/a", reaction=p.reaction)
        cells.append(cell)
        trace = run.trace_id or ""
        if _settled_unjudged(cell, run, p, base_error.get(cid, ""), changed, spans_by_trace.get(trace, [])):
            continue
        _judge_cell(cell, p, run.change, rows.get(trace, []), base_rows.get(cid, []))
    return cells, baseline


def _settled_unjudged(
    cell: Cell,
    run: Run,
    p: Perturbation,
    base_error: str,
    changed: dict[str, dict[str, list[str]]],
    spans: Sequence[Any],
) -> bool:
    """Whether the cell is settled before its rows are read: the perturbation did not apply to the case,
    a run failed, or nothing was changed; the cell then says which. Otherwise its changed spans are set."""
    if run.note:
        cell.note = run.note
        return True
    if base_error:
        cell.status, cell.note = "skipped", f"the baseline run failed: {base_error}"
        return True
    if run.error:
        cell.status, cell.note = "error", run.error
        return True
    cell.spans = changed.get(run.trace_id or "", {}).get(p.name, [])
    cell.claims = list(run.change.claims)
    structured = _structured_answer(spans)
    if p.stage in ("resolution", "render") and structured:
        cell.status, cell.note = "n/a", structured
        return True
    if not run.change.applied:
        cell.note = _why_not_applied(p, run.change, spans)
        return True
    if not cell.spans:
        cell.status, cell.note = "error", "the perturbation applied but no span records it"
        return True
    return False


def _structured_answer(spans: Sequence[Any]) -> str:
    """Why resolution and render cannot be judged on this trace: its answer is structured (empty if prose)."""
    for s in spans:
        attrs = s.attributes or {}
        if attrs.get(K.CL_STAGE) == "generation" and attrs.get(K.CL_ANSWER_FORMAT) == K.AnswerFormat.STRUCTURED:
            return (
                "the answer is structured (claims with evidence by chunk id): the analyzer checks resolution "
                "and render only on a prose answer's markers"
            )
    return ""


def _why_not_applied(p: Perturbation, change: Any, spans: Sequence[Any]) -> str:

    if change.skipped:
        return str(change.skipped)
    if p.stage not in {(s.attributes or {}).get(K.CL_STAGE) for s in spans}:
        return f"no {p.stage} span in the trace: is the app's {p.stage} step decorated?"
    if not change.calls:
        return f"the {p.stage} step streams (a generator): perturbations change returned values only"
    return f"the {p.stage} step returned nothing to change"


def _judge_cell(
    cell: Cell, p: Perturbation, change: Any, got: list[dict[str, Any]], base: list[dict[str, Any]]
) -> None:
    """The cell's rows against what the perturbation declares, and the app's reaction against the baseline."""
    cell.rows = [_slim(r) for r in got]
    if p.expect.kind == "bucket":
        _bucket_cell(cell, p.expect, {r["gold_claim_id"]: r for r in base if r["gold_claim_id"]}, got)
    elif p.expect.kind == "unchanged":
        _unchanged_cell(cell, base, got)
    else:
        cell.status, cell.got = "reaction", "; ".join(_shown(r) for r in _gold_rows(got))
    if p.reaction is not None:
        if all(r["bucket"] == "ok" for r in base) and base:
            _reaction(cell, p.reaction, change, got, base)
        else:
            cell.reaction_note = "not judged: the baseline is not all ok"
