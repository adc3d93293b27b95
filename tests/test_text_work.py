"""The text work of a large run (splitting, similarity, judging) moved to SQL and a shared worker pool:
the same figures and the same buckets as the one-process path, and no worker left running."""

from __future__ import annotations

import os
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from citeline.analyzer import steps as _steps
from citeline.analyzer import workers as _workers
from citeline.analyzer.judges import _rules
from citeline.analyzer.run import analyze as _analyze
from citeline.analyzer.run import splitting as _splitting
from citeline.analyzer.store import sql
from citeline.analyzer.text import _STOP, _WORD, _stem, fold, numbers, overlap, shared_numbers, stems
from citeline.examples.demo import SCENARIOS, gold_path
from tests.analysis_helpers import run_and_analyze

_WORDS = ["refund", "refunds", "days", "the", "within", "Returned", "item", "café", "STRASSE", "straße", "ship"]
_text = st.lists(
    st.one_of(st.sampled_from(_WORDS), st.integers(0, 120).map(str), st.sampled_from(["4.5", "$30", "30%", "\n"])),
    max_size=12,
).map(" ".join)


def _stems_by_definition(text: str) -> frozenset[str]:
    """The stems as the matcher defines them, word by word: a found word that is no stop word, stripped of
    hyphens and apostrophes, stemmed."""
    return frozenset(_stem(w.strip("-'")) for w in _WORD.findall(fold(text)) if w not in _STOP)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.sampled_from([*_WORDS, "the-", "-and-", "'the", "it's", "x'''s", "Running", "walked", "--", "Ünïcode"]),
            st.text(alphabet="abcdeßé-' .", max_size=12),
        ),
        max_size=16,
    ).map(" ".join)
)
def test_stems_equal_their_word_by_word_definition_however_often_a_word_recurs(text: str) -> None:
    # the word -> stem memo is read on the second call: both calls must give the definition's set
    assert stems(text) == _stems_by_definition(text)
    assert stems(text) == _stems_by_definition(text)


@pytest.mark.slow
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(gen=st.lists(_text, min_size=1, max_size=4, unique=True), gold=st.lists(_text, min_size=1, max_size=3))
def test_similarity_sql_equals_the_python_scores(gen: list[str], gold: list[str]) -> None:
    """similarity.sql computes overlap() and shared_numbers() exactly, empty sets and repeats included."""
    con = duckdb.connect()
    sets: dict[str, list[Any]] = {
        "text": list(gen),
        "stems": [sorted(stems(t)) for t in gen],
        "numbers": [sorted(numbers(t)) for t in gen],
    }
    _steps.fill(con, "t_text_sets", sets)
    more = sorted(set(gold))
    _steps.fill(
        con,
        "t_more_sets",
        {"text": more, "stems": [sorted(stems(t)) for t in more], "numbers": [sorted(numbers(t)) for t in more]},
    )
    con.execute("CREATE TABLE t_traces AS SELECT 't1' AS trace_id, 'c' AS case_id")
    con.execute(
        "CREATE TABLE t_gen_claims AS SELECT 't1' AS trace_id, i AS claim_idx, text, true AS factual "
        "FROM (SELECT unnest($g) AS text, generate_subscripts($g, 1) AS i)",
        {"g": gen},
    )
    con.execute(
        "CREATE TABLE t_gold_claims AS SELECT 'c' AS case_id, 'g' || i AS claim_id, text "
        "FROM (SELECT unnest($g) AS text, generate_subscripts($g, 1) AS i)",
        {"g": gold},
    )
    got = {(t, c): (s, n, has) for _case, t, c, s, n, has in con.execute(sql("similarity")).fetchall()}
    want = {
        (g, f"g{i + 1}"): (overlap(stems(g), stems(x)), shared_numbers(numbers(g), numbers(x)), bool(numbers(x)))
        for g in gen
        for i, x in enumerate(gold)
    }
    assert got == want


