"""Every report .sql file: small literal rows in, the exact rows out, through plain DuckDB.

Each test writes a real DuckDB file with the store schema, inserts literal rows
and runs the query file exactly as the duckdb CLI would (the text of the file,
parameters bound), so the files are proven to run unchanged outside Python too.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypedDict, Unpack

import duckdb
import pytest

from citeline.analyzer.store import BUCKETS, connect, query_path

T0 = dt.datetime(2026, 8, 10, 2, 0)
_CLAIM_COLUMNS = (
    "run_id trace_id case_id gold_claim_id claim_text bucket stage span_id flags reason support_label cited_chunks "
    "trace_started_at evidence_needed evidence_retrieved evidence_in_context evidence_cited evidence_resolved "
    "evidence_rendered n_citations n_invalid n_aligned expect abstained basis"
).split()
REPORTS = [
    "report_buckets",
    "report_funnel",
    "report_citation_metrics",
    "report_trend",
    "report_regressions",
    "report_worst_cases",
    "report_failing_claims",
    "report_coverage",
    "report_skipped_text",
    "report_basis",
    "latest_run",
]
N = len(BUCKETS)


def new_store(path: Path) -> duckdb.DuckDBPyConnection:
    """A store as citeline makes it (schema + bucket order), then opened by plain DuckDB."""
    connect(path).close()
    return duckdb.connect(str(path))


@pytest.fixture
def store(tmp_path: Path) -> Iterator[duckdb.DuckDBPyConnection]:
    con = new_store(tmp_path / "store.duckdb")
    yield con
    con.close()


def run(con: duckdb.DuckDBPyConnection, name: str, **params: Any) -> list[tuple[Any, ...]]:
    """The file's text, as is, with bound parameters: what `duckdb store.duckdb < file` runs. A file that
    filters by basis gets ``basis=None`` (every row) unless the test names one."""
    text = query_path(name).read_text(encoding="utf-8")
    if "$basis" in text:
        params.setdefault("basis", None)
    return con.execute(text, params).fetchall()


def add_run(
    con: duckdb.DuckDBPyConnection, run_id: str, started: dt.datetime, judge: str = "rules", gold: str = "g1"
) -> None:
    con.execute(
        "INSERT INTO runs VALUES (?, ?, ?, 'gold.yaml', ?, 0, 0, 0, 0, ?)", [run_id, started, started, judge, gold]
    )


class Columns(TypedDict, total=False):
    """The claim_results columns a test may set; each has a default in ``DEFAULTS``."""

    text: str | None
    chain: tuple[bool, ...]
    cites: int
    invalid: int
    aligned: int
    expect: str
    abstained: bool
    flags: list[str] | None
    stage: str | None
    span: str | None
    label: str
    basis: str


DEFAULTS: Columns = {
    "text": "claim text",
    "chain": (True,) * 6,
    "cites": 1,
    "invalid": 0,
    "aligned": 1,
    "expect": "answer",
    "abstained": False,
    "flags": None,
    "stage": None,
    "span": None,
    "label": "entailed",
    "basis": "gold",
}


def claim(
    con: duckdb.DuckDBPyConnection,
    run_id: str,
    trace: str,
    case: str | None,
    gold: str | None,
    bucket: str,
    **columns: Unpack[Columns],
) -> None:
    """One claim_results row; ``flags`` default to the bucket's own flag (none for ok)."""
    c: Columns = {**DEFAULTS, **columns}
    flags = c["flags"]
    con.execute(
        # these columns by name: the others (rationale, generation span) stay NULL
        f"INSERT INTO claim_results ({', '.join(_CLAIM_COLUMNS)}) VALUES ({', '.join('?' * len(_CLAIM_COLUMNS))})",
        [
            run_id,
            trace,
            case,
            gold,
            c["text"],
            bucket,
            c["stage"],
            c["span"],
            flags if flags is not None else ([] if bucket == "ok" else [bucket]),
            f"why {bucket}",
            c["label"],
            [],
            T0,
            *c["chain"],
            c["cites"],
            c["invalid"],
            c["aligned"],
            c["expect"],
            c["abstained"],
            c["basis"],
        ],
    )


