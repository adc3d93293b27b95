"""The perturbation harness: every gold case as is, then under each perturbation, analyzed for real.

``perturb(app, gold=...)`` calls ``app(case)`` once per gold case with no
perturbation (the baseline) and once under each perturbation of the
catalogue (``_perturbations``), with the app's own decorators changing the
stage's real return value (``citeline.instrumentation.testing``). Spans are
captured in memory, written to a folder of the run's own, and classified by
the same ``analyze`` the CLI runs. The result is a matrix of cells (case x
perturbation: declared vs got), a verdict per stage ("seen" when every cell
of that stage holds), and the app's reactions, reported apart.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

from citeline.analyzer.gold.goldset import GoldCase, GoldSet, load_gold
from citeline.analyzer.store import STAGES
from citeline.analyzer.testing.captured import CapturedStore
from citeline.analyzer.testing.edits import CaseContext, renumber
from citeline.analyzer.testing.perturb_judge import Cell, Run, judge_cells
from citeline.analyzer.testing.perturbations import Perturbation, select
from citeline.analyzer.testing.reach import unreachable_stages
from citeline.instrumentation import schema as K
from citeline.instrumentation.testing import Captured, capture, perturbing

BASELINE = "baseline"
#: the perturbation whose cells are judged against the gold set with the newer versions in force
SUPERSEDE = "retrieval.supersede"


@dataclass(frozen=True)
class Case:
    """What the app is asked for one gold case: pass these to your ``request(...)``."""

    case_id: str
    question: str
    as_of: str | None
    principal: dict[str, Any]
    expect: str

    @classmethod
    def of(cls, case: GoldCase) -> Case:
        return cls(
            case.case_id,
            case.question,
            case.as_of.isoformat() if case.as_of else None,
            {"id": case.principal_id, "groups": list(case.principal_groups)},
            case.expect,
        )


def gold_cases(gold: str | Path) -> list[Case]:
    """Every case of a gold set, as the harness hands them to the request function (for your own loops)."""
    loaded = load_gold(gold)
    if loaded.unreadable is not None:
        raise PerturbError(f"{gold}: cannot read the gold set: {loaded.unreadable}")
    return [Case.of(c) for c in loaded.cases.values()]


@dataclass
class Matrix:
    """What the calls of one perturbation run left: the runs, and the spans and log records by trace id."""

    runs: list[Run]
    spans: dict[str, list[Any]]
    logs: dict[str, list[Any]]


@dataclass
class StageVerdict:
    """Whether the harness saw a stage's perturbations reach the analyzer.

    ``seen``: every cell that could fail held; ``partly seen`` (retrieval): it held, but chunks reached the
    context that no retrieval span recorded (``unrecorded``: a second, undecorated branch); ``not seen``: a
    cell did not hold (``cells``); ``n/a``: no cell of the stage could be judged here (``note`` says why);
    ``unreachable``: no decorator wraps the step (``note`` names the one that would let the harness reach it).
    """

    stage: str
    verdict: str  # seen | partly seen | not seen | n/a | unreachable
    cells: list[Cell] = field(default_factory=list)  # the cells that did not hold
    tested: int = 0
    note: str = ""
    unrecorded: list[str] = field(default_factory=list)


@dataclass
class PerturbResult:
    """The matrix, the per-stage verdicts and the app's reactions of one perturbation run."""

    gold: str
    cases: list[str]
    perturbations: list[Perturbation]
    baseline: dict[str, list[dict[str, Any]]]
    cells: list[Cell]
    stages: dict[str, StageVerdict]
    seconds: float = 0.0
    #: ``ok_only``: the cases left out because their baseline is not all ok, each with what is not ok
    not_perturbed: dict[str, list[str]] = field(default_factory=dict)

    @property
    def all_seen(self) -> bool:
        """Every stage that was tested is seen (the instrumentation verdict)."""
        return all(v.verdict != "not seen" for v in self.stages.values())

    @property
    def reactions(self) -> list[Cell]:
        return [c for c in self.cells if c.reaction is not None and c.reaction_good is not None]

    def cell(self, case_id: str, perturbation: str) -> Cell:
        for c in self.cells:
            if c.case_id == case_id and c.perturbation == perturbation:
                return c
        raise KeyError((case_id, perturbation))

    def baseline_problems(self) -> list[str]:
        return [
            f"{case}: {r['gold_claim_id'] or r['claim_text']}: {r['bucket']}"
            for case, rows in self.baseline.items()
            for r in rows
            if r["bucket"] != "ok"
        ]

    def to_json(self) -> dict[str, Any]:
        return {
            "gold": self.gold,
            "cases": self.cases,
            "perturbations": [
                {"name": p.name, "stage": p.stage, "does": p.does, "declared": str(p.expect), "reaction": p.reaction}
                for p in self.perturbations
            ],
            "baseline": self.baseline,
            "cells": [c.to_json() for c in self.cells],
            "stages": {
                s: {
                    "verdict": v.verdict,
                    "tested": v.tested,
                    "note": v.note,
                    "unrecorded": v.unrecorded,
                    "cells": [[c.case_id, c.perturbation] for c in v.cells],
                }
                for s, v in self.stages.items()
            },
            "reactions": [
                {"case_id": c.case_id, "perturbation": c.perturbation, "good": c.reaction_good, "what": c.reaction_note}
                for c in self.reactions
            ],
            "not_perturbed": self.not_perturbed,
            "seconds": round(self.seconds, 3),
        }


