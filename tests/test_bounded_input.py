"""Bounded by design: one hostile file costs one streamed read, never the machine.

Each test plants the hostile input beside the demo app's real traces and checks that the rest
is analyzed and the hostile part is one named problem. Limits are lowered where the real ones
(4 GiB decompressed per file, DuckDB's 1.5 GB) would make a test slow; bench/hostile_input.py
measures them at full size.
"""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from citeline.analyzer import streaming as _streaming
from citeline.analyzer.gold.goldset import load_gold
from citeline.analyzer.run.analyze import analyze
from citeline.analyzer.sources import ingest as _ingest
from citeline.analyzer.store import connect
from citeline.examples.demo import SCENARIOS, gold_path, run_scenarios
from tests.conftest import make_tracing


@pytest.fixture(scope="module")
def demo_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo's 40 traces in one trace file."""
    tmp = tmp_path_factory.mktemp("demo")
    t = make_tracing(tmp)
    try:
        run_scenarios()
    finally:
        t.handle.shutdown()
    [f] = sorted(t.trace_dir.glob("*.jsonl"))
    return f


def _folder(tmp_path: Path, demo_file: Path) -> Path:
    folder = tmp_path / "traces"
    folder.mkdir()
    shutil.copy(demo_file, folder / "good.jsonl")
    return folder


@settings(max_examples=200, deadline=None)
@given(data=st.lists(st.sampled_from([b"a", b"bc", b"\n", b"\n\n", b"x" * 7]), max_size=30), chunk=st.integers(1, 9))
def test_streamed_lines_and_shape_equal_splitting_the_whole_file(
    tmp_path_factory: pytest.TempPathFactory, data: list[bytes], chunk: int
) -> None:
    raw = b"".join(data)
    path = tmp_path_factory.mktemp("lines") / "f.jsonl"
    path.write_bytes(raw)
    saved, _streaming._CHUNK = _streaming._CHUNK, chunk
    try:
        got = list(_streaming.lines(path, hold=4))
        shape = _streaming.measure(path, max_line=6)
    finally:
        _streaming._CHUNK = saved
    parts = raw.split(b"\n")
    if raw.endswith(b"\n") or not raw:
        parts = parts[:-1]
    assert got == [(n, p if len(p) <= 4 else None, len(p)) for n, p in enumerate(parts, start=1)]
    assert shape == _streaming.Shape(
        len(raw), len(parts), max(map(len, parts), default=0), max((len(p) for p in parts if len(p) <= 6), default=0)
    )


