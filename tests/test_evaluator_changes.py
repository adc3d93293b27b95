"""A judge change is never an app regression: runs name their evaluator, reports mark the change,
--baseline compares with a run of the new judge, rejudge shows label changes; gates read metrics
and regressions. Through the CLI, on the demo app's real traces and real stores."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from citeline.analyzer.cli.main import main
from citeline.examples.demo import gold_path

STRICT = ["--judge", "rules", "--judge-option", "coverage=0.95"]  # another setting of the same judge


def _run(db: Path, traces: Path, *judge: str) -> str:
    assert main(
        ["analyze", "--db", str(db), "--traces", str(traces), "--gold", str(gold_path()), "--quiet", *judge]
    ) in (0, 1)
    import duckdb

    con = duckdb.connect(str(db), read_only=True)
    try:
        return str(
            con.execute("SELECT run_id FROM runs ORDER BY started_at DESC, run_id DESC LIMIT 1").fetchall()[0][0]
        )
    finally:
        con.close()


def _report(db: Path, capsys: pytest.CaptureFixture[str], *args: str) -> dict:  # type: ignore[type-arg]
    capsys.readouterr()
    assert main(["report", "--db", str(db), "--format", "json", *args]) == 0
    return json.loads(capsys.readouterr().out)  # type: ignore[no-any-return]


@pytest.mark.slow
def test_a_judge_change_reads_as_a_judge_change_and_the_baseline_reads_the_app(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fixed, broken = tmp_path / "fixed", tmp_path / "broken"
    assert main(["demo", "--traces", str(fixed), "--db", str(tmp_path / "d1.duckdb"), "--fix", "wrong-number"]) == 0
    assert main(["demo", "--traces", str(broken), "--db", str(tmp_path / "d2.duckdb")]) == 0
    db = tmp_path / "s.duckdb"
    run1 = _run(db, fixed)
    run2 = _run(db, fixed, *STRICT)  # same traces, one judge option changed
    rep2 = _report(db, capsys)
    assert rep2["compared_with"] == run1
    assert rep2["regressions"], "the stricter judge moved labels"
    assert {r["change"] for r in rep2["regressions"]} == {"judge changed"}  # never 'regressed'
    [change] = rep2["evaluator_changes"]
    assert (change["run_id"], change["judge_changed"], change["gold_changed"]) == (run2, True, False)
    assert "coverage" in change["judge"] and "coverage" not in change["judge_before"]
    capsys.readouterr()
    assert main(["report", "--db", str(db), "--fail-on", "regressions>0"]) == 0  # a judge change trips no gate
    capsys.readouterr()
    assert main(["report", "--db", str(db), "--format", "markdown"]) == 0
    assert f"- evaluator changed at run {run2}" in capsys.readouterr().out

    run3 = _run(db, broken, *STRICT)  # the app breaks, judged by the new judge
    rep3 = _report(db, capsys)
    assert rep3["compared_with"] == run2
    assert ("regressed", "returns-window") in {(r["change"], r["case_id"]) for r in rep3["regressions"]}
    capsys.readouterr()
    assert main(["report", "--db", str(db), "--fail-on", "regressions>0"]) == 1
    n = sum(r["change"] == "regressed" for r in rep3["regressions"])
    assert capsys.readouterr().err.splitlines()[-2:] == [
        f"citeline: run {run3}: 1 of 1 gate failed:",
        f"  {n} regression{'' if n == 1 else 's'} since run {run2} (gate regressions>0)",
    ]
    # against the old judge's run every change is the judge's; against the new judge's, the app's
    assert {r["change"] for r in _report(db, capsys, "--baseline", run1)["regressions"]} == {"judge changed"}
    assert _report(db, capsys, "--baseline", run2)["regressions"] == rep3["regressions"]
    assert run3

    capsys.readouterr()
    assert main(["rejudge", "--db", str(db), "--run", run1, *STRICT]) == 0
    out = capsys.readouterr().out.splitlines()
    import duckdb

    con = duckdb.connect(str(db), read_only=True)
    try:  # what the stored runs 1 and 2 say differently: exactly what rejudge lists, without storing a run
        q = (
            "SELECT trace_id, coalesce(gold_claim_id, claim_text), support_label, bucket FROM claim_results "
            "WHERE run_id = ? AND claim_text IS NOT NULL"
        )
        before = {r[:2]: r[2:] for r in con.execute(q, [run1]).fetchall()}
        after = {r[:2]: r[2:] for r in con.execute(q, [run2]).fetchall()}
        runs = con.execute("SELECT count(*) FROM runs").fetchall()[0][0]
    finally:
        con.close()
    moved = sorted(k for k in before if before[k] != after.get(k))
    assert moved
    assert out[0].startswith(f"run {run1}: {len(moved)} of {len(before)} claim(s) change, judge rules@4 -> rules@4")
    assert len(out) == 1 + len(moved)
    assert runs == 3  # rejudge stored nothing


@pytest.mark.slow
def test_gates_read_metrics_and_name_the_known_ones(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "s.duckdb"
    assert main(["demo", "--traces", str(tmp_path / "t"), "--db", str(db)]) == 0
    rep = _report(db, capsys)
    [aligned] = [m for m in rep["metrics"] if m["metric"] == "aligned_precision"]
    assert 0 < aligned["value"] < 0.9
    capsys.readouterr()
    assert main(["report", "--db", str(db), "--fail-on", "aligned_citation_precision<0.9"]) == 1
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"  aligned_precision is {aligned['value']:.4g} ({aligned['numerator']}/{aligned['denominator']}; "
        "gate aligned_precision<0.9)"
    )
    assert main(["report", "--db", str(db), "--fail-on", f"aligned_precision<{aligned['value'] / 2:.3f}"]) == 0
    assert main(["report", "--db", str(db), "--fail-on", "validity<50%"]) == 0
    capsys.readouterr()
    assert main(["report", "--db", str(db), "--fail-on", "nonsense>1"]) == 2
    err = capsys.readouterr().err
    assert "metrics: validity, completeness, aligned_precision" in err and "regressions" in err
