"""A span is stored once however often its line is read; a run on nothing is never green."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from citeline.analyzer.cli.main import main
from citeline.analyzer.run.analyze import analyze
from citeline.examples.demo import SCENARIOS, gold_path
from tests.analysis_helpers import run_and_analyze

PICKED = ["acl-filter-off", "acl-filter-off~fixed", "wrong-number", "reranker-drop", "superseded-policy"]


@pytest.fixture(scope="module")
def demo_traces(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, int], int]:
    """One trace file of a few demo scenarios, its buckets and its span count, analyzed once."""
    tmp = tmp_path_factory.mktemp("demo")
    picked = [s for s in SCENARIOS if s.name in PICKED]
    assert len(picked) == len(PICKED)
    result, _ = run_and_analyze(tmp, picked)
    (path,) = (tmp / "traces").glob("*.jsonl")
    con = duckdb.connect(str(tmp / "store.duckdb"))
    spans = int(con.execute("SELECT count(*) FROM spans").fetchall()[0][0])
    con.close()
    assert result.summary["access_violation"] > 0
    return path, result.summary, spans


def _stored(db: Path) -> tuple[int, int]:
    con = duckdb.connect(str(db))
    try:
        total, distinct = con.execute("SELECT count(*), count(DISTINCT (trace_id, span_id)) FROM spans").fetchall()[0]
        return int(total), int(distinct)
    finally:
        con.close()


def test_a_line_written_twice_is_stored_once(tmp_path: Path, demo_traces: tuple[Path, dict[str, int], int]) -> None:
    path, summary, spans = demo_traces
    lines = path.read_bytes().splitlines(keepends=True)
    doubled = tmp_path / "t" / "retried.jsonl"  # an exporter that retried every write
    doubled.parent.mkdir()
    doubled.write_bytes(b"".join(line + line for line in lines))
    result = analyze(tmp_path / "s.duckdb", gold=gold_path(), traces=[doubled.parent])
    assert _stored(tmp_path / "s.duckdb") == (spans, spans)
    assert result.summary == summary  # access_violation was 3 -> 4,098 on main
    assert result.skipped == 0


def test_the_same_file_in_two_folders_is_read_once(
    tmp_path: Path, demo_traces: tuple[Path, dict[str, int], int]
) -> None:
    path, summary, spans = demo_traces
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        shutil.copy(path, tmp_path / folder / "traces.jsonl")
    result = analyze(tmp_path / "s.duckdb", gold=gold_path(), traces=[tmp_path / "a", tmp_path / "b"])
    assert _stored(tmp_path / "s.duckdb") == (spans, spans)
    assert result.summary == summary


@pytest.mark.slow
def test_a_renamed_copy_analyzed_again_gives_the_same_buckets(
    tmp_path: Path, demo_traces: tuple[Path, dict[str, int], int]
) -> None:
    path, summary, spans = demo_traces
    db = tmp_path / "s.duckdb"
    first = tmp_path / "monday"
    first.mkdir()
    shutil.copy(path, first / "traces.jsonl")
    assert analyze(db, gold=gold_path(), traces=[first]).summary == summary
    again = tmp_path / "archive"
    again.mkdir()
    shutil.copy(path, again / "traces-renamed.jsonl")
    result = analyze(db, gold=gold_path(), traces=[again])
    assert result.summary == summary  # was an empty run
    assert result.coverage["traces"] == len(PICKED)
    assert _stored(db) == (spans, spans)


@pytest.mark.slow
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_buckets_do_not_depend_on_repeats_copies_or_order(
    tmp_path_factory: pytest.TempPathFactory, demo_traces: tuple[Path, dict[str, int], int], data: Any
) -> None:
    path, summary, spans = demo_traces
    lines = path.read_bytes().splitlines(keepends=True)
    tmp = tmp_path_factory.mktemp("dup")
    n_files = data.draw(st.integers(1, 3))
    for i in range(n_files):
        picked = data.draw(st.lists(st.sampled_from(lines), min_size=0, max_size=2 * len(lines)))
        (tmp / "t" / f"d{i}").mkdir(parents=True)
        (tmp / "t" / f"d{i}" / f"part-{i}.jsonl").write_bytes(b"".join(picked))
    # every line at least once somewhere, in some order
    rest = data.draw(st.permutations(lines))
    (tmp / "t" / "all.jsonl").write_bytes(b"".join(rest))
    result = analyze(tmp / "s.duckdb", gold=gold_path(), traces=[tmp / "t"])
    assert result.summary == summary
    assert _stored(tmp / "s.duckdb") == (spans, spans)


# --- no green run on nothing -------------------------------------------------------------


def test_traces_path_that_does_not_exist_or_holds_no_trace_file_fails(tmp_path: Path, capsys: Any) -> None:
    db = str(tmp_path / "s.duckdb")
    missing = tmp_path / "nope"
    assert main(["analyze", "--traces", str(missing), "--gold", str(gold_path()), "--db", db]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"citeline: --traces {missing}: no such file or folder; give the folder your app writes traces to"
    ]
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "notes.txt").write_text("not a trace")
    assert main(["analyze", "--traces", str(empty), "--gold", str(gold_path()), "--db", db]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"citeline: --traces {empty}: no trace files in it (*.jsonl, *.json, *.jsonl.gz, *.json.gz, *.ndjson)"
    ]
    assert not Path(db).exists() or _runs(Path(db)) == 0


def _runs(db: Path) -> int:
    con = duckdb.connect(str(db))
    try:
        return int(con.execute("SELECT count(*) FROM runs").fetchall()[0][0])
    finally:
        con.close()


@pytest.mark.slow
def test_traces_that_match_no_case_are_a_normal_run_on_the_corpus_basis_and_a_store_only_rerun_works(
    tmp_path: Path, capsys: Any
) -> None:
    from tests.conftest import make_tracing
    from tests.test_coverage import _gold, ask

    t = make_tracing(tmp_path)
    ask("A question nobody wrote down")
    t.handle.shutdown()
    db = str(tmp_path / "s.duckdb")
    gold = str(_gold(tmp_path))
    # was exit 1 "nothing was classified": traffic without gold cases is judged against the corpus
    assert main(["analyze", "--traces", str(t.trace_dir), "--gold", gold, "--db", db]) == 0
    out = capsys.readouterr().out
    assert "coverage: 0 of 1 trace(s) joined a gold case (0.0%); 1 judged on the corpus basis (no gold case); " in out
    assert main(["analyze", "--gold", str(gold_path()), "--db", db]) == 0  # store-only: judged again
    capsys.readouterr()
    assert _runs(Path(db)) == 2  # both runs are stored with their coverage, for the record


def test_a_run_of_traces_with_no_request_span_classifies_nothing_and_fails(tmp_path: Path, capsys: Any) -> None:
    from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags, set_span_in_context

    from tests.conftest import make_tracing

    t = make_tracing(tmp_path)
    remote = SpanContext(0x5EED, 0xF00D, is_remote=True, trace_flags=TraceFlags(TraceFlags.SAMPLED))
    t.handle.provider.get_tracer("x").start_span("orphan", context=set_span_in_context(NonRecordingSpan(remote))).end()
    t.handle.shutdown()
    db = str(tmp_path / "s.duckdb")
    assert main(["analyze", "--traces", str(t.trace_dir), "--corpus", str(gold_path()), "--db", db]) == 1
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"citeline: none of the 1 trace(s) under {t.trace_dir} has a request span to judge (1 no_request_span); "
        "nothing was classified: wrap each request in citeline's request() (docs/instrumentation.md)"
    )


def test_a_gold_file_that_does_not_parse_stores_no_run(tmp_path: Path, capsys: Any) -> None:
    bad = tmp_path / "gold.yaml"
    bad.write_text("corpus: [\n  - {chunk_id: a\ncases: ]\n")
    db = tmp_path / "s.duckdb"
    assert main(["analyze", "--gold", str(bad), "--db", str(db)]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(f"citeline: {bad}: cannot read the gold set: ")
    assert not db.exists() or _runs(db) == 0