def test_a_gzip_bomb_is_named_and_skipped_and_the_rest_analyzed(
    tmp_path: Path, demo_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = _folder(tmp_path, demo_file)
    with gzip.open(folder / "bomb.jsonl.gz", "wb", compresslevel=9) as f:
        f.write(demo_file.read_bytes().split(b"\n")[0] + b"\n")  # it looks like a trace file
        for _ in range(64):
            f.write(b"\0" * (1024 * 1024))  # 64 MiB of zeros in about 64 KB
    assert (folder / "bomb.jsonl.gz").stat().st_size < 200_000
    monkeypatch.setattr(_streaming, "MAX_DECOMPRESSED_BYTES", 16 * 1024 * 1024)
    result = analyze(":memory:", gold=gold_path(), traces=[folder])
    assert result.traces_read == len(SCENARIOS)
    [bomb] = [p for p in result.problems() if "bomb.jsonl.gz" in p]
    assert bomb == (
        f"{folder / 'bomb.jsonl.gz'}:-: -: decompresses past 16,777,216 bytes, the most citeline reads from one "
        "file (a gzip bomb?); file skipped"
    )


def test_a_healthy_gz_file_is_read_whole_with_no_slow_path(
    tmp_path: Path, demo_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # before: the compressed size was compared with the decompressed bytes, so every .gz file was
    # decompressed into memory a second time and parsed line by line
    folder = tmp_path / "traces"
    folder.mkdir()
    with gzip.open(folder / "good.jsonl.gz", "wb") as f:
        f.write(demo_file.read_bytes())
    slow: list[Path] = []
    diagnose = _ingest._diagnose

    def diagnosing(path: Path, *a: Any) -> Any:
        slow.append(path)
        return diagnose(path, *a)

    monkeypatch.setattr(_ingest, "_diagnose", diagnosing)
    result = analyze(":memory:", gold=gold_path(), traces=[folder])
    assert (result.traces_read, result.skipped, slow) == (len(SCENARIOS), 0, [])


@pytest.mark.slow
def test_a_line_too_large_for_the_memory_limit_is_one_problem_and_the_rest_is_analyzed(
    tmp_path: Path, demo_file: Path
) -> None:
    folder = _folder(tmp_path, demo_file)
    span = {
        "traceId": "ab" * 16,
        "spanId": "cd" * 8,
        "name": "huge",
        "startTimeUnixNano": "1",
        "endTimeUnixNano": "2",
        "attributes": [{"key": "blob", "value": {"arrayValue": {"values": [{"stringValue": "x" * 100}] * 400_000}}}],
    }
    big = json.dumps({"resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [{"spans": [span]}]}]})
    assert len(big) > _ingest.LINE_BYTES
    good = (folder / "good.jsonl").read_text().splitlines()
    (folder / "good.jsonl").write_text("\n".join([*good[:3], big, *good[3:]]) + "\n")
    con = connect(tmp_path / "s.duckdb", memory_limit="120MB")  # far less than the line needs
    try:
        result = analyze(tmp_path / "s.duckdb", gold=gold_path(), traces=[folder], con=con)
    finally:
        con.close()
    assert result.traces_read == len(SCENARIOS)
    [problem] = [p for p in result.problems() if "memory limit" in p]
    assert problem.startswith(
        f"{folder / 'good.jsonl'}:line 4: -: line of {len(big):,} bytes could not be read within the memory "
        "limit (OutOfMemoryException: "
    )


def test_problem_spans_are_placed_in_one_read_of_their_file(
    tmp_path: Path, demo_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = _folder(tmp_path, demo_file)
    lines = (folder / "good.jsonl").read_text().splitlines()
    expected: dict[str, int] = {}
    out = []
    for n, line in enumerate(lines, start=1):
        doc = json.loads(line)
        for rs in doc["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                for s in ss["spans"]:
                    if len(expected) < 50:
                        for a in s["attributes"]:
                            if a["key"] == "citeline.schema_version":
                                a["value"] = {"stringValue": "99"}
                                expected[s["spanId"]] = n
        out.append(json.dumps(doc))
    (folder / "good.jsonl").write_text("\n".join(out) + "\n")
    opened: list[Path] = []
    real = _streaming.open_file

    def opening(p: Path) -> Any:
        opened.append(p)
        return real(p)

    monkeypatch.setattr(_streaming, "open_file", opening)
    result = analyze(":memory:", gold=gold_path(), traces=[folder])
    unknown = [p for p in result.problems() if "unknown schema version '99'" in p]
    assert len(unknown) == 50
    for p in unknown:
        span = p.split(" span ")[1].split(")")[0]
        assert f":line {expected[span]} (trace " in p
    assert opened.count(folder / "good.jsonl") == 1  # 50 problems, one read


@pytest.mark.slow
def test_file_names_are_taken_literally(tmp_path: Path, demo_file: Path) -> None:
    folder = tmp_path / "traces"
    folder.mkdir()
    lines = demo_file.read_text().splitlines()
    (folder / "a*.jsonl").write_text(lines[0] + "\n")
    (folder / "ab.jsonl").write_text("\n".join(lines[1:]) + "\n")
    (folder / "c[1].jsonl").write_text(lines[0] + "\n")
    (folder / "c1.jsonl").write_text("\n".join(lines[1:]) + "\n")
    for name in ("a*.jsonl", "c[1].jsonl"):
        result = analyze(tmp_path / f"{len(name)}.duckdb", gold=gold_path(), traces=[folder / name])
        assert result.traces_read == 1, name  # before: the name was a glob and also read its neighbour


def test_a_corpus_line_past_the_cap_is_named_and_the_rest_loaded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from citeline.analyzer.gold import goldset as _gold

    monkeypatch.setattr(_gold, "MAX_GOLD_LINE_BYTES", 1000)
    folder = tmp_path / "gold"
    folder.mkdir()
    long = json.dumps({"chunk_id": "b", "doc_id": "d", "text": "x" * 5000})
    (folder / "corpus.jsonl").write_text(
        json.dumps({"chunk_id": "a", "doc_id": "d", "text": "short"}) + "\n" + long + "\n"
    )
    (folder / "cases.jsonl").write_text(json.dumps({"case_id": "c", "question": "Q?", "expect": "abstain"}) + "\n")
    gold = load_gold(folder)
    assert list(gold.corpus) == ["a"] and list(gold.cases) == ["c"]
    assert [str(e) for e in gold.errors] == [
        f"{folder / 'corpus.jsonl'}:line 2: -: a line of {len(long):,} bytes is longer than the 1,000 citeline reads; "
        "the line is skipped (split the chunk into smaller chunks)"
    ]


def test_a_gold_file_past_the_cap_is_refused_by_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from citeline.analyzer.gold import goldset as _gold

    monkeypatch.setattr(_gold, "MAX_GOLD_FILE_BYTES", 100)
    path = tmp_path / "gold.yaml"
    path.write_text("corpus: []\ncases: []\n" + "# padding\n" * 20)
    gold = load_gold(path)
    assert gold.unreadable is not None and gold.unreadable.startswith(
        f"{path.stat().st_size} bytes is more than the 100 citeline reads from one YAML/JSON gold file: refused"
    )
