"""Bad input as other systems write it: each line judged on its own, every skip counted once, a
path of the wrong kind named in one line (exit 2), nothing stored on input that cannot be used.

Traces come from the example app (real decorators, real trace files); each test then damages
them the way a real file arrives damaged.
"""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest

from citeline.analyzer.cli.main import main
from citeline.analyzer.gold.goldset import load_gold
from citeline.analyzer.run.analyze import analyze
from citeline.examples.demo import SCENARIOS, gold_path
from tests.analysis_helpers import run_and_analyze

TWINS = [s for s in SCENARIOS if s.name in ("unknown-label~fixed", "wrong-number~fixed", "retrieval-adapter-bug")]


@pytest.fixture(scope="module")
def lines(tmp_path_factory: pytest.TempPathFactory) -> list[bytes]:
    tmp = tmp_path_factory.mktemp("seed")
    run_and_analyze(tmp, TWINS)
    [f] = (tmp / "traces").glob("*.jsonl")
    return f.read_bytes().split(b"\n")[:-1]


def _buckets(db: Path, traces: Path) -> list[tuple[str, str]]:
    r = analyze(db, gold=gold_path(), traces=[traces])
    return sorted((c["case_id"], c["bucket"]) for c in r.claims.to_dicts())


def test_a_junk_first_line_costs_only_itself(tmp_path: Path, lines: list[bytes]) -> None:
    # before: the file was "not a trace file" whole, its good lines with it, and the run exited 0
    folder = tmp_path / "t"
    folder.mkdir()
    (folder / "a.jsonl").write_bytes(b"%%% junk from a log rotation %%%\n" + b"\n".join(lines) + b"\n")
    r = analyze(tmp_path / "s.duckdb", gold=gold_path(), traces=[folder])
    assert r.traces_read == len(lines)
    assert [p for s, p in r.problem_lines() if s] == [
        f"{folder / 'a.jsonl'}:line 1: -: invalid JSON: unexpected character, expected a JSON value: "
        "line 1 column 1 (char 0); line skipped"
    ]


@pytest.mark.slow
def test_a_bom_and_crlf_file_reads_like_any_other(tmp_path: Path, lines: list[bytes]) -> None:
    plain, windows = tmp_path / "plain", tmp_path / "windows"
    plain.mkdir()
    windows.mkdir()
    (plain / "a.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    (windows / "a.jsonl").write_bytes(b"\xef\xbb\xbf" + b"\r\n".join(lines) + b"\r\n")
    r = analyze(tmp_path / "w.duckdb", gold=gold_path(), traces=[windows])
    assert r.skipped == 0 and r.traces_read == len(lines)
    assert _buckets(tmp_path / "w2.duckdb", windows) == _buckets(tmp_path / "p.duckdb", plain)


def test_a_line_duckdb_stored_is_never_also_called_skipped(tmp_path: Path, lines: list[bytes]) -> None:
    # nested deeper than orjson reads (1024): DuckDB stores it, so the slow path must not name it
    deep = b'{"arrayValue":{"values":[' * 1100 + b'{"stringValue":"x"}' + b"]}}" * 1100
    attr = b'{"key":"deep","value":' + deep + b"},"
    first = lines[0].replace(b'"attributes":[', b'"attributes":[' + attr, 1)
    folder = tmp_path / "t"
    folder.mkdir()
    (folder / "a.jsonl").write_bytes(first + b"\n{not json\n" + b"\n".join(lines[1:]) + b"\n")
    r = analyze(tmp_path / "s.duckdb", gold=gold_path(), traces=[folder])
    assert r.traces_read == len(lines)
    assert [p.split(": ")[0] for s, p in r.problem_lines() if s] == [f"{folder / 'a.jsonl'}:line 2"]


@pytest.mark.slow
def test_every_skip_is_counted_the_same_on_stderr_and_in_json(
    tmp_path: Path, lines: list[bytes], capsys: pytest.CaptureFixture[str]
) -> None:
    # the buggy adapter's span is a note (its claims are not_evaluable), not a skip; the junk line is one
    folder = tmp_path / "t"
    folder.mkdir()
    (folder / "a.jsonl").write_bytes(b"\n".join(lines) + b"\n{junk\n")
    code = main(
        [
            "analyze",
            "--traces",
            str(folder),
            "--gold",
            str(gold_path()),
            "--db",
            str(tmp_path / "s.duckdb"),
            "--format",
            "json",
            "--quiet",
        ]
    )
    out = capsys.readouterr()
    assert code == 0
    doc = json.loads(out.out)
    stderr = out.err.splitlines()
    assert doc["skipped"] == 1 == sum(line.startswith("citeline: skipped: ") for line in stderr)
    assert sum(line.startswith("citeline: note: ") for line in stderr) == 1  # the unreadable retrieval span
    assert len(doc["problems"]) == 2


def test_a_folder_where_corpus_jsonl_belongs_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    gold = tmp_path / "gold"
    (gold / "corpus.jsonl").mkdir(parents=True)
    (gold / "cases.jsonl").write_text("")
    # before: IsADirectoryError from both commands
    assert main(["validate", str(gold)]) == 2
    assert main(["analyze", "--gold", str(gold), "--db", str(tmp_path / "s.duckdb")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        f"citeline: {gold}: cannot read the gold set: corpus.jsonl is a folder; a gold folder holds the files "
        "corpus.jsonl and cases.jsonl"
    ]
    assert not (tmp_path / "s.duckdb").exists()


def test_traces_given_a_gold_file_exits_2_and_stores_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # before: exit 1 and a run stored, where docs/analyzer.md says a path with no trace file is exit 2
    db = tmp_path / "s.duckdb"
    code = main(["analyze", "--traces", str(gold_path()), "--gold", str(gold_path()), "--db", str(db)])
    assert code == 2
    assert capsys.readouterr().err.startswith(
        f"citeline: --traces {gold_path()} is not a trace file (not a trace file: "
    )
    assert not db.exists() or duckdb.connect(str(db)).execute("SELECT count(*) FROM runs").fetchall() == [(0,)]


def test_messages_name_no_internal_class(tmp_path: Path) -> None:
    path = tmp_path / "gold.yaml"
    path.write_text("corpus:\n  - {chunk_id: [a, b], doc_id: d, text: t}\ncases: []\n")
    [error] = [str(e) for e in load_gold(path).errors]
    assert error.endswith("chunk_id: must be a string, got a list")
