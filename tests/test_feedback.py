"""A user's report reaches the run as a flagged claim and becomes a draft regression case.

A small app with the real decorators answers the demo's refund question; the user reports "this
source does not say that", while the request is open or after it ended. Real trace files, a real
store, the real CLI.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from citeline.analyzer.cli.main import main
from citeline.analyzer.run.analyze import analyze
from citeline.examples.demo import gold_path
from citeline.instrumentation import context_assembly, generation, request, retrieval
from tests.conftest import make_tracing
from tests.oi_apps import TEXT

QUESTION = "How fast are refunds issued to my payment method?"
CLAIM = "Refunds are issued to the original payment method within 5 business days"


@retrieval
def _search(q: str) -> list[dict[str, Any]]:
    return [
        {"chunk_id": c, "doc_id": c.split("#")[0], "version": "v4", "text": TEXT[c]}
        for c in ("returns-v4#refunds-3", "returns-v4#eligibility-2")
    ]


@context_assembly
def _assemble(q: str, hits: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return hits


@generation
def _answer(ctx: Any) -> str:
    return f"{CLAIM} [1]. Opened electronics may be returned within 30 days [2]."


@pytest.mark.slow
@pytest.mark.parametrize("when", ["during", "after"])
def test_a_report_flags_its_claim_and_drafts_a_case_that_reproduces_it(
    tmp_path: Path, when: str, capsys: pytest.CaptureFixture[str]
) -> None:
    t = make_tracing(tmp_path)
    try:
        with request(question=QUESTION, case_id="refund-speed", principal={"id": "u", "groups": []}) as req:
            _answer(_assemble(QUESTION, _search(QUESTION)))
            if when == "during":
                req.feedback("this source does not say that", claim=CLAIM, chunk="returns-v4#refunds-3")
        if when == "after":  # the user's next click, after the answer was shown
            req.feedback("this source does not say that", claim=CLAIM, chunk="returns-v4#refunds-3")
    finally:
        t.handle.shutdown()
    db = tmp_path / "s.duckdb"
    result = analyze(db, gold=gold_path(), traces=[t.trace_dir])
    rows = result.claims.to_dicts()
    flagged = [r for r in rows if "user_feedback" in r["flags"]]
    assert [(r["gold_claim_id"], r["bucket"]) for r in flagged] == [("speed", "ok")]  # a reason to look, not a verdict
    assert all("user_feedback" not in r["flags"] for r in rows if r not in flagged)

    out = tmp_path / "draft.yaml"
    assert main(["gold", "--db", str(db), "draft", "--from-feedback", "--out", str(out)]) == 0
    drafted = yaml.safe_load(out.read_text())
    [case] = drafted["cases"]
    assert case["status"] == "draft" and case["question"] == QUESTION
    assert case["claims"] == [
        {
            "claim_id": "reported-1",
            "text": CLAIM + " [1].",
            "facts": ["5 business days"],
            "support": [["returns-v4#refunds-3"]],
        }
    ] or case["claims"][0]["support"] == [["returns-v4#refunds-3"]]
    incident = case["incident"]
    assert (incident["trace_id"], incident["reported"]) == (rows[0]["trace_id"], "this source does not say that")
    assert incident["claims"][0]["cited"] == [
        {"chunk_id": "returns-v4#refunds-3", "version": "v4", "text": TEXT["returns-v4#refunds-3"]}
    ]
    capsys.readouterr()
    assert main(["validate", str(out)]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert [line for line in printed if line.startswith("warning:")] == [
        f"warning: {out}:line {_line_of(out, 'case_id')}: status: case {case['case_id']!r} is a draft: "
        "check its claims and support chunks, then delete 'status: draft'"
    ]
    again = analyze(tmp_path / "again.duckdb", gold=out, traces=[t.trace_dir])
    [row] = [r for r in again.claims.to_dicts() if r["gold_claim_id"] == "reported-1"]
    assert row["claim_text"] == CLAIM + "."  # the claim, reproduced by the draft case


def _line_of(path: Path, key: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), start=1) if key in line and "case" in line)
