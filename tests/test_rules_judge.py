"""The rules judge: each rule with the labelled example that motivates it (docs/judges.md lists them), v3's
qualifier readers each with the v2 verdict it corrects and a twin that stays entailed, and the agreement
of v2 and v3 with people on the repository's data (WiCE, ExpertQA, RGB)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from citeline.analyzer.judges import JudgeItem, RulesJudge, ident, load
from citeline.analyzer.labels.calibrate import calibrate
from citeline.analyzer.text import sentences

DATA = Path(__file__).resolve().parent / "data"

# fmt: skip below: a table, one example a row with its fields across (ruff would set one field a line)
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


@pytest.mark.parametrize("version", ["2", "3", "4"])
@pytest.mark.parametrize(
    ("rule", "claim", "evidence", "label"), RULES, ids=[f"{r[0]}-{i}" for i, r in enumerate(RULES)]
)
def test_each_rule_on_its_motivating_example(rule: str, claim: str, evidence: str, label: str, version: str) -> None:
    j = RulesJudge(version=version, workers=1).judge(claim, [evidence])
    assert j.label == label, (rule, j.rationale)


# --- v3: the qualifiers (issue #24). Each example: v2 said entailed; v3 says otherwise, and why ------------

# fmt: skip below: a table, one example a row with its fields across (ruff would set one field a line)
V3 = [
    # (reader, claim, evidence, v3 label, v3 rationale)
    ("comparison", "Orders under $50 ship free.", "Orders over $50 ship free within the continental US.",
     "contradicted", "the claim says 'under $50', the evidence says 'over $50'"),
    ("comparison", "Cancellations need at least 48 hours of notice.", "Cancellations need at most 48 hours of notice.",
     "contradicted", "the claim says 'at least 48 hours', the evidence says 'at most 48 hours'"),
    ("comparison", "The fee applies to accounts opened before 2020.", "The fee applies to accounts opened since 2020.",
     "contradicted", "the claim says 'before 2020', the evidence says 'since 2020'"),
    ("comparison", "A 15% restocking fee applies to opened electronics returned within 14 days.",
     "A 15% restocking fee applies to opened electronics returned after 14 days.",
     "contradicted", "the claim says 'within 14 days', the evidence says 'after 14 days'"),
    ("comparison", "Members may bring 2 guests or more.", "Members may bring 2 guests or fewer.",
     "contradicted", "the claim says '2 guests or more', the evidence says '2 guests or fewer'"),
    ("comparison", "Badges are collected before the keynote.", "Badges are collected after the keynote.",
     "contradicted", "the claim says 'before the keynote', the evidence says 'after the keynote'"),
    ("direction", "Fees fell 5% last year.", "Fees rose 5% last year.",
     "contradicted", "direction differs: the claim says 'fell', the evidence 'rose' (5%, fees, last)"),
    ("direction", "The update will increase battery life.", "The update will decrease battery life.",
     "contradicted", "direction differs: the claim says 'increase', the evidence 'decrease' (battery, life, update)"),
    ("direction", "Quarterly revenue changed by +8%.", "Quarterly revenue changed by -8%.",
     "contradicted", "direction differs: the claim says '+', the evidence '-' (+8%)"),
    ("per", "The plan costs $20 per day.", "The plan costs $20 per month.",
     "contradicted", "the claim counts per day, the evidence per month"),
    ("per", "Download limits apply per user.", "Download limits apply per account.",
     "contradicted", "the claim counts per user, the evidence per account"),
    ("per", "The gym charges a $30 monthly fee.", "The gym charges a $30 annual fee.",
     "contradicted", "the claim counts per month, the evidence per year"),
    ("quantifiers", "All plans include phone support.", "The Pro plan includes phone support.",
     "insufficient", "the claim says 'all plans', the evidence only 'pro plan'"),
    ("quantifiers", "The office is always open on Sundays.", "The office is usually open on Sundays.",
     "insufficient", "the claim says 'always' (open), the evidence only 'usually'"),
    ("quantifiers", "Every store stocks the charger.", "Some stores stock the charger.",
     "insufficient", "the claim says 'every' (stock), the evidence only 'some'"),
    ("scope", "Returns are free in every country.", "Returns are free in the EU.",
     "insufficient", "the claim says 'in every country', the evidence 'in the eu'"),
    ("scope", "Approval is required for domestic hotels above 4,000 TRY.",
     "Approval is required for international hotels above 4,000 TRY per night.",
     "insufficient", "the claim is about 'domestic', the evidence about 'international'"),
    ("partial", "Refunds take 5 business days and include the original shipping fee.", "Refunds take 5 business days.",
     "insufficient", "the evidence does not cover 'include the original shipping fee'"),
    ("counts", "The overpass has two elevators.", "The new overpass has elevators at both ends.",
     "insufficient", "the evidence does not state 'two'"),
    ("counts", "New Zealand were the fourth team to qualify.", "New Zealand were the last team to qualify.",
     "insufficient", "the evidence does not state 'fourth'"),
]  # fmt: skip

# each example's twin: the same reader reads it and finds nothing wrong (v2 and v3 both entailed)
# fmt: skip below: a table, one example a row with its fields across (ruff would set one field a line)
TWINS = [
    ("comparison", "Orders over $50 ship free.", "Orders over $50 ship free within the continental US."),
    ("comparison", "Cancellations need 48 hours or more of notice.", "Cancellations need at least 48 hours of notice."),
    ("comparison", "The fee applies to accounts opened after 2020.", "The fee applies to accounts opened since 2020."),
    ("comparison", "Badges are collected before the keynote.", "Badges are collected before the keynote starts."),
    ("direction", "Fees rose 5% last year.", "Fees rose 5% last year, the annual report says."),
    ("direction", "The update will decrease battery life.", "The update will decrease battery life by an hour."),
    ("per", "The plan costs $20 per month.", "The plan costs $20 per month, billed yearly."),
    ("per", "Download limits apply per account.", "Download limits apply per account."),
    ("quantifiers", "The Pro plan includes phone support.", "The Pro plan includes phone support."),
    ("quantifiers", "All plans include phone support.", "All plans, from Basic to Pro, include phone support."),
    ("quantifiers", "The office is usually open on Sundays.", "The office is always open on Sundays."),
    ("quantifiers", "Some stores stock the charger.", "Every store stocks the charger."),
    ("scope", "Returns are free in the EU.", "Returns are free in the EU."),
    ("scope", "Returns are free in every country.", "Returns are free in every country we ship to, Canada included."),
    ("scope", "Approval is required for international hotels above 4,000 TRY.",
     "Approval is required for international hotels above 4,000 TRY per night."),
    ("partial", "Refunds take 5 business days and include the original shipping fee.",
     "Refunds take 5 business days. The refund includes the original shipping fee."),
    ("counts", "The overpass has two elevators.", "The new overpass has 2 elevators."),
    ("counts", "New Zealand were the fourth team to qualify.", "New Zealand were the 4th team to qualify."),
]  # fmt: skip


@pytest.mark.parametrize(
    ("reader", "claim", "evidence", "label", "rationale"), V3, ids=[f"{r[0]}-{i}" for i, r in enumerate(V3)]
)
def test_v3_reads_the_qualifier_v2_missed(reader: str, claim: str, evidence: str, label: str, rationale: str) -> None:
    v2 = RulesJudge(version=2, workers=1).judge(claim, [evidence])
    assert v2.label == "entailed", v2  # the defect the issue reports
    v3 = RulesJudge(version=3, workers=1).judge(claim, [evidence])
    assert (v3.label, v3.rationale) == (label, rationale)
    v4 = RulesJudge(workers=1).judge(claim, [evidence])  # v4 reads v3's qualifiers first: the same reason
    assert (v4.label, v4.rationale) == (label, rationale)
    # the reader is what decides: with it off, v3 says what v2 said
    off = load("rules", version="3", **{reader: "false"}, workers="1")
    assert off.judge(claim, [evidence]).label == "entailed"
    assert dict(off.settings) == {reader: False}


@pytest.mark.parametrize(("reader", "claim", "evidence"), TWINS, ids=[f"{r[0]}-{i}" for i, r in enumerate(TWINS)])
def test_v3_twins_stay_entailed(reader: str, claim: str, evidence: str) -> None:
    for version in ("2", "3", "4"):
        j = RulesJudge(version=version, workers=1).judge(claim, [evidence])
        assert j.label == "entailed", (reader, version, j.rationale)


def test_v3_names_skip_prepositions_and_number_words_opening_a_sentence() -> None:
    claim = "Upon retiring, Brodeur joined the Blues as an assistant."
    evidence = ["Brodeur retired and joined the Blues."]
    assert RulesJudge(version=2, workers=1).judge(claim, evidence).rationale == "the evidence does not name 'Upon'"
    assert RulesJudge(workers=1).judge(claim, evidence).label == "entailed"
    claim, evidence = "One approach is to read aloud every day.", ["Reading aloud every day is a good approach."]
    assert RulesJudge(version=2, workers=1).judge(claim, evidence).rationale == "the evidence does not name 'One'"
    assert RulesJudge(workers=1).judge(claim, evidence).label == "entailed"


def test_the_version_is_an_option_and_names_the_judge() -> None:
    v2, v3, v4 = load("rules", version="2"), load("rules", version="3"), load("rules")
    assert (v2.version, dict(v2.settings), ident(v2)) == ("2", {}, "rules@2")  # v2's cached judgments still match
    assert (v3.version, dict(v3.settings), ident(v3)) == ("3", {}, "rules@3")  # and v3's
    assert (v4.version, dict(v4.settings), ident(v4)) == ("4", {}, "rules@4")  # the default: v3's are not reused
    assert dict(load("rules", version="2", per="true").settings) == {"per": True}  # a v3 reader tried on v2
    assert dict(load("rules", version="3", binding="true").settings) == {"binding": True}  # a v4 reader on v3
    with pytest.raises(ValueError, match="the rules judge has versions 2, 3, 4, not '5'"):
        load("rules", version="5")


# fmt: skip below: the cue words read across (ruff would set one a line)
_CUES = [
    "under", "over", "at least", "at most", "before", "after", "since", "within", "or more", "or less", "per day",
    "per user", "monthly", "a month", "fell", "rose", "increase", "decrease", "all", "every", "some", "always",
    "usually", "in the", "worldwide", "domestic", "international", "two", "fourth", "and", "but", ";", ",",
]  # fmt: skip
_PLAIN = ["orders", "ship", "free", "fees", "the", "plan", "EU", "Pro", "users", "refunds", "include", "stores"]
_VALUES = ["$50", "5%", "2020", "14 days", "+8%", "-8%", "4,000 TRY", "July 4, 1776"]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(_CUES + _PLAIN + _VALUES), min_size=1, max_size=14))
def test_the_readers_never_take_back_a_claim_against_its_own_text(words: list[str]) -> None:
    """Whatever qualifiers a sentence holds, the same sentence as evidence agrees with every one of them."""
    text = " ".join(words) + "."
    v2 = RulesJudge(version=2, workers=1).judge(text, [text])
    v3 = RulesJudge(workers=1).judge(text, [text])
    assert v3 == v2 or (v3.label == v2.label and "names" not in v2.rationale), (v2, v3)


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


def _agreement(name: str, version: str) -> tuple[int, float, float]:
    a = calibrate(DATA / name, RulesJudge(version=version, workers=1))
    return a.n, round(a.kappa, 3), round(a.false_support, 3)


@pytest.mark.slow
def test_v2_agrees_with_people_exactly_as_it_did() -> None:
    """v2 stays loadable for comparison, and answers as it always did: the figures of docs/judges.md."""
    assert _agreement("wice/claim_test.jsonl", "2") == (358, 0.424, 0.154)
    assert _agreement("rgb/en_fact.jsonl", "2") == (1179, 0.946, 0.013)
    assert _agreement("expertqa/rand_test.jsonl", "2") == (793, 0.080, 0.251)
    assert _agreement("expertqa/domain_test.jsonl", "2") == (880, 0.077, 0.245)


def test_v3_wice_kappa_is_at_least_0_45() -> None:
    n, kappa, _ = _agreement("wice/claim_test.jsonl", "3")
    assert n == 358
    assert kappa >= 0.45


def test_v3_rgb_false_support_is_at_most_0_02() -> None:
    n, _, false_support = _agreement("rgb/en_fact.jsonl", "3")
    assert n == 1179
    assert false_support <= 0.02


@pytest.mark.parametrize("name", ["expertqa/rand_test.jsonl", "expertqa/domain_test.jsonl"])
def test_v3_expertqa_agreement_is_no_lower_than_v2(name: str) -> None:
    """Below the 0.15 an earlier issue asked for: docs/judges.md shows why no word-overlap rule reaches it."""
    v2, v3 = _agreement(name, "2"), _agreement(name, "3")
    assert v3[0] == v2[0]
    assert v3[1] >= v2[1], (v2, v3)


def test_v4_holds_v3s_agreement_with_people() -> None:
    """Issue #36: WiCE kappa at least 0.47, RGB false support at most 0.02, ExpertQA no lower than v3."""
    n, kappa, _ = _agreement("wice/claim_test.jsonl", "4")
    assert (n, kappa >= 0.47) == (358, True), kappa
    n, _, false_support = _agreement("rgb/en_fact.jsonl", "4")
    assert (n, false_support <= 0.02) == (1179, True), false_support
    for name in ("expertqa/rand_test.jsonl", "expertqa/domain_test.jsonl"):
        v3, v4 = _agreement(name, "3"), _agreement(name, "4")
        assert v4[0] == v3[0] and v4[1] >= v3[1], (name, v3, v4)