class PerturbError(Exception):
    """The run cannot start (unreadable gold set, unknown perturbation); nothing ran."""


def _trace_of(spans: Sequence[Any], since: int) -> tuple[str | None, str]:
    """The trace one call of the app left: its one ``request(...)``, or, for a zero-code app that opens
    none, the one trace its instrumentor's spans make."""
    new = spans[since:]
    requests = [s for s in new if (s.attributes or {}).get(K.CL_STAGE) == "request"]
    if len(requests) == 1:
        return f"{requests[0].context.trace_id:032x}", ""
    traces = {s.context.trace_id for s in new}
    if not requests and len(traces) == 1:
        return f"{traces.pop():032x}", ""
    made = f"{len(requests)} request(s)" if requests else f"{len(traces)} trace(s) and no request(...)"
    return None, f"the app made {made} for one case; open exactly one request(...) per call"


def _perturbed_gold(gold: GoldSet, contexts: dict[str, CaseContext], folder: Path) -> Path:
    """The gold set as the supersede cells must be judged: each support chunk superseded on the case's
    date by its newer version, which the claims now cite and whose numbers they now state."""
    corpus = {cid: replace(c) for cid, c in gold.corpus.items()}
    cases = []
    for case in gold.cases.values():
        ctx = contexts.get(case.case_id)
        claims = []
        for claim in case.claims:
            newer = ctx.newer if ctx else {}
            claims.append(
                {
                    "claim_id": claim.claim_id,
                    "text": renumber(claim.text, ctx.facts_numbers) if ctx else claim.text,
                    "facts": [renumber(f, ctx.facts_numbers) for f in claim.facts] if ctx else claim.facts,
                    "support": [[newer[c].chunk_id if c in newer else c for c in b] for b in claim.support],
                    "contradicts": sorted({*claim.contradicts, *(c for b in claim.support for c in b if c in newer)}),
                }
            )
        if ctx:
            for old, new in ctx.newer.items():
                corpus[new.chunk_id] = replace(new, effective_from=case.as_of)
                if case.as_of is not None:
                    corpus[old] = replace(corpus[old], effective_to=case.as_of)
        entry: dict[str, Any] = {"case_id": case.case_id, "question": case.question, "expect": case.expect}
        if case.as_of:
            entry["as_of"] = case.as_of.isoformat()
        if case.principal_id or case.principal_groups:
            entry["principal"] = {"id": case.principal_id, "groups": list(case.principal_groups)}
        if claims:
            entry["claims"] = claims
        cases.append(entry)

    def chunk(c: Any) -> dict[str, Any]:
        out = {k: getattr(c, k) for k in ("chunk_id", "doc_id", "version", "title", "uri", "text", "status", "acl")}
        for k in ("effective_from", "effective_to"):
            if getattr(c, k) is not None:
                out[k] = getattr(c, k).isoformat()
        return {k: v for k, v in out.items() if v not in (None, "")}

    path = folder / "gold-superseded.json"
    path.write_text(json.dumps({"corpus": [chunk(c) for c in corpus.values()], "cases": cases}), encoding="utf-8")
    return path