@pytest.mark.slow
def test_a_large_run_on_the_shared_pool_classifies_every_claim_as_one_process_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pool path (started early, shared by splitting and judging) and the one-process path agree row
    for row on every bucket scenario; the run stops its workers."""
    first, _ = run_and_analyze(tmp_path, SCENARIOS)
    assert _workers.shared() is None
    monkeypatch.setattr(_splitting, "PARALLEL_ANSWERS", 1)
    monkeypatch.setattr(_splitting, "POOL_MIN_ANSWERS", 1)
    monkeypatch.setattr(_rules, "PARALLEL_MIN", 1)
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    started: list[object] = []
    real_start = _workers.start

    def starting(preload: Sequence[str] = ()) -> object:
        started.append(real_start(preload))
        return started[-1]

    monkeypatch.setattr(_workers, "start", starting)
    second = _analyze.analyze(tmp_path / "pooled.duckdb", gold=gold_path(), traces=[tmp_path / "traces"])
    assert started and started[0] is not None  # the pool really ran
    assert _workers.shared() is None  # and is gone with the run
    cols = ["trace_id", "gold_claim_id", "claim_text", "bucket", "stage", "span_id", "reason", "support_label"]
    one = first.claims.select(cols).sort(cols)
    pooled = second.claims.select(cols).sort(cols)
    assert one.height >= len(SCENARIOS)
    assert pooled.to_dicts() == one.to_dicts()


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(
    claim=st.text(),
    evidence=st.lists(st.text(), max_size=3),
    facts=st.lists(st.text(), max_size=2),
    quotes=st.lists(st.text(), max_size=2),
    coverage=st.sampled_from([0.5, 0.6]),
)
def test_a_judgment_keeps_the_cache_key_it_was_stored_under(
    claim: str, evidence: list[str], facts: list[str], quotes: list[str], coverage: float
) -> None:
    """The key built from parts is the sha256 of the whole JSON list, as stored judgments were keyed."""
    import hashlib
    import json

    from citeline.analyzer.judges import RulesJudge
    from citeline.analyzer.run.judgment_cache import CachedJudge

    judge = RulesJudge(coverage=coverage)
    cached = CachedJudge(duckdb.connect(), judge)
    settings_json = json.dumps(dict(judge.settings), sort_keys=True)
    whole = [judge.name, judge.version, settings_json, claim, evidence, facts, quotes]
    assert cached.key(claim, evidence, facts, quotes) == hashlib.sha256(json.dumps(whole).encode()).hexdigest()
    assert cached.key(claim, evidence, facts, quotes) == cached.key(claim, list(evidence), facts, quotes)  # cached


def test_a_run_too_small_for_a_pool_starts_no_worker_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Below PARALLEL_ANSWERS distinct answers the run's text work stays in its own process: the judge, which
    would take a batch of PARALLEL_MIN items to a pool of its own, starts none either (it started one per
    batch, each worker importing the analyzer again)."""
    started: list[int] = []

    class Counted(ProcessPoolExecutor):
        def __init__(self, workers: int, **kwargs: Any) -> None:
            started.append(workers)
            super().__init__(workers, **kwargs)

    monkeypatch.setattr(_rules, "PARALLEL_MIN", 1)
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    monkeypatch.setattr(_workers, "ProcessPoolExecutor", Counted)
    result, _ = run_and_analyze(tmp_path, SCENARIOS[:4])
    assert started == []
    assert _workers.cores() == 2  # the run left no inline mode behind
    assert result.judge["asked"] > 0


def test_a_run_in_another_thread_does_not_see_or_stop_this_runs_pool(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two analyses in two threads of one host: each has its own pool; one ending never stops the other's."""
    import threading

    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    mine = _workers.start()
    try:
        seen: list[object] = []

        def from_another_thread() -> None:
            seen.append(_workers.shared())
            _workers.stop()

        other = threading.Thread(target=from_another_thread)
        other.start()
        other.join()
        assert seen == [None]
        assert _workers.shared() is mine and mine is not None
        assert mine.submit(sum, [1, 2]).result(timeout=60) == 3  # still running
    finally:
        _workers.stop()
    assert _workers.shared() is None


def test_a_runs_text_work_pauses_the_cycle_collector_and_gives_it_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The driver's slices (joining, splitting, judging's bookkeeping, classifying) and the splitter run with
    Python's cycle collector paused: it re-scanned the slice's rows and the text caches again and again. The
    run gives it back as the host had it, and the classification is the one it gives with the collector on."""
    import gc

    seen: dict[str, list[bool]] = {"split": [], "judge": []}
    from citeline.analyzer.claims.splitter import split_answer as real_split
    from citeline.analyzer.run.judging import judge_tables as real_judge

    def split_spy(*args: Any, **kwargs: Any) -> Any:
        seen["split"].append(gc.isenabled())
        return real_split(*args, **kwargs)

    def judge_spy(*args: Any, **kwargs: Any) -> Any:
        seen["judge"].append(gc.isenabled())
        return real_judge(*args, **kwargs)

    monkeypatch.setattr(_splitting, "split_answer", split_spy)
    monkeypatch.setattr(_analyze, "judge_tables", judge_spy)
    assert gc.isenabled()
    paused, _ = run_and_analyze(tmp_path / "paused", SCENARIOS[:6])
    assert gc.isenabled()
    assert seen["split"] and not any(seen["split"])
    assert seen["judge"] and not any(seen["judge"])
    monkeypatch.setattr(_workers, "collector_paused", _always_on)
    collected, _ = run_and_analyze(tmp_path / "collected", SCENARIOS[:6])
    cols = ("claim_text", "bucket", "stage", "reason")  # trace and span ids are new in each run
    assert sorted(paused.claims.select(cols).rows(), key=repr) == sorted(collected.claims.select(cols).rows(), key=repr)


def _always_on() -> Any:
    from contextlib import nullcontext

    return nullcontext()


class _Leaves:
    """Writes ``path`` when it is freed: at a worker's interpreter teardown, if there is one."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __del__(self) -> None:
        Path(self.path).write_text("torn down")


_HELD: list[_Leaves] = []


def _hold_until_exit(path: str) -> int:
    _HELD.append(_Leaves(path))  # a module global: freed only when the interpreter tears down
    return os.getpid()


@pytest.mark.parametrize("how", ["run's pool", "judge's own pool"])
def test_a_pool_worker_exits_without_tearing_its_interpreter_down(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    """A worker's caches hold hundreds of thousands of readings after a large run, freed one by one at a
    normal exit (0.18 s of CPU for 20,000 judged pairs on two workers, paid while the run waits for its pool):
    a worker leaves at once instead. Its answers were all handed back before it left."""
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    marker = tmp_path / "torn"
    if how == "run's pool":
        pool = _workers.start()
        assert pool is not None
        try:
            assert pool.submit(_hold_until_exit, str(marker)).result(timeout=60) > 0
        finally:
            _workers.stop()
    else:
        with _workers.pool(2) as own:
            assert own.submit(_hold_until_exit, str(marker)).result(timeout=60) > 0
    assert not marker.exists()