def test_v4_holds_the_qa_hallucination_bar() -> None:
    """Issue #36: kappa at least 0.60 on QA hallucination data (HaluEval QA, vendored: 500 questions, the right
    and the hallucinated answer each against the knowledge passage); the figures of docs/judges.md."""
    assert _agreement("halueval/qa_one-turn.jsonl", "3") == (1000, 0.666, 0.318)
    assert _agreement("halueval/qa_one-turn.jsonl", "4") == (1000, 0.670, 0.314)


def test_a_halueval_row_is_two_pairs_and_a_bad_row_is_named(tmp_path: Path) -> None:
    from citeline.analyzer.labels.calibrate import examples

    path = tmp_path / "qa.jsonl"
    path.write_text(
        '{"knowledge": "The Oberoi Group is a hotel company with its head office in Delhi.", "question": "Where?", '
        '"right_answer": "Delhi", "hallucinated_answer": "Mumbai, the financial capital of India."}\n'
        '{"knowledge": "", "question": "Where?", "right_answer": "Delhi", "hallucinated_answer": "Mumbai"}\n'
        '{"knowledge": "K", "question": "Q", "right_answer": "A"}\n'
    )
    found, left_out, problems = examples(path)
    assert [(e.claim, e.evidence, e.supported) for e in found] == [
        ("Delhi", ("The Oberoi Group is a hotel company with its head office in Delhi.",), True),
        (
            "Mumbai, the financial capital of India.",
            ("The Oberoi Group is a hotel company with its head office in Delhi.",),
            False,
        ),
    ]
    assert left_out == 0
    assert problems == [
        f"{path}:2: field 'knowledge' is empty; row skipped",
        f"{path}:3: field 'hallucinated_answer' is missing or not text; row skipped",
    ]