def _call(app: Callable[[Case], Any], case: GoldCase) -> str:
    try:
        app(Case.of(case))
    except Exception as err:  # noqa: BLE001 - the app's own failure is a finding of the cell, not ours
        return f"the app raised {type(err).__name__}: {err}"
    return ""


def perturb(
    app: Callable[[Case], Any],
    gold: str | Path,
    *,
    perturbations: Sequence[str] | None = None,
    cases: Sequence[str] | None = None,
    ok_only: bool = False,
    judge: Any = "rules",
    workdir: str | Path | None = None,
) -> PerturbResult:
    """Run ``app`` over every gold case, as is and under each perturbation, and judge the matrix.

    ``app(case)`` must answer one :class:`Case` through the decorated pipeline, inside one
    ``request(question=case.question, case_id=case.case_id, principal=case.principal,
    as_of=case.as_of)``. Traces and the store live in ``workdir`` (a temporary folder by default).
    ``cases`` are case ids or globs (``returns-*``); ``ok_only`` perturbs only the cases whose baseline
    is all ok and lists the others in ``not_perturbed``.
    """
    import time

    started = time.perf_counter()
    chosen, gold_set, picked = _plan(gold, perturbations, cases)
    own_dir = tempfile.TemporaryDirectory(prefix="citeline-perturb-") if workdir is None else None
    folder = Path(own_dir.name if own_dir else str(workdir))
    folder.mkdir(parents=True, exist_ok=True)
    contexts = {c.case_id: CaseContext.of(gold_set, c) for c in picked}
    store = CapturedStore(folder)
    try:
        picked, not_perturbed = (
            _ok_only(app, picked, contexts, folder, Path(str(gold)), judge) if ok_only else (picked, {})
        )
        matrix = _run_matrix(app, picked, contexts, chosen)
        rows = _claim_rows(store, matrix, Path(str(gold)), _perturbed_gold(gold_set, contexts, folder), judge)
    finally:
        store.close()
        if own_dir is not None:
            own_dir.cleanup()
    runs, by_trace = matrix.runs, matrix.spans
    cells, baseline = judge_cells(runs, rows, _changed_spans(by_trace), spans_by_trace=by_trace)
    verdicts = _verdicts(chosen, cells, _unrecorded(runs, by_trace), unreachable_stages(by_trace, STAGES))
    return PerturbResult(
        gold=str(gold),
        cases=[c.case_id for c in picked],
        perturbations=chosen,
        baseline=baseline,
        cells=cells,
        stages=verdicts,
        seconds=time.perf_counter() - started,
        not_perturbed=not_perturbed,
    )


def _plan(
    gold: str | Path, perturbations: Sequence[str] | None, cases: Sequence[str] | None
) -> tuple[list[Perturbation], GoldSet, list[GoldCase]]:
    """The perturbations, the gold set and the cases to run; PerturbError when there is nothing to run."""
    try:
        chosen = select(perturbations)
    except ValueError as err:
        raise PerturbError(str(err)) from err
    gold_set = load_gold(gold)
    if gold_set.unreadable is not None:
        raise PerturbError(f"{gold}: cannot read the gold set: {gold_set.unreadable}")
    picked = _pick(gold, gold_set, cases)
    if not picked:
        raise PerturbError(f"{gold}: the gold set has no case to run")
    return chosen, gold_set, picked