def every_bucket_run(con: duckdb.DuckDBPyConnection, run_id: str = "r2") -> None:
    """One claim per bucket (case c1..cN, in repair order), plus a second ok claim on cN."""
    add_run(con, run_id, T0)
    for i, bucket in enumerate(BUCKETS, start=1):
        claim(
            con,
            run_id,
            f"t{i}",
            f"c{i}",
            "g",
            bucket,
            stage=None if bucket == "ok" else "generation",
            span=None if bucket == "ok" else f"s{i}",
        )
    claim(con, run_id, f"t{N}", f"c{N}", "g2", "ok")


def test_every_report_file_has_a_header(store: duckdb.DuckDBPyConnection) -> None:
    for name in REPORTS:
        head = query_path(name).read_text().splitlines()[:6]
        assert head[0].startswith(f"-- {name}.sql: "), name
        text = "\n".join(query_path(name).read_text().splitlines()[:20])
        assert "-- Grain:" in text and "-- Parameters:" in text, name


def test_buckets_empty_run(store: duckdb.DuckDBPyConnection) -> None:
    add_run(store, "r0", T0)
    assert run(store, "report_buckets", run_id="r0") == [(i, b, 0, 0.0) for i, b in enumerate(BUCKETS, start=1)]


def test_buckets_every_bucket(store: duckdb.DuckDBPyConnection) -> None:
    every_bucket_run(store)
    rows = run(store, "report_buckets", run_id="r2")
    assert rows == [
        (i, b, 2 if b == "ok" else 1, round((2 if b == "ok" else 1) / (N + 1), 4))
        for i, b in enumerate(BUCKETS, start=1)
    ]


def test_funnel_empty_and_chain(store: duckdb.DuckDBPyConnection) -> None:
    add_run(store, "r0", T0)
    assert run(store, "report_funnel", run_id="r0") == [
        (1, "retrieved", 0, 0, 0.0, 0.0),
        (2, "in_context", 0, 0, 0.0, 0.0),
        (3, "cited", 0, 0, 0.0, 0.0),
        (4, "resolved", 0, 0, 0.0, 0.0),
        (5, "rendered", 0, 0, 0.0, 0.0),
    ]
    add_run(store, "r1", T0)
    # needed, retrieved, in context, cited, resolved, rendered
    claim(store, "r1", "t1", "c", "a", "ok")
    claim(store, "r1", "t2", "c", "b", "retrieval_miss", chain=(True, False, False, False, False, False))
    claim(store, "r1", "t3", "c", "c", "context_drop", chain=(True, True, False, False, False, False))
    claim(store, "r1", "t4", "c", "d", "resolution", chain=(True, True, True, True, False, False))
    claim(store, "r1", "t5", "c", "(abstain)", "ok", chain=(False,) * 6)
    assert run(store, "report_funnel", run_id="r1") == [
        (1, "retrieved", 3, 4, 0.75, 0.75),
        (2, "in_context", 2, 4, 0.5, round(2 / 3, 4)),
        (3, "cited", 2, 4, 0.5, 1.0),
        (4, "resolved", 1, 4, 0.25, 0.5),
        (5, "rendered", 1, 4, 0.25, 1.0),
    ]