@pytest.mark.slow
def test_calibrate_against_the_labels_people_gave_in_a_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from citeline.analyzer.cli.main import main
    from citeline.analyzer.run.analyze import analyze
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


@pytest.mark.slow
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
    from citeline.analyzer.text import values

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


@pytest.mark.slow
def test_the_demo_classifies_the_same_under_v2_v3_and_v4(tmp_path: Path) -> None:
    """Issue #24: the demo's buckets do not move with the new readers (every scenario, every claim row)."""
    from citeline.analyzer.run.analyze import analyze
    from citeline.examples.demo import SCENARIOS, gold_path
    from tests.analysis_helpers import run_and_analyze

    first, _ = run_and_analyze(tmp_path, list(SCENARIOS))

    def rows(version: str) -> list[tuple[str, str, str, str, str]]:
        result = analyze(
            tmp_path / f"v{version}.duckdb",
            gold=gold_path(),
            traces=[tmp_path / "traces"],
            judge=RulesJudge(version=version, workers=1),
        )
        assert result.judge["name"] == f"rules@{version}"
        return sorted(
            (r["trace_id"], r["gold_claim_id"] or "", r["claim_text"] or "", r["bucket"], r["support_label"] or "")
            for r in result.claims.to_dicts()
        )

    v2, v3, v4 = rows("2"), rows("3"), rows("4")
    assert v3 == v2
    assert v4 == v3  # issue #36: nor with v4's
    assert len(v3) == len(first.claims.to_dicts()) > 20