def _pick(gold: str | Path, gold_set: GoldSet, cases: Sequence[str] | None) -> list[GoldCase]:
    """The gold cases named by ``cases`` (ids or ``fnmatch`` globs), in the gold set's order; every case
    when ``cases`` is empty. PerturbError naming each pattern that matches no case."""
    if not cases:
        return list(gold_set.cases.values())
    ids = list(gold_set.cases)
    matched = {pattern: [i for i in ids if i == pattern or fnmatchcase(i, pattern)] for pattern in cases}
    unmatched = [pattern for pattern, hits in matched.items() if not hits]
    if unmatched:
        raise PerturbError(
            f"{gold}: no gold case matches {', '.join(repr(u) for u in unmatched)}; "
            f"the case ids are {', '.join(ids[:10])}{', ...' if len(ids) > 10 else ''}"
        )
    wanted = {i for hits in matched.values() for i in hits}
    return [c for c in gold_set.cases.values() if c.case_id in wanted]


def _ok_only(
    app: Callable[[Case], Any],
    picked: Sequence[GoldCase],
    contexts: dict[str, CaseContext],
    folder: Path,
    gold: Path,
    judge: Any,
) -> tuple[list[GoldCase], dict[str, list[str]]]:
    """``ok_only``: each case's baseline run and analyzed first; the cases whose baseline is all ok (to
    perturb; the matrix runs their baseline again), and the others with what is not ok in each."""
    matrix = _run_matrix(app, picked, contexts, [])
    runs = matrix.runs
    spans = [s for group in matrix.spans.values() for s in group]
    logs = [r for group in matrix.logs.values() for r in group]
    rows: dict[str, list[dict[str, Any]]] = {}
    store = CapturedStore(folder / "ok-only")  # its own: the matrix's capture numbers its traces from 1 again
    try:
        if spans:
            for r in store.analyze(spans, gold, judge=judge, logs=logs).claims.to_dicts():
                rows.setdefault(r["trace_id"], []).append(r)
    finally:
        store.close()
    ok: list[GoldCase] = []
    not_ok: dict[str, list[str]] = {}
    for run in runs:
        mine = rows.get(run.trace_id or "", [])
        problems = [f"{r['gold_claim_id'] or r['claim_text']}: {r['bucket']}" for r in mine if r["bucket"] != "ok"]
        if run.error:
            problems = [run.error]
        elif not mine:
            problems = ["no claim was classified"]
        if problems:
            not_ok[run.case.case_id] = problems
        else:
            ok.append(run.case)
    return ok, not_ok


def _run_matrix(
    app: Callable[[Case], Any],
    picked: Sequence[GoldCase],
    contexts: dict[str, CaseContext],
    chosen: Sequence[Perturbation],
) -> Matrix:
    """Each case as is, then under each perturbation, in one capture."""
    runs: list[Run] = []
    with capture() as cap:
        for case in picked:
            for p in (None, *chosen):
                runs.append(_run_cell(app, case, contexts[case.case_id], p, cap))
        spans = cap.spans()
        records = cap.log_records()
    by_trace: dict[str, list[Any]] = {}
    for s in spans:
        by_trace.setdefault(f"{s.context.trace_id:032x}", []).append(s)
    logs: dict[str, list[Any]] = {}
    for r in records:
        logs.setdefault(f"{getattr(r.log_record, 'trace_id', 0) or 0:032x}", []).append(r)
    return Matrix(runs, by_trace, logs)


def _run_cell(
    app: Callable[[Case], Any], case: GoldCase, ctx: CaseContext, p: Perturbation | None, cap: Captured
) -> Run:
    """One call of the app: as is (``p`` None) or under ``p``, unless ``p`` does not apply to the case (a note)."""
    run = Run(case, p)
    if p is None:
        since = len(cap.spans())
        run.error = _call(app, case)
    else:
        prepared = p.prepare(ctx)
        if isinstance(prepared, str):
            run.note = prepared
            return run
        run.change = prepared
        since = len(cap.spans())
        with perturbing(prepared):
            run.error = _call(app, case)
    if not run.error:
        run.trace_id, run.error = _trace_of(cap.spans(), since)
    return run


