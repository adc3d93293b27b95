"""A large run is classified slice by slice; the slices must not change any row."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from citeline.analyzer.run import analyze as _analyze
from citeline.analyzer.run import joining as _joining
from citeline.examples.demo import SCENARIOS, gold_path
from tests.analysis_helpers import run_and_analyze

ROW = ["trace_id", "case_id", "gold_claim_id", "claim_text", "bucket", "stage", "span_id", "flags", "reason"]


@pytest.mark.slow
def test_slicing_the_run_changes_no_row(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    whole, _ = run_and_analyze(tmp_path, SCENARIOS)
    # one row per (trace, gold claim): two traces with the same claim and different quotes once
    # shared a judgment row and each got two rows (this test found it)
    gold_rows = whole.claims.filter(whole.claims["gold_claim_id"].is_not_null())
    assert not gold_rows.select("trace_id", "gold_claim_id").is_duplicated().any()
    traces = next(tmp_path.glob("**/traces"))
    store = tmp_path / "sliced.duckdb"
    shutil.copy(tmp_path / "store.duckdb", store)
    phases: list[str] = []
    monkeypatch.setattr(_joining, "PART_TRACES", 5)  # 36 traces -> 8 slices
    sliced = _analyze.analyze(store, gold=gold_path(), traces=[traces], on_phase=phases.append)
    assert "classifying (8/8)" in phases
    assert sliced.summary == whole.summary
    assert sliced.claims.select(ROW).rows() == whole.claims.select(ROW).rows()
    assert (
        sliced.cases.select("trace_id", "case_id", "verdict").rows()
        == whole.cases.select("trace_id", "case_id", "verdict").rows()
    )
    assert sliced.unmatched_traces == whole.unmatched_traces == 0


def test_results_are_read_from_the_store_when_first_used(tmp_path: Path) -> None:
    run_and_analyze(tmp_path, SCENARIOS[:4])
    result = _analyze.analyze(tmp_path / "store.duckdb", gold=gold_path())  # the whole store again
    assert "claims" not in vars(result)  # nothing loaded yet
    failing = result.failing(2)
    assert failing.height == 2
    assert failing.rows() == result.claims.filter(result.claims["bucket"] != "ok").head(2).rows()
    assert sum(result.summary.values()) == result.claims.height


@pytest.mark.slow
def test_slices_hold_traces_whose_spans_were_stored_apart(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Half of every trace's spans in one file, the rest in another read later: each slice's
    rowid range must stretch to reach them, and no row may change."""
    import json

    whole, _ = run_and_analyze(tmp_path, SCENARIOS)
    lines = next(tmp_path.glob("**/traces/*.jsonl")).read_bytes().split(b"\n")[:-1]
    first: list[str] = []
    second: list[str] = []
    for line in lines:
        doc = json.loads(line)
        spans = doc["resourceSpans"][0]["scopeSpans"][0]["spans"]
        for part, keep in ((first, spans[: len(spans) // 2]), (second, spans[len(spans) // 2 :])):
            doc["resourceSpans"][0]["scopeSpans"][0]["spans"] = keep
            part.append(json.dumps(doc))
    split = tmp_path / "split"
    split.mkdir()
    (split / "a.jsonl").write_text("\n".join(first) + "\n")
    (split / "b.jsonl").write_text("\n".join(second) + "\n")
    store = tmp_path / "split.duckdb"
    _analyze.analyze(store, gold=gold_path(), traces=[split / "a.jsonl"])  # half of each trace first
    monkeypatch.setattr(_joining, "PART_TRACES", 5)
    sliced = _analyze.analyze(store, gold=gold_path(), traces=[split])
    assert sliced.problems() == []
    assert sliced.summary == whole.summary
    assert sliced.claims.select(ROW).rows() == whole.claims.select(ROW).rows()


def test_an_in_memory_store_still_returns_its_rows(tmp_path: Path) -> None:
    whole, _ = run_and_analyze(tmp_path, SCENARIOS[:4])
    traces = next(tmp_path.glob("**/traces"))
    result = _analyze.analyze(":memory:", gold=gold_path(), traces=[traces])
    assert result.claims.select(ROW).rows() == whole.claims.select(ROW).rows()
    assert result.cases.height == 4


def test_a_long_batch_reports_progress_while_it_runs(tmp_path: Path) -> None:
    """One query covers up to 4 GiB of trace files; the progress line moves during it."""
    from citeline.analyzer.sources.ingest import _reporting
    from citeline.analyzer.store import connect

    con = connect(tmp_path / "s.duckdb")
    seen: list[tuple[int, int]] = []
    with _reporting(con, lambda done, total: seen.append((done, total)), 1_000, 4_000, 10_000):
        con.execute("SELECT sum(hash(i)) FROM range(400000000) AS t(i)").fetchall()  # ~1-2 s here
    con.close()
    assert seen, "no progress while the query ran"
    assert all(1_000 < done < 5_000 and total == 10_000 for done, total in seen)
