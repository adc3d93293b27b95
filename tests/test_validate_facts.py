"""citeline validate warns when a confirmed gold claim states a number, amount or date but gives no facts
(issue #24): the judge's deterministic value check then cannot run for it. A run does not repeat it."""

from __future__ import annotations

from pathlib import Path

import pytest

from citeline.analyzer.cli.main import main
from citeline.analyzer.gold.goldset import load_gold

GOLD = """\
corpus:
  - {chunk_id: ship-1, doc_id: shipping, text: Standard shipping costs $4.99 and takes 3 to 5 business days.}
  - {chunk_id: warranty-1, doc_id: warranty, text: The warranty does not cover water damage.}
cases:
  - case_id: cost
    question: How much is shipping?
    claims:
      - claim_id: price
        text: Standard shipping costs $4.99 and takes 3 to 5 business days.
        support: [[ship-1]]
      - claim_id: checked
        text: Standard shipping costs $4.99.
        facts: ["$4.99"]
        support: [[ship-1]]
      - claim_id: words-only
        text: The warranty does not cover water damage.
        support: [[warranty-1]]
  - case_id: since
    question: Since when?
    claims:
      - claim_id: dated
        text: The policy applies since 1 July 2026.
        support: [[ship-1]]
  - case_id: drafted
    question: A draft?
    status: draft
    claims:
      - claim_id: d1
        text: Shipping costs $4.99.
        support: [[ship-1]]
"""


def test_validate_names_each_claim_whose_values_no_fact_checks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    gold = tmp_path / "gold.yaml"
    gold.write_text(GOLD)
    assert main(["validate", str(gold)]) == 0  # a warning, not a problem: the set is usable
    assert capsys.readouterr().out.splitlines() == [
        f"warning: {gold}:line 8: facts: claim 'price' states $4.99, 3, 5 business days but has no facts, so the "
        'value is not checked deterministically; add facts: ["$4.99", "3", "5 business days"]',
        f"warning: {gold}:line 21: facts: claim 'dated' states 1 july 2026 but has no facts, so the value is not "
        'checked deterministically; add facts: ["1 july 2026"]',
        # a draft is warned about once, as a whole: its claims are read when a person confirms it
        f"warning: {gold}:line 24: status: case 'drafted' is a draft: check its claims and support chunks, then "
        "delete 'status: draft'",
        "2 chunks, 3 cases, 0 problem(s), 3 warning(s)",
    ]


def test_a_run_does_not_carry_the_facts_warning(tmp_path: Path) -> None:
    gold = tmp_path / "gold.yaml"
    gold.write_text(GOLD)
    assert [w.field for w in load_gold(gold).warnings] == ["status"]  # what analyze loads: drafts only
    assert [w.field for w in load_gold(gold, advise=True).warnings] == ["facts", "facts", "status"]
