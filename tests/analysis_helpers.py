"""Run demo scenarios through the instrumented example app and analyze them for real."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb

from citeline.analyzer.run.analyze import analyze
from citeline.analyzer.run.result import AnalysisResult
from citeline.examples.demo import AS_OF, Scenario, gold_path
from citeline.examples.policy_bot import Faults, PolicyBot
from tests.conftest import make_tracing


@dataclass
class Outcome:
    scenario: Scenario
    trace_id: str
    rows: list[dict[str, Any]]
    spans: dict[str, str]  # stage -> span id

    @property
    def gold_rows(self) -> list[dict[str, Any]]:
        return [r for r in self.rows if r["gold_claim_id"] is not None]


def run_and_analyze(
    tmp_path: Path,
    scenarios: list[Scenario],
    tweak: Faults | None = None,
    gold: Path | None = None,
    corpus_only: bool = False,
) -> tuple[AnalysisResult, list[Outcome]]:
    """One trace per scenario (trace ids captured as they happen), then one analyze run: against the gold
    set, or with ``corpus_only`` against its corpus alone (no case: every trace on the corpus basis)."""
    from dataclasses import replace

    t = make_tracing(tmp_path)
    bot = PolicyBot()
    trace_ids: list[str] = []
    try:
        for sc in scenarios:
            faults = sc.faults
            if tweak is not None:
                faults = replace(
                    faults,
                    shuffle_seed=tweak.shuffle_seed,
                    label_offset=tweak.label_offset,
                    hide=faults.hide | tweak.hide,
                )
            bot.ask(sc.question, sc.script, case_id=sc.case_id, principal=sc.principal, as_of=AS_OF, faults=faults)
            req = [s for s in t.spans() if (s.attributes or {}).get("citeline.stage") == "request"][-1]
            trace_ids.append(f"{req.context.trace_id:032x}")
        t.handle.force_flush()
    finally:
        t.handle.shutdown()
    db = tmp_path / "store.duckdb"
    source = gold or gold_path()
    if corpus_only:
        result = analyze(db, traces=[t.trace_dir], corpus=source)
    else:
        result = analyze(db, traces=[t.trace_dir], gold=source)
    con = duckdb.connect(str(db))
    try:
        spans = con.execute("SELECT trace_id, stage, span_id FROM spans").fetchall()
    finally:
        con.close()
    by_trace: dict[str, dict[str, str]] = {}
    for trace_id, stage, span_id in spans:
        by_trace.setdefault(trace_id, {})[stage] = span_id
    rows = result.claims.to_dicts()
    outcomes = [
        Outcome(sc, tid, [r for r in rows if r["trace_id"] == tid], by_trace.get(tid, {}))
        for sc, tid in zip(scenarios, trace_ids, strict=True)
    ]
    return result, outcomes