_PIECES = [*_CUES, *_PLAIN, *_VALUES, "18-year-old", "twenty-first", "and/or", "$20/month", "13th", "-", "+", "/", "x"]


@settings(max_examples=300, deadline=None)
@given(
    claim=st.lists(st.sampled_from(_PIECES), max_size=12).map(" ".join),
    window=st.lists(st.lists(st.sampled_from(_PIECES), max_size=12).map(" ".join), min_size=1, max_size=3),
    noise=st.text(alphabet=st.sampled_from(list("ab1-+/ ,;.")), max_size=20),
)
def test_every_reader_answers_a_verdict_or_nothing_on_any_text(claim: str, window: list[str], noise: str) -> None:
    """Found by the benchmark: "18-year-old" in a window sentence raised inside the counts reader."""
    from citeline.analyzer.judges import _qualifiers as q
    from citeline.analyzer.text import fold

    c, w = fold(claim + " " + noise), [fold(s) for s in window]
    words = frozenset(c.split())
    found = [
        q.comparison(c, w),
        q.direction(c, w, short=False, cues=q.needed(c).words),
        q.per(c, w),
        q.quantifiers(c, w, words, window),
        q.scope(c, w, words, window),
        q.counts(c, w),
        q.clauses(c, lambda part: frozenset(part.split()), words),
    ]
    assert all(j is None or j.label in ("contradicted", "insufficient") for j in found)
    assert q.needed(c).readers <= frozenset(q._CUE_WORDS)


