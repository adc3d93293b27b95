"""One bucket table (analyzer/buckets.py): every bucket's name, order, flag, stages, reasons and colour are
defined there once; classify.sql reads them from the store, and nothing else spells a bucket."""

from __future__ import annotations

import re
from pathlib import Path

import duckdb

from citeline.analyzer.buckets import BUCKETS, COLORS, OK, ROW_STAGES, TABLE
from citeline.analyzer.store import STAGES, connect

ROOT = Path(__file__).resolve().parent.parent
#: files that spell buckets on purpose, and why
ALLOWED = {
    "analyzer/buckets.py": "the bucket table",
    "examples/demo.py": "the scenario table: the bucket each scenario must produce, asserted by tests/test_buckets.py",
    "analyzer/testing/perturbations.py": "the bucket each perturbation must raise, asserted by the harness",
    "bench/baseline.py": "the per-trace loop the benchmark compares against, a classifier of its own",
    "bench/synth.py": "fault names of the synthetic traces (one of them is called uncited)",
}


def _code_files() -> list[Path]:
    globs = ("analyzer/**/*.py", "instrumentation/*.py", "queries/*.sql", "examples/*.py")
    return sorted(p for g in (*globs, "bench/*.py") for p in ROOT.glob(g))


def test_no_bucket_is_spelled_outside_the_bucket_table() -> None:
    """A quoted bucket name anywhere in the code is a second definition; a bucket that is also a stage's name
    (resolution) counts where it is compared with a bucket or keys a colour. ``ok`` is the absence of a
    bucket and is read as a plain word ("bucket <> 'ok'")."""
    plain = [b for b in BUCKETS if b != OK and b not in STAGES]
    staged = [b for b in BUCKETS if b in STAGES]
    quoted = re.compile(rf"""["']({"|".join(plain)})["']""")
    as_bucket = re.compile(
        rf"""bucket["'\]]*\s*(?:=|==|<>|!=)\s*["']({"|".join(staged)})["']|["']({"|".join(staged)})["']\s*:\s*["']#"""
    )
    found = []
    for path in _code_files():
        name = str(path.relative_to(ROOT))
        if name in ALLOWED:
            continue
        text = path.read_text()
        found += [f"{name}: {m.group(0)}" for p in (quoted, as_bucket) for m in p.finditer(text)]
    assert found == []


def test_classify_raises_each_flag_and_gives_each_reason_of_the_table() -> None:
    """Every bucket's flag is a column classify.sql computes and lists once among the raised flags, every reason
    variant is one classify.sql can pick, and every detail a reason's words name is one classify.sql fills."""
    classify = (ROOT / "queries" / "classify.sql").read_text()
    named = classify[classify.index("CASE why.details[i]") : classify.index("AS reason")]
    details = set(re.findall(r"WHEN '(\w+)' THEN", named))
    assert len(details) >= 20, details  # the detail arms were found
    for b in TABLE:
        if b.flag:
            assert re.search(rf"\bAS {b.flag}\b", classify), b.flag
            assert classify.count(f"'flag': '{b.flag}'") == 1, b.flag
        for r in b.reasons:
            assert f"'{r.variant}'" in classify, (b.name, r.variant)
            assert r.stage is None or r.stage in (*STAGES, "request", *ROW_STAGES), (b.name, r.stage)
            assert set(re.findall(r"\{(\w+)\}", r.template)) <= details, (b.name, r.variant)
    assert [b.name for b in TABLE if not b.flag] == [OK]
    # classify.sql joins a claim's bucket and variant to its reason: two reasons under one key would double it
    keys = [(b.name, r.variant) for b in TABLE for r in b.reasons]
    assert len(keys) == len(set(keys))
    assert TABLE[-1].name == OK  # the bucket of a claim nothing flagged comes after every flag
    assert set(COLORS) == set(BUCKETS)


def test_the_store_holds_the_bucket_table(tmp_path: Path) -> None:
    connect(tmp_path / "s.duckdb").close()
    con = duckdb.connect(str(tmp_path / "s.duckdb"))
    try:
        order = con.execute("SELECT bucket, position, flag, color FROM bucket_order ORDER BY position").fetchall()
        reasons = con.execute("SELECT bucket, variant, stage, template FROM bucket_reasons ORDER BY rowid").fetchall()
    finally:
        con.close()
    assert order == [(b.name, i + 1, b.flag, b.color) for i, b in enumerate(TABLE)]
    assert reasons == [(b.name, r.variant, r.stage, r.template) for b in TABLE for r in b.reasons]