def test_citation_metrics_empty_and_mixed(store: duckdb.DuckDBPyConnection) -> None:
    add_run(store, "r0", T0)
    assert [r[1:5] for r in run(store, "report_citation_metrics", run_id="r0")] == [
        ("validity", 0, 0, 0.0),
        ("completeness", 0, 0, 0.0),
        ("aligned_precision", 0, 0, 0.0),
        ("unsupported_answers", 0, 0, 0.0),
        ("abstention_rate", 0, 0, 0.0),
        ("answer_coverage", 0, 0, 0.0),
        ("low_authority", 0, 0, 0.0),
    ]
    add_run(store, "r1", T0)
    claim(store, "r1", "t1", "c1", "a", "ok", cites=2, aligned=2)
    claim(store, "r1", "t1", "c1", "b", "invalid_citation", cites=2, invalid=1, aligned=0)
    claim(store, "r1", "t2", "c2", "a", "uncited", cites=0, aligned=0)
    # a contradicted claim citing its gold chunk: the citation is not aligned (its evidence entails nothing)
    claim(store, "r1", "t3", "c3", "a", "grounding", cites=1, aligned=1, label="contradicted")
    # right and cited, but only from a forum post where the case asks for policy
    claim(store, "r1", "t5", "c5", "a", "ok", cites=1, aligned=1, flags=["low_authority"])
    claim(
        store,
        "r1",
        "t4",
        "c4",
        "(abstain)",
        "ok",
        text=None,
        cites=0,
        aligned=0,
        expect="abstain",
        abstained=True,
    )
    rows = run(store, "report_citation_metrics", run_id="r1")
    assert [r[:5] for r in rows] == [
        (1, "validity", 5, 6, 0.8333),
        (2, "completeness", 4, 5, 0.8),
        (3, "aligned_precision", 3, 6, 0.5),  # invalid citations in the denominator too
        (4, "unsupported_answers", 1, 4, 0.25),
        (5, "abstention_rate", 1, 5, 0.2),
        (6, "answer_coverage", 4, 4, 1.0),
        (7, "low_authority", 1, 4, 0.25),  # the uncited claim is not in the denominator
    ]
    assert rows[0][5] == "citations that point into the context the model saw / all citations"


def test_trend_takes_the_last_run_of_each_day(store: duckdb.DuckDBPyConnection) -> None:
    assert run(store, "report_trend", since=None) == []
    add_run(store, "d1-early", T0)
    claim(store, "d1-early", "t", "c", "a", "grounding")
    add_run(store, "d1-late", T0 + dt.timedelta(hours=3))
    claim(store, "d1-late", "t", "c", "a", "ok")
    add_run(store, "d2", T0 + dt.timedelta(days=1))
    claim(store, "d2", "t", "c", "a", "grounding")
    claim(store, "d2", "u", "c", "a", "grounding")
    day1, day2 = dt.date(2026, 8, 10), dt.date(2026, 8, 11)
    assert run(store, "report_trend", since=None) == [
        (day1, "d1-late", "ok", 1),
        (day2, "d2", "grounding", 2),
    ]
    assert run(store, "report_trend", since=day2) == [(day2, "d2", "grounding", 2)]


def test_regressions_both_ways_and_first_run(store: duckdb.DuckDBPyConnection) -> None:
    add_run(store, "r1", T0)
    claim(store, "r1", "t1", "c1", "a", "ok")
    claim(store, "r1", "t2", "c2", "a", "grounding")
    claim(store, "r1", "t3", "c3", None, "uncited", text="Extra claim.")
    assert run(store, "report_regressions", run_id="r1", previous_run_id=None) == []
    add_run(store, "r2", T0 + dt.timedelta(days=1))
    claim(store, "r2", "t4", "c1", "a", "retrieval_miss")
    claim(store, "r2", "t5", "c2", "a", "ok")
    claim(store, "r2", "t6", "c3", None, "uncited", text="Extra claim.")
    assert run(store, "report_regressions", run_id="r2", previous_run_id=None) == [
        ("regressed", "c1", "a", "retrieval_miss", 0, 1, "r1", "gold"),
        ("fixed", "c2", "a", "grounding", 1, 0, "r1", "gold"),
    ]
    # explicit previous run, and an empty run against it
    add_run(store, "r3", T0 + dt.timedelta(days=2))
    assert run(store, "report_regressions", run_id="r3", previous_run_id="r1") == [
        ("fixed", "c2", "a", "grounding", 1, 0, "r1", "gold"),
        ("fixed", "c3", "Extra claim.", "uncited", 1, 0, "r1", "gold"),
    ]