def test_numbers_are_read_in_any_form_and_a_slash_is_a_denominator_only_after_a_number() -> None:
    from citeline.analyzer.judges import _qualifiers as q

    assert q.numbers_in("an 18-year-old in the twenty-first century, 4th of nine") == frozenset({18, 20, 1, 21, 4, 9})
    assert q.pers("send one and/or both").denominators == frozenset()
    assert q.pers("it costs $20/month, 5 gb/user") == (frozenset({"month"}), frozenset())


def test_judging_a_batch_pauses_the_cycle_collector_and_gives_it_back_as_it_was() -> None:
    """The collector is off while a batch is judged (it re-scanned the judge's cached readings: ~25% of the CPU)
    and back as the caller had it afterwards, on, off, or after the judge raised."""
    import gc

    judge = RulesJudge(workers=1)
    items = [JudgeItem("The fee is 5 dollars.", ["The fee is 5 dollars a month."])]
    seen: list[bool] = []
    real = judge._decide  # what the batch asks of each item

    def spy(*args: Any, **kwargs: Any) -> Any:
        seen.append(gc.isenabled())
        return real(*args, **kwargs)

    judge._decide = spy  # type: ignore[method-assign]
    assert gc.isenabled()
    assert [j.label for j in judge.judge_many(items)] == ["entailed"]
    assert seen == [False] and gc.isenabled()
    gc.disable()
    try:
        judge.judge_many(items)
        assert not gc.isenabled()
    finally:
        gc.enable()

    def boom(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("judge failed")

    judge._decide = boom  # type: ignore[method-assign]
    with pytest.raises(RuntimeError):
        judge.judge_many(items)
    assert gc.isenabled()


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab Z.!?\n\t\u00a0\"'”’)]:1")), max_size=40))
def test_one_sentence_claims_skip_the_split_and_read_the_same(text: str) -> None:
    """A text with no place a sentence can end (most claims) is not split: the same sentences either way."""
    from citeline.analyzer.text import split_sentences

    assert sentences(text) == split_sentences(text)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from("may must not never can required the fee is waived , . but items".split()), max_size=12),
    st.lists(st.sampled_from("may must not the fee is waived , . items".split()), max_size=12),
)
def test_a_claims_cues_are_read_only_where_its_window_can_differ(claim: list[str], evidence: list[str]) -> None:
    """The modality rule reads the claim's may / must only when its window says one without the other; the
    verdict is the one read with every cue of both (the rule as written: must against only may, or may
    against only must, on words they share)."""
    from citeline.analyzer.judges._reading import Window, read
    from citeline.analyzer.judges._rules import _modality_differs

    c, e = read(" ".join(claim)), read(" ".join(evidence))
    w = Window((e,))
    c_may, c_must = c.may & w.words, c.must & w.words
    e_may, e_must = w.governed("may") & c.words, w.governed("must") & c.words
    expected = bool((c_must and e_may and not e_must) or (c_may and e_must and not e_may))
    assert _modality_differs(read(" ".join(claim)), w, w.words) is expected


