"""What cannot be decided is not_evaluable with its reason: never another component's bucket, never ok."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from citeline.analyzer.judges import LABELS, Judgment, RulesJudge
from citeline.analyzer.run.analyze import analyze
from citeline.analyzer.store import BUCKETS, connect
from citeline.examples.demo import SCENARIOS, gold_path
from tests.analysis_helpers import run_and_analyze

ROOT = Path(__file__).resolve().parents[1]


class ScriptedJudge(RulesJudge):
    """A judge that answers from a script: stands in for a model judge that misbehaves."""

    name = "scripted"
    version = "1"
    script: ClassVar[list[str | None]] = []

    def judge(self, claim: str, evidence: Sequence[str], facts: Any = (), quotes: Any = ()) -> Judgment:
        label = self.script[len(claim) % len(self.script)]
        if label is None:
            raise_or_none: Any = None
            return raise_or_none  # type: ignore[no-any-return]  # a judge that returned nothing
        return Judgment(label, f"scripted {label}")


@pytest.fixture
def scripted() -> Iterator[type[ScriptedJudge]]:
    yield ScriptedJudge
    ScriptedJudge.script = []


@pytest.fixture(scope="module")
def demo_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("demo")
    picked = [s for s in SCENARIOS if s.name in ("wrong-number", "wrong-number~fixed", "sibling-chunk~fixed")]
    run_and_analyze(tmp, picked)
    return tmp / "traces"


@pytest.mark.slow
def test_an_unknown_label_is_not_evaluable_naming_the_judge(
    tmp_path: Path, demo_dir: Path, scripted: type[ScriptedJudge]
) -> None:
    scripted.script = ["maybe"]
    result = analyze(tmp_path / "s.duckdb", gold=gold_path(), traces=[demo_dir], judge=ScriptedJudge())
    judged = [r for r in result.claims.to_dicts() if r["support_label"] is not None]
    assert judged
    for r in judged:
        assert (r["bucket"], r["stage"]) == ("not_evaluable", "generation")
        assert r["support_label"] == "not_applicable"
        assert r["reason"] == (
            "judge scripted@1 could not decide: answered 'maybe', not one of entailed, contradicted, insufficient, "
            "not_applicable"
        )
    assert result.summary["ok"] == 0


@pytest.mark.slow
@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(script=st.lists(st.sampled_from([*LABELS, "maybe", "", "ENTAILED"]), min_size=1, max_size=4))
def test_no_ok_without_an_allowed_label(
    tmp_path_factory: pytest.TempPathFactory, demo_dir: Path, scripted: type[ScriptedJudge], script: list[str]
) -> None:
    scripted.script = list(script)
    result = analyze(
        tmp_path_factory.mktemp("p") / "s.duckdb", gold=gold_path(), traces=[demo_dir], judge=ScriptedJudge()
    )
    for r in result.claims.to_dicts():
        assert r["support_label"] is None or r["support_label"] in LABELS, r
        if r["support_label"] == "not_applicable":
            assert (r["bucket"], r["stage"]) == ("not_evaluable", "generation"), r
        if r["bucket"] == "ok" and r["gold_claim_id"] not in (None, "(abstain)"):
            assert r["support_label"] == "entailed", r


def test_judgments_join_on_lists_so_a_bar_in_an_id_cannot_collide(tmp_path: Path) -> None:
    con = connect(tmp_path / "s.duckdb")
    try:
        # two citation sets that "|".join would make equal: ["a|b"] and ["a", "b"]
        rows = con.execute(
            "SELECT ['a|b'] = ['a', 'b'] AS lists_equal, "
            "array_to_string(['a|b'], '|') = array_to_string(['a', 'b'], '|') AS strings_equal"
        ).fetchall()
    finally:
        con.close()
    assert rows == [(False, True)]
    classify = (ROOT / "queries" / "classify.sql").read_text()
    assert "array_to_string(list_sort(g.cited), '|')" not in classify
    assert "jg.cited = list_sort(g.cited) AND jg.quotes = g.quotes" in classify


# --- one definition of each fact ---------------------------------------------------------


def test_the_bucket_order_is_spelled_in_one_place() -> None:
    """BUCKETS in store.py is the order; a copy is a literal list of names, stored positions,
    or a CASE chain that picks the primary bucket by the order of its WHENs."""
    names = "|".join(BUCKETS)
    literal_list = re.compile(rf"""["']({names})["']\s*,\s*["']({names})["']\s*,\s*["']({names})["']""")
    positions = re.compile(rf"\(\s*'({names})'\s*,\s*\d+\s*\)")
    case_chain = re.compile(rf"(WHEN\s+[\w\s]+?\s+THEN\s+'({names})'\s*){{3,}}")
    copies = []
    for path in [*ROOT.glob("analyzer/**/*.py"), *ROOT.glob("queries/*.sql"), *ROOT.glob("examples/*.py")]:
        if path == ROOT / "analyzer" / "store.py":
            continue
        text = path.read_text()
        for pattern in (literal_list, positions, case_chain):
            copies += [f"{path.name}: {m.group(0)[:60]}" for m in pattern.finditer(text)]
    assert copies == []


def test_an_older_store_learns_the_new_bucket_order(tmp_path: Path) -> None:
    db = tmp_path / "old.duckdb"
    connect(db).close()
    con = duckdb.connect(str(db))  # make it look like a store from before not_evaluable and the marker
    con.execute("DELETE FROM meta WHERE key = 'citeline_store'")
    con.execute("DELETE FROM bucket_order")
    con.execute("ALTER TABLE bucket_order DROP COLUMN flag")  # and from before the bucket table's columns
    con.execute("ALTER TABLE bucket_order DROP COLUMN color")
    con.execute("DROP TABLE bucket_reasons")
    con.execute("INSERT INTO bucket_order VALUES ('access_violation', 1), ('invalid_citation', 2), ('ok', 3)")
    con.close()
    connect(db).close()
    con = duckdb.connect(str(db))
    try:
        assert [b for (b,) in con.execute("SELECT bucket FROM bucket_order ORDER BY position").fetchall()] == list(
            BUCKETS
        )
    finally:
        con.close()


def test_attribute_keys_read_by_sql_are_the_instrumentations() -> None:
    from citeline.instrumentation import schema

    keys = {v for k, v in vars(schema).items() if k.isupper() and isinstance(v, str)}
    read = set()
    for path in ROOT.glob("queries/*.sql"):
        read |= set(
            re.findall(r"'((?:citeline|openinference|input|output|retrieval|reranker)\.[a-z_.%]+)'", path.read_text())
        )
    # a prefix the SQL completes with a document's index ('retrieval.documents.' || n || ...) is a key too
    unknown = {k for k in read if k not in keys and "%" not in k and k.rstrip(".") not in keys}
    assert unknown == set()
    assert {"citeline.chunks.chunk_id", "citeline.generation.answer", "citeline.adapter_error"} <= read


def test_an_unreadable_stage_is_a_named_problem_with_trace_span_and_fix(tmp_path: Path) -> None:
    picked = [s for s in SCENARIOS if s.name in ("retrieval-adapter-bug", "context-adapter-bug")]
    result, outcomes = run_and_analyze(tmp_path, picked)
    (path,) = (tmp_path / "traces").glob("*.jsonl")
    expected = []
    for out, stage in zip(outcomes, ("retrieval", "context"), strict=True):
        span = out.spans[stage]
        rows = [r for r in out.rows if r["gold_claim_id"] is not None]
        assert {(r["bucket"], r["stage"], r["span_id"]) for r in rows} == {("not_evaluable", stage, span)}
        expected.append(
            re.compile(
                rf"{re.escape(str(path))}:line \d+ \(trace {out.trace_id} span {span}\): citeline.adapter_error: "
                rf"the {stage} span could not be read when the app ran \(KeyError: 'chunk_id'\): claims that need "
                r"it are not_evaluable; fix the adapter \(to_chunks=\) or what the stage returns"
            )
        )
    problems = result.problems()
    assert len(problems) == 2
    assert all(any(p.fullmatch(line) for line in problems) for p in expected), problems
    assert result.skipped == 0  # named, not skipped: the spans are still there