def test_worst_cases(store: duckdb.DuckDBPyConnection) -> None:
    add_run(store, "r0", T0)
    assert run(store, "report_worst_cases", run_id="r0", limit=5) == []
    every_bucket_run(store)
    claim(store, "r2", "t3b", "c3", "h", "uncited")
    rows = run(store, "report_worst_cases", run_id="r2", limit=3)
    assert rows == [
        ("c3", 2, 2, "invalid_citation", ["invalid_citation", "uncited"]),
        ("c1", 1, 1, "access_violation", ["access_violation"]),
        ("c2", 1, 1, "not_evaluable", ["not_evaluable"]),
    ]


def test_failing_claims_in_repair_order(store: duckdb.DuckDBPyConnection) -> None:
    add_run(store, "r0", T0)
    assert run(store, "report_failing_claims", run_id="r0") == []
    every_bucket_run(store)
    rows = run(store, "report_failing_claims", run_id="r2")
    assert [r[3] for r in rows] == list(BUCKETS[:-1])
    assert rows[0] == (
        "c1",
        "g",
        "claim text",
        "access_violation",
        "generation",
        "why access_violation",
        "t1",
        "s1",
        ["access_violation"],
        "gold",
    )


def test_latest_run(store: duckdb.DuckDBPyConnection) -> None:
    assert run(store, "latest_run") == []
    add_run(store, "a", T0)
    add_run(store, "b", T0 + dt.timedelta(minutes=1))
    assert run(store, "latest_run") == [("b", T0 + dt.timedelta(minutes=1))]


def test_every_bucket_run_through_funnel_metrics_trend_and_regressions(
    store: duckdb.DuckDBPyConnection,
) -> None:
    every_bucket_run(store)
    assert run(store, "report_funnel", run_id="r2") == [
        (1, "retrieved", N + 1, N + 1, 1.0, 1.0),
        (2, "in_context", N + 1, N + 1, 1.0, 1.0),
        (3, "cited", N + 1, N + 1, 1.0, 1.0),
        (4, "resolved", N + 1, N + 1, 1.0, 1.0),
        (5, "rendered", N + 1, N + 1, 1.0, 1.0),
    ]
    assert [r[1:5] for r in run(store, "report_citation_metrics", run_id="r2")] == [
        ("validity", N + 1, N + 1, 1.0),
        ("completeness", N + 1, N + 1, 1.0),
        ("aligned_precision", N + 1, N + 1, 1.0),
        ("unsupported_answers", 1, N, round(1 / N, 4)),
        ("abstention_rate", 0, N, 0.0),
        ("answer_coverage", N, N, 1.0),
        ("low_authority", 0, N + 1, 0.0),
    ]
    assert run(store, "report_trend", since=None) == [
        (dt.date(2026, 8, 10), "r2", b, 2 if b == "ok" else 1) for b in sorted(BUCKETS)
    ]
    assert run(store, "report_regressions", run_id="r2", previous_run_id=None) == []


def test_report_files_run_unchanged_in_plain_duckdb(tmp_path: Path) -> None:
    """duckdb.connect(store).execute(open(path).read(), params) for every report file."""
    db = tmp_path / "plain.duckdb"
    con = new_store(db)
    every_bucket_run(con)
    con.execute("INSERT INTO run_skipped_text VALUES ('r2', 'greeting', 1)")
    con.close()
    params = {
        "report_buckets": {"run_id": "r2", "basis": None},
        "report_funnel": {"run_id": "r2"},
        "report_citation_metrics": {"run_id": "r2", "basis": "gold"},
        "report_trend": {"since": None, "basis": None},
        "report_regressions": {"run_id": "r2", "previous_run_id": None, "basis": None},
        "report_worst_cases": {"run_id": "r2", "limit": 10, "basis": None},
        "report_failing_claims": {"run_id": "r2", "basis": None},
        "report_coverage": {"run_id": "r2"},
        "report_skipped_text": {"run_id": "r2"},
        "report_basis": {"run_id": "r2"},
        "latest_run": {},
    }
    assert set(params) == set(REPORTS)
    for name, p in params.items():
        path = query_path(name)
        with open(path, encoding="utf-8") as f:
            text = f.read()
        plain = duckdb.connect(str(db))
        try:
            rows = plain.execute(text, p).fetchall()
        finally:
            plain.close()
        assert rows or name == "report_regressions", name


