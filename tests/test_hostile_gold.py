"""Gold files written by someone else: every hostile shape ends in one line naming the file and place."""

from __future__ import annotations

from pathlib import Path

import pytest

from citeline.analyzer.cli.main import main
from citeline.analyzer.gold.goldset import load_gold
from citeline.analyzer.gold.yaml_lines import MAX_ALIASES, MAX_DEPTH, MAX_EXPANDED

CASE = """
cases:
  - case_id: c1
    question: Can I return it?
    claims: [{claim_id: a, text: Yes within 30 days., support: [[r1]]}]
"""
CORPUS = "corpus:\n  - {chunk_id: r1, doc_id: r, text: Returns within 30 days.}\n"


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "gold.yaml"
    path.write_text(text)
    return path


@pytest.mark.parametrize("levels", [13, 9], ids=["108-aliases", "72-aliases"])
def test_an_alias_bomb_is_refused_by_line(tmp_path: Path, levels: int) -> None:
    # 72 aliases is under the count bound, but they stand for 9**8 values: the size they expand to
    # is what is bounded (before: 40 s and a MemoryError traceback)
    rows = ["a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    rows += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, levels)]
    path = _write(tmp_path, "\n".join(rows) + "\n" + CORPUS + CASE)
    gold = load_gold(path)
    assert gold.unreadable == (
        f"line 6: aliases (*name) that expand to more than {MAX_EXPANDED:,} values: refused (alias bomb?)"
    )  # line 6: the alias that crossed the bound
    assert (gold.corpus, gold.cases) == ({}, {})


def test_more_aliases_than_the_bound_are_refused(tmp_path: Path) -> None:
    rows = ["a0: &a0 lol"] + [f"b{i}: *a0" for i in range(MAX_ALIASES + 1)]
    gold = load_gold(_write(tmp_path, "\n".join(rows) + "\n" + CORPUS + CASE))
    assert gold.unreadable == (
        f"line {MAX_ALIASES + 2}: more than {MAX_ALIASES} aliases (*name): refused, a gold set needs none (alias bomb?)"
    )


def test_nesting_past_the_bound_is_refused(tmp_path: Path) -> None:
    deep = "[" * (MAX_DEPTH + 5) + "x" + "]" * (MAX_DEPTH + 5)
    gold = load_gold(_write(tmp_path, f"{CORPUS}extra: {deep}\n{CASE}"))
    assert gold.unreadable == f"line 3: nested deeper than {MAX_DEPTH} levels: refused"
    very = "[" * 100_000 + "]" * 100_000  # deeper than Python's own recursion limit
    assert load_gold(_write(tmp_path, f"x: {very}\n")).unreadable is not None


def test_a_key_repeated_in_one_mapping_names_both_lines(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = CORPUS + "cases:\n  - case_id: c1\n    question: Can I?\n    question: Can I not?\n    expect: abstain\n"
    path = _write(tmp_path, text)
    assert load_gold(path).unreadable == "line 6: key 'question' appears twice in one mapping (lines 5 and 6)"
    assert main(["analyze", "--gold", str(path), "--db", str(tmp_path / "s.duckdb")]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"citeline: {path}: cannot read the gold set: line 6: key 'question' appears twice in one mapping "
        "(lines 5 and 6)"
    ]


def test_groups_must_be_a_list_and_corpus_entries_mappings(tmp_path: Path) -> None:
    text = (
        "corpus:\n  - {chunk_id: r1, doc_id: r, text: Returns.}\n  - just a string\n"
        "cases:\n  - case_id: c1\n    question: Q?\n    expect: abstain\n    principal: {id: bob, groups: staff}\n"
        "  - case_id: c2\n    question: Q2?\n    expect: abstain\n    principal: {id: al, groups: [staff, eu]}\n"
    )
    gold = load_gold(_write(tmp_path, text))
    assert [str(e) for e in gold.errors] == [
        f"{tmp_path / 'gold.yaml'}:line 3: corpus: each corpus entry must be a mapping",
        f"{tmp_path / 'gold.yaml'}:line 5: principal.groups: must be a list of group names, e.g. groups: [staff]",
    ]
    assert list(gold.cases) == ["c2"]  # was read as groups ['s', 't', 'a', 'f', 'f']
    assert gold.cases["c2"].principal_groups == ["staff", "eu"]
    assert list(gold.corpus) == ["r1"]


def test_a_jsonl_gold_folder_skips_a_line_nested_too_deeply(tmp_path: Path) -> None:
    (tmp_path / "corpus.jsonl").write_text(
        '{"chunk_id": "r1", "doc_id": "r", "text": "Returns."}\n' + "[" * 100_000 + "\n"
    )
    (tmp_path / "cases.jsonl").write_text('{"case_id": "c1", "question": "Q?", "expect": "abstain"}\n')
    gold = load_gold(tmp_path)
    assert [str(e) for e in gold.errors] == [
        f"{tmp_path / 'corpus.jsonl'}:line 2: -: nested too deeply to read; the line is skipped"
    ]
    assert (list(gold.corpus), list(gold.cases), gold.unreadable) == (["r1"], ["c1"], None)