def _claim_rows(
    store: CapturedStore, matrix: Matrix, gold: Path, superseded_gold: Path, judge: Any
) -> dict[str, list[dict[str, Any]]]:
    """The claim rows of every trace, by trace id: the supersede cells against the gold set with the newer
    versions in force, the others against the gold set as it is."""
    runs = matrix.runs
    superseded = {r.trace_id for r in runs if r.trace_id and r.perturbation and r.perturbation.name == SUPERSEDE}
    plain = [tid for tid in matrix.spans if tid not in superseded]
    rows: dict[str, list[dict[str, Any]]] = {}
    for traces, gold_path in ((plain, gold), (sorted(superseded), superseded_gold)):
        subset = [s for tid in traces for s in matrix.spans.get(tid, [])]
        if not subset:
            continue
        logs = [r for tid in traces for r in matrix.logs.get(tid, [])]
        result = store.analyze(subset, gold_path, judge=judge, logs=logs)
        for r in result.claims.to_dicts():
            rows.setdefault(r["trace_id"], []).append(r)
    return rows


def _changed_spans(by_trace: dict[str, list[Any]]) -> dict[str, dict[str, list[str]]]:
    """Trace id -> perturbation -> the ids of the spans it changed."""
    changed: dict[str, dict[str, list[str]]] = {}
    for tid, group in by_trace.items():
        for s in group:
            name = (s.attributes or {}).get(K.CL_PERTURBATION)
            if name:
                changed.setdefault(tid, {}).setdefault(str(name), []).append(f"{s.context.span_id:016x}")
    return changed


def _unrecorded(runs: Sequence[Run], by_trace: dict[str, list[Any]]) -> list[str]:
    """The chunks that reached the context of a baseline trace with no retrieval span recording them."""
    missing: dict[str, None] = {}
    for run in runs:
        if run.perturbation is not None or not run.trace_id:
            continue
        retrieved: set[str] = set()
        context: list[str] = []
        any_retrieval = False
        for span in by_trace.get(run.trace_id, []):
            attrs = span.attributes or {}
            ids = [str(i) for i in attrs.get(K.CL_CHUNK_ID, ()) or ()]
            stage = attrs.get(K.CL_STAGE)
            if stage == "retrieval":
                any_retrieval = True
                retrieved.update(ids)
            elif stage == "context":
                context += ids
        if any_retrieval:
            missing.update(dict.fromkeys(c for c in context if c not in retrieved))
    return list(missing)


def _not_applicable(cells: Sequence[Cell]) -> str:
    """Why no cell of a stage could be judged: each distinct reason with how many cells gave it."""
    why: dict[str, int] = {}
    for c in cells:
        note = c.note or c.status
        why[note] = why.get(note, 0) + 1
    return "; ".join(f"{note} ({n} cell(s))" for note, n in why.items()) or "no cell of this stage applied"


def _verdicts(
    chosen: Sequence[Perturbation],
    cells: Sequence[Cell],
    unrecorded: Sequence[str],
    unreachable: Mapping[str, str] | None = None,
) -> dict[str, StageVerdict]:
    out: dict[str, StageVerdict] = {}
    for stage in STAGES:
        judged = [p.name for p in chosen if p.stage == stage and p.expect.kind != "none"]
        if not judged:
            continue
        all_cells = [c for c in cells if c.perturbation in judged]
        mine = [c for c in all_cells if c.status in ("holds", "differs", "error")]
        bad = [c for c in mine if c.status != "holds"]
        if not mine and stage in (unreachable or {}):
            verdict = StageVerdict(stage, "unreachable", [], 0, (unreachable or {})[stage])
        elif not mine:
            verdict = StageVerdict(stage, "n/a", [], 0, _not_applicable(all_cells))
        else:
            verdict = StageVerdict(stage, "not seen" if bad else "seen", bad, len(mine))
        if stage == "retrieval" and unrecorded and verdict.verdict in ("seen", "n/a"):
            verdict.verdict = "partly seen"
            verdict.unrecorded = list(unrecorded)
            verdict.note = (
                f"{len(unrecorded)} chunk(s) reached the context with no retrieval span recording them: "
                f"{', '.join(unrecorded)} (an undecorated retrieval branch?)"
                + (f"; {verdict.note}" if verdict.note else "")
            )
        out[stage] = verdict
    return out
