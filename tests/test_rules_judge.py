"""The rules judge v2: each rule with the labelled example that motivates it (docs/judges.md lists them),
and its agreement with people on the repository's data (WiCE, ExpertQA, RGB)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from citeline.analyzer._calibrate import calibrate
from citeline.analyzer.judges import RulesJudge, load
from citeline.analyzer.judges._rules import sentences

DATA = Path(__file__).resolve().parent / "data"

RULES = [
    # (rule, claim, evidence, label)
    ("window", "The museum is closed on Mondays.",
     "The museum is open daily. The cafe downstairs is closed for renovation. Guided tours run on Mondays.",
     "insufficient"),
    ("window", "The museum is closed on Mondays.",
     "Opening hours vary by season. The museum is closed on Mondays and public holidays.", "entailed"),
    ("name", "Scott Weiland was the lead singer and frontman of the band.",
     "Joey Cape was the lead singer and frontman of the band.", "insufficient"),  # round 1: entailed
    ("name", "Venus Williams won the final.", "Serena Williams won the final in straight sets.", "insufficient"),
    ("name", "The UN adopted the resolution in 1960.",
     "In 1960 the United Nations adopted the resolution on decolonisation.", "entailed"),
    ("name", "TechCrunch praised the site.", "Tech Crunch praised the site in its review.", "entailed"),
    ("year", "The bridge opened in 1932.", "The bridge opened in 1937 after four years of work.", "insufficient"),
    ("count", "The team has won 3 league titles.", "The team has won 5 league titles since 1990.", "insufficient"),
    ("amount", "Copies cost $0.50 per page.", "Copies cost $0.25 per page at the front desk.", "contradicted"),
    ("date", "The treaty was signed on 4 July 1776.", "It was signed on July 4, 1776, in Philadelphia.", "entailed"),
    ("date", "The treaty was signed on 14 July 1776.", "It was signed on July 4, 1776, in Philadelphia.",
     "contradicted"),
    ("negation", "The hotel does not have a pool.", "The hotel has a heated pool on the roof.", "contradicted"),
    ("negation", "The council approved the new budget on Tuesday.",
     "The council approved the new budget on Tuesday, though not all members agreed.", "entailed"),
    ("negation", "The hotel has a heated pool on the roof.",
     "The hotel has a heated pool on the roof. Pets are not allowed in the rooms.", "entailed"),
    ("modality", "Visitors must book a guided tour in advance.",
     "Visitors may book a guided tour in advance.", "contradicted"),
    ("addressed", "The chief executive resigned in protest.",
     "The company reported record profits for the quarter.", "insufficient"),
    ("sentences", "The council approved the budget. It also raised the parking fee by 5%.",
     "The council approved the budget for next year without changes.", "insufficient"),
    ("chatter", "Yes, I love that movie! It was directed by Steven Spielberg.",
     "Jaws is a 1975 thriller film directed by Steven Spielberg.", "entailed"),
    ("chatter", "Oh, I love that movie! It was directed by James Cameron.",
     "Jaws is a 1975 thriller film directed by Steven Spielberg.", "insufficient"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("rule", "claim", "evidence", "label"), RULES, ids=[f"{r[0]}-{i}" for i, r in enumerate(RULES)]
)
def test_each_rule_on_its_motivating_example(rule: str, claim: str, evidence: str, label: str) -> None:
    j = RulesJudge().judge(claim, [evidence])
    assert j.label == label, (rule, j.rationale)


def test_switching_a_rule_off_is_an_option_and_part_of_the_cache_key() -> None:
    off = load("rules", names="false")
    claim, evidence = "Scott Weiland was the frontman of the band.", ["Joey Cape is the frontman of the band Lagwagon."]
    assert off.judge(claim, evidence).label == "entailed"
    assert dict(off.settings) == {"names": False}
    assert dict(RulesJudge().settings) == {}


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(alphabet=st.sampled_from(list("ab .!?\"')\nDrU.S")), max_size=30), max_size=6))
def test_sentence_splitting_keeps_every_word_in_order(parts: list[str]) -> None:
    text = ". ".join(parts)
    assert " ".join(sentences(text)).split() == text.split()


@settings(max_examples=150, deadline=None)
@given(
    claim=st.text(max_size=120),
    evidence=st.lists(st.text(max_size=200), max_size=4),
)
def test_the_judge_always_answers_a_known_label(claim: str, evidence: list[str]) -> None:
    j = RulesJudge().judge(claim, evidence)
    assert j.label in ("entailed", "contradicted", "insufficient", "not_applicable")
    assert j.rationale


# --- agreement with people on the repository's data (docs/judges.md has the tables) ----------------


def test_wice_kappa_is_at_least_0_40() -> None:
    a = calibrate(DATA / "wice" / "claim_test.jsonl", RulesJudge())
    assert a.n == 358
    assert a.kappa >= 0.40, a


def test_rgb_false_support_is_at_most_0_02() -> None:
    a = calibrate(DATA / "rgb" / "en_fact.jsonl", RulesJudge())
    assert a.n == 1179
    assert a.false_support <= 0.02, a


def test_expertqa_agreement_does_not_fall() -> None:
    """Below the 0.15 the issue asks for: docs/judges.md shows why no word-overlap rule reaches it here."""
    a = calibrate(DATA / "expertqa" / "rand_test.jsonl", RulesJudge())
    assert a.n == 793
    assert a.kappa >= 0.07, a


def test_calibrate_against_the_labels_people_gave_in_a_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from citeline.analyzer._analyze import analyze
    from citeline.analyzer._cli import main
    from citeline.examples.demo import SCENARIOS, gold_path
    from tests.analysis_helpers import run_and_analyze

    picked = [s for s in SCENARIOS if s.name in ("wrong-number", "wrong-number~fixed")]
    _, outcomes = run_and_analyze(tmp_path, picked)
    wrong = next(o.trace_id for o in outcomes if o.scenario.name == "wrong-number")
    right = next(o.trace_id for o in outcomes if o.scenario.name == "wrong-number~fixed")
    labels = tmp_path / "labels.csv"
    # people call the 60-day claim entailed (a mistake the judge should not share) and the 30-day one entailed
    labels.write_text(f"trace_id,claim,label\n{wrong},window,entailed\n{right},window,entailed\n")
    db = tmp_path / "labelled.duckdb"
    analyze(db, gold=gold_path(), traces=[tmp_path / "traces"], labels=labels)
    assert main(["calibrate", "--against-gold", "--db", str(db), "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["n"], out["left_out"]) == (2, 0)
    assert out["confusion"] == {
        "supported": {"entailed": 1, "contradicted": 1, "insufficient": 0, "not_applicable": 0},
        "not_supported": {"entailed": 0, "contradicted": 0, "insufficient": 0, "not_applicable": 0},
    }
    assert out["source"].endswith("(human labels)")
    # a store without labelled runs says so
    empty = tmp_path / "empty.duckdb"
    analyze(empty, gold=gold_path(), traces=[tmp_path / "traces"])
    assert main(["calibrate", "--against-gold", "--db", str(empty)]) == 1
    assert "no run has human labels; run analyze with --labels FILE first" in capsys.readouterr().err


def test_a_large_batch_on_every_core_answers_as_one_process_does() -> None:
    """judge_many spreads 4,000+ items over processes (grouped by evidence): same answers, same order."""
    from citeline.analyzer.judges import JudgeItem
    from citeline.analyzer.judges._rules import PARALLEL_MIN

    rows = [json.loads(line) for line in (DATA / "wice" / "claim_test.jsonl").read_text().splitlines()]
    items = [
        JudgeItem(r["claim"] if i % 3 else r["evidence"][i % len(r["evidence"])], r["evidence"][j : j + 3])
        for i, r in enumerate(rows)
        for j in range(0, min(len(r["evidence"]), 36), 3)
    ]
    assert len(items) >= PARALLEL_MIN
    parallel = RulesJudge(workers=2).judge_many(items)
    assert parallel == RulesJudge(workers=1).judge_many(items)
    assert {j.label for j in parallel} >= {"entailed", "insufficient"}


def test_may_after_a_number_is_the_verb_when_a_verb_follows_and_the_month_otherwise() -> None:
    # found by the distinct-answer benchmark: "section 2 may be returned" was read as the date 2 May,
    # and every such claim was judged insufficient ("the evidence does not state 05-02")
    from citeline.analyzer.judges._text import values

    assert values("Items of section 2 may be returned within 34 days.") == [("num", "", 2.0), ("qty", "day", 34.0)]
    assert values("Fees after 14 days may not apply.") == [("qty", "day", 14.0)]
    assert values("Delivered on 2 May 2024.") == [("date", "2024", 502.0)]
    assert values("Items bought 3 May qualify.") == [("date", "", 503.0)]
    verdict = RulesJudge().judge(
        "Items of section 2 may be returned within 34 days.",
        ["Policy 5 section 2: items may be returned within 34 days."],
        ["34 days"],
    )
    assert verdict.label == "entailed", verdict