def test_skipped_text_sums_a_runs_slices_per_kind(store: duckdb.DuckDBPyConnection) -> None:
    """A large run adds one row per kind and slice; the report gives one row per kind, only of its run."""
    assert run(store, "report_skipped_text", run_id="r1") == []
    store.executemany(
        "INSERT INTO run_skipped_text VALUES (?, ?, ?)",
        [("r1", "meta", 2), ("r1", "greeting", 1), ("r1", "meta", 3), ("r0", "meta", 7)],
    )
    assert run(store, "report_skipped_text", run_id="r1") == [("greeting", 1), ("meta", 5)]


def test_coverage_rows_in_rows_out(store: duckdb.DuckDBPyConnection) -> None:
    add_run(store, "r0", T0)
    assert run(store, "report_coverage", run_id="r0") == [(0, 0, 0, 1.0, [], 0, [], 0, 0, 0)]
    store.execute(
        "INSERT INTO runs VALUES ('r1', ?, ?, 'gold.yaml', 'rules', 3, 9, 0, 7, 'g1')", [T0, T0]
    )  # 7 traces read, 3 joined
    for trace, reason in [("t4", "ambiguous"), ("t5", "unknown_case_id"), ("t6", "unknown_case_id"), ("t7", "x")]:
        store.execute("INSERT INTO unmatched_traces VALUES ('r1', ?, ?, [])", [trace, reason])
    store.execute("INSERT INTO missing_cases VALUES ('r1', 'c9'), ('r1', 'c2'), ('r0', 'c5')")
    assert run(store, "report_coverage", run_id="r1") == [
        (
            7,
            3,
            4,
            round(3 / 7, 4),
            [
                {"reason": "ambiguous", "traces": 1},
                {"reason": "unknown_case_id", "traces": 2},
                {"reason": "x", "traces": 1},
            ],
            2,
            ["c2", "c9"],
            0,
            0,
            0,
        )
    ]


def test_the_seeds_60_days_example_is_not_an_aligned_citation(tmp_path: Path) -> None:
    # "returns are accepted for 60 days [2]" against a source that says 30 days: grounding, and its one
    # citation is not aligned (before: 1/1, because the cited chunk is in the gold bundle)
    from citeline.examples.demo import SCENARIOS
    from tests.analysis_helpers import run_and_analyze

    [scenario] = [s for s in SCENARIOS if s.name == "wrong-number"]
    result, _ = run_and_analyze(tmp_path, [scenario])
    con = duckdb.connect(str(tmp_path / "store.duckdb"), read_only=True)
    try:
        rows = run(con, "report_citation_metrics", run_id=result.run_id)
    finally:
        con.close()
    [(bucket, label)] = [(c["bucket"], c["support_label"]) for c in result.claims.to_dicts() if c["gold_claim_id"]]
    assert (bucket, label) == ("grounding", "contradicted")
    assert [r[1:5] for r in rows if r[1] == "aligned_precision"] == [("aligned_precision", 0, 1, 0.0)]


def _mixed_run(con: duckdb.DuckDBPyConnection, run_id: str, started: dt.datetime, corpus_a: str) -> None:
    """Two traces with gold cases, two without (judged on the corpus basis), one without a request span."""
    con.execute(
        "INSERT INTO runs VALUES (?, ?, ?, 'gold.yaml', 'rules', 2, 5, 0, 5, 'g1')", [run_id, started, started]
    )  # 5 traces read, 2 joined a case
    claim(con, run_id, "t1", "c1", "g", "ok")
    claim(con, run_id, "t2", "c2", "g", "grounding", stage="generation", span="s2")
    claim(con, run_id, "t3", None, None, corpus_a, text="A.", basis="corpus", stage="generation", span="s3")
    claim(con, run_id, "t3", None, None, "ok", text="B.", basis="corpus")
    claim(
        con, run_id, "t4", None, "(answer)", "access_violation", text=None, basis="corpus", stage="retrieval", span="s4"
    )
    verdicts = [
        ("t1", "c1", "ok", "gold"),
        ("t2", "c2", "grounding", "gold"),
        ("t3", None, corpus_a, "corpus"),
        ("t4", None, "access_violation", "corpus"),
    ]
    for trace, case, verdict, basis in verdicts:
        con.execute(
            "INSERT INTO case_results (run_id, trace_id, case_id, verdict, basis) VALUES (?, ?, ?, ?, ?)",
            [run_id, trace, case, verdict, basis],
        )
    for trace, reason in [("t3", "question_not_in_gold"), ("t4", "unknown_case_id"), ("t5", "no_request_span")]:
        con.execute("INSERT INTO unmatched_traces VALUES (?, ?, ?, [])", [run_id, trace, reason])


