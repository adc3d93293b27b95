"""Issue #33's trust gaps, each a test that failed before its fix: a deeply nested first line never
dismisses a trace file, missing groups fail closed, a verdict never lands on another trace's span
(Phoenix), a gold file's decoding error names its line."""

from __future__ import annotations

from pathlib import Path

import pytest

from citeline.analyzer.run.analyze import analyze
from citeline.examples.demo import SCENARIOS, gold_path
from tests.analysis_helpers import run_and_analyze
from tests.phoenix_server import PhoenixServer, fetch_spans

TWINS = [s for s in SCENARIOS if s.name in ("unknown-label~fixed", "wrong-number~fixed")]


@pytest.fixture(scope="module")
def lines(tmp_path_factory: pytest.TempPathFactory) -> list[bytes]:
    tmp = tmp_path_factory.mktemp("seed")
    run_and_analyze(tmp, TWINS)
    [f] = (tmp / "traces").glob("*.jsonl")
    return f.read_bytes().split(b"\n")[:-1]


def test_a_first_line_nested_past_the_parser_never_dismisses_the_file(tmp_path: Path, lines: list[bytes]) -> None:
    # before: the first 64 KiB held only brackets, so the file was "not a trace file" whole (exit 2 for a
    # folder of one file) and its good traces were lost with it
    folder = tmp_path / "t"
    folder.mkdir()
    deep = b"[" * 100_000 + b"]" * 100_000
    (folder / "a.jsonl").write_bytes(deep + b"\n" + b"\n".join(lines) + b"\n")
    r = analyze(tmp_path / "s.duckdb", gold=gold_path(), traces=[folder])
    assert r.traces_read == len(lines)
    skipped = [p for s, p in r.problem_lines() if s]
    assert len(skipped) == 1 and skipped[0].startswith(f"{folder / 'a.jsonl'}:line 1: -: ")
    assert skipped[0].endswith("; line skipped")


def test_a_latin1_byte_in_a_yaml_gold_file_is_named_by_its_line_and_column(tmp_path: Path) -> None:
    # before: "cannot parse: 'utf-8' codec can't decode byte 0xe9 in position 126: ..." at "line -"
    from citeline.analyzer.gold.goldset import load_gold

    text = (
        "corpus:\n"
        "  - id: a#1\n"
        "    text: Orders ship free.\n"
        "cases:\n"
        "  - id: c1\n"
        "    question: Do orders ship free?\n"
        "    claims:\n"
        "      - id: free\n"
        "        text: Orders ship free in caf\xe9s.\n"
    )
    path = tmp_path / "gold.yaml"
    path.write_bytes(text.encode("latin-1"))
    gold = load_gold(path)
    [error] = gold.errors
    assert str(error) == (f"{path}:line 9: -: not UTF-8 text: byte 0xe9 at line 9, column 38; save the file as UTF-8")
    assert gold.unreadable == "line 9: not UTF-8 text: byte 0xe9 at line 9, column 38; save the file as UTF-8"


@pytest.mark.integration
def test_a_hostile_trace_reusing_a_span_id_never_annotates_the_honest_span_in_phoenix(
    tmp_path: Path, phoenix: PhoenixServer
) -> None:
    """A real Phoenix holds the honest traces; a hostile trace file reuses the id of an honest trace's breaking
    span. Before: its retrieval_miss was annotated onto the honest trace's generation span (Phoenix keys
    annotations by span id). Now neither verdict is written to that id, and both are named."""
    import glob
    import json
    import time
    import urllib.request

    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider

    from citeline.analyzer.phoenix.annotate import annotate
    from citeline.analyzer.store import connect
    from citeline.examples.demo import run_scenarios
    from citeline.instrumentation import configure

    project = "citeline-hostile-span"
    provider = TracerProvider(resource=Resource.create({"service.name": "bot", "openinference.project.name": project}))
    handle = configure(
        "bot", otlp_endpoint=f"{phoenix.url}/v1/traces", trace_dir=tmp_path / "all", tracer_provider=provider
    )
    try:
        run_scenarios()
    finally:
        handle.shutdown()
    expected = 6 * len(SCENARIOS)
    deadline = time.monotonic() + 120
    while len(fetch_spans(phoenix.url, project)) < expected:
        assert time.monotonic() < deadline, "Phoenix did not persist every exported span in 120 s"
        time.sleep(1)
    first = analyze(tmp_path / "all.duckdb", gold=gold_path(), traces=[tmp_path / "all"])
    rows = first.claims.to_dicts()
    honest = next(r for r in rows if r["bucket"] == "invalid_citation")
    victim = next(r for r in rows if r["bucket"] == "retrieval_miss")
    lines = Path(glob.glob(str(tmp_path / "all" / "*.jsonl"))[0]).read_text().splitlines()
    folder = tmp_path / "mixed"
    folder.mkdir()
    (folder / "honest.jsonl").write_text(next(x for x in lines if honest["trace_id"] in x) + "\n")
    hostile = next(x for x in lines if victim["trace_id"] in x).replace(victim["span_id"], honest["span_id"])
    (folder / "hostile.jsonl").write_text(hostile + "\n")
    result = analyze(tmp_path / "mixed.duckdb", gold=gold_path(), traces=[folder])
    assert sorted((r["trace_id"], r["span_id"], r["bucket"]) for r in result.claims.to_dicts()) == sorted(
        [
            (honest["trace_id"], honest["span_id"], "invalid_citation"),
            (victim["trace_id"], honest["span_id"], "retrieval_miss"),
        ]
    )
    con = connect(tmp_path / "mixed.duckdb")
    try:
        report = annotate(con, phoenix.url, result.run_id)
    finally:
        con.close()
    query = f"{phoenix.url}/v1/projects/{project}/span_annotations?span_ids={honest['span_id']}&limit=100"
    with urllib.request.urlopen(query) as resp:
        landed = [a for a in json.loads(resp.read())["data"] if a["name"] == "citeline"]
    assert [a["result"]["label"] for a in landed] == []  # before: ['retrieval_miss', 'invalid_citation']
    assert sorted(str(p) for p in report.not_own_spans) == sorted(
        f"phoenix:trace {mine}: span {honest['span_id']}: is also the id of a span of trace {other}: "
        "its verdict was not written there"
        for mine, other in ((honest["trace_id"], victim["trace_id"]), (victim["trace_id"], honest["trace_id"]))
    )
    assert report.annotations == 0 and report.trace_annotations == 2  # each request span is its own