_CUE_WORDS = (
    "not no never none nobody nothing neither nor cannot without n't may might can could optional optionally "
    "allowed permitted must required requires require shall mandatory obliged have to has to need to needs to "
    "and but while whereas ; anon canny snot"
).split()


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from([*_CUE_WORDS, " ", "", "'", "-", "x", ".", "é"]), max_size=16))
def test_cue_scans_led_by_their_first_letters_find_what_the_plain_patterns_find(parts: list[str]) -> None:
    """The negation / modality cues and the joins are scanned with a lookahead of the letters their words open
    with (text.led_by): the same matches, kinds and spans as the plain patterns."""
    import re

    from citeline.analyzer.judges import _reading, _rules

    text = "".join(parts)
    for led, plain in (
        (_reading.CUES, re.compile(_reading.CUES.pattern.split("(?:", 1)[1][:-1])),
        (_rules._JOINS, re.compile(r";|\b(?:and|but|while|whereas)\b")),
    ):
        assert [(m.lastgroup, m.span()) for m in led.finditer(text)] == [
            (m.lastgroup, m.span()) for m in plain.finditer(text)
        ]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from("fees rose 5% in 2023 the plan costs $20 refunds take days".split()), min_size=1, max_size=8
    ),
    st.lists(
        st.lists(
            st.sampled_from("fees rose fell 5% 7% in 2023 the plan costs $20 refunds take days".split()), max_size=8
        ),
        max_size=4,
    ),
    st.integers(0, 4),
)
def test_a_window_of_one_candidate_is_the_one_the_greedy_cover_takes(
    claim: list[str], passage: list[list[str]], most: int
) -> None:
    """A claim sentence that shares anything with one evidence sentence only takes it as its window without
    running the greedy cover: the same window the cover gives."""
    from citeline.analyzer.judges._reading import align, cover, read

    c = read(" ".join(claim))
    p = [read(" ".join(s) + ".") for s in passage]
    units = [(i, u) for i, u in ((i, s.units & c.units) for i, s in enumerate(p)) if u]
    assert [p.index(s) for s in align(c, p, most).sentences] == cover(units, c.units, most)