def test_basis_rows_in_rows_out(store: duckdb.DuckDBPyConnection) -> None:
    """A mixed run: each report counts the basis it is asked for; coverage counts both."""
    _mixed_run(store, "m0", T0, "ok")
    _mixed_run(store, "m1", T0 + dt.timedelta(days=1), "grounding")
    zero = dict.fromkeys(BUCKETS, 0)
    by_basis = [
        (b, bucket, n)
        for b, counts in (
            ("gold", {**zero, "grounding": 1, "ok": 1}),
            ("corpus", {**zero, "access_violation": 1, "grounding": 1, "ok": 1}),
        )
        for bucket, n in counts.items()
    ]
    assert run(store, "report_basis", run_id="m1") == by_basis
    assert [r[1:] for r in run(store, "report_buckets", run_id="m1", basis="corpus") if r[2]] == [
        ("access_violation", 1, 0.3333),
        ("grounding", 1, 0.3333),
        ("ok", 1, 0.3333),
    ]
    assert [r[1:] for r in run(store, "report_buckets", run_id="m1") if r[2]] == [
        ("access_violation", 1, 0.2),
        ("grounding", 2, 0.4),
        ("ok", 2, 0.4),
    ]
    assert run(store, "report_coverage", run_id="m1") == [
        (
            5,
            2,
            3,
            0.4,
            [
                {"reason": "no_request_span", "traces": 1},
                {"reason": "question_not_in_gold", "traces": 1},
                {"reason": "unknown_case_id", "traces": 1},
            ],
            0,
            [],
            2,  # traces judged on the corpus basis
            2,  # gold-basis rows
            3,  # corpus-basis rows
        )
    ]
    assert run(store, "report_failing_claims", run_id="m1", basis="corpus") == [
        (
            None,
            "(answer)",
            None,
            "access_violation",
            "retrieval",
            "why access_violation",
            "t4",
            "s4",
            ["access_violation"],
            "corpus",
        ),
        (None, None, "A.", "grounding", "generation", "why grounding", "t3", "s3", ["grounding"], "corpus"),
    ]
    assert [r[6] for r in run(store, "report_failing_claims", run_id="m1", basis="gold")] == ["t2"]
    # the corpus claim "A." went ok -> grounding: a regression of the corpus basis, by its text
    assert run(store, "report_regressions", run_id="m1", previous_run_id=None) == [
        ("regressed", None, "A.", "grounding", 0, 1, "m0", "corpus")
    ]
    assert run(store, "report_regressions", run_id="m1", previous_run_id=None, basis="gold") == []
    assert run(store, "report_trend", since=dt.date(2026, 8, 11), basis="corpus") == [
        (dt.date(2026, 8, 11), "m1", "access_violation", 1),
        (dt.date(2026, 8, 11), "m1", "grounding", 1),
        (dt.date(2026, 8, 11), "m1", "ok", 1),
    ]
    assert run(store, "report_worst_cases", run_id="m1", limit=5, basis="corpus") == [
        (None, 2, 2, "access_violation", ["access_violation", "grounding"])
    ]
    assert [r[1:4] for r in run(store, "report_citation_metrics", run_id="m1", basis="gold")][:1] == [
        ("validity", 2, 2)
    ]
