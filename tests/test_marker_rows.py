"""A marker the app resolved or rendered more than once is checked on every row: each row that went elsewhere
raises ``resolution`` at its stage and is named once in the reason, in the order the app recorded the rows; rows
that all went where the marker meant raise nothing.

The demo's context-adapter twin answers one claim citing [1] (returns-v4#refunds-3), resolved and rendered once;
its stored resolution and render spans are rewritten here as an app that records each occurrence would write them,
and the same store analyzed again.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import pytest

from citeline.analyzer.run.analyze import analyze
from citeline.examples.demo import SCENARIOS, gold_path
from tests.analysis_helpers import run_and_analyze

MEANT = "returns-v4#refunds-3"
URI = "https://kb.example.com/returns/v4#refunds-3"

_RESOLVED = "UPDATE spans SET res_marker = ?, res_chunk_id = ?, res_version = ?, res_uri = ? WHERE stage = 'resolution'"
_RENDERED = "UPDATE spans SET ren_label = ?, ren_uri = ?, ren_chunk_id = ? WHERE stage = 'render'"

CASES: dict[str, tuple[str, list[Any], tuple[str, str | None], list[str]]] = {
    "resolved twice, once elsewhere": (
        _RESOLVED,
        [["1", "1"], [MEANT, "returns-v4#other-9"], ["v4", "v4"], [URI, URI]],
        ("resolution", "resolution"),
        [f"[1] meant {MEANT} but resolved to returns-v4#other-9 v4"],
    ),
    "resolved twice, both elsewhere": (  # named in the order the app recorded them
        _RESOLVED,
        [["1", "1"], ["returns-v4#other-9", "returns-v4#other-8"], ["v4", "v4"], [URI, URI]],
        ("resolution", "resolution"),
        [
            f"[1] meant {MEANT} but resolved to returns-v4#other-9 v4",
            f"[1] meant {MEANT} but resolved to returns-v4#other-8 v4",
        ],
    ),
    "resolved twice, both where it meant": (
        _RESOLVED,
        [["1", "1"], [MEANT, MEANT], ["v4", "v4"], [URI, URI]],
        ("ok", None),
        [],
    ),
    "rendered twice, once elsewhere": (
        _RENDERED,
        [["1", "1"], ["https://kb.example.com/other", URI], ["", ""]],
        ("resolution", "render"),
        [f"[1] meant {MEANT} but the page links https://kb.example.com/other"],
    ),
    "rendered twice, both where it meant": (
        _RENDERED,
        [["1", "1"], [URI, URI], ["", MEANT]],
        ("ok", None),
        [],
    ),
}


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    (twin,) = [s for s in SCENARIOS if s.name == "context-adapter-bug~fixed"]
    tmp = tmp_path_factory.mktemp("marker-rows")
    _, [out] = run_and_analyze(tmp, [twin])
    assert [(r["bucket"], r["cited_chunks"]) for r in out.rows] == [("ok", [MEANT])]
    return tmp / "store.duckdb"


@pytest.mark.parametrize("case", list(CASES))
def test_a_marker_resolved_or_rendered_twice_is_checked_on_every_row(store: Path, tmp_path: Path, case: str) -> None:
    update, values, (bucket, stage), named = CASES[case]
    db = tmp_path / "s.duckdb"
    db.write_bytes(store.read_bytes())
    con = duckdb.connect(str(db))
    con.execute(update, values)
    con.close()
    (row,) = analyze(db, gold=gold_path()).claims.to_dicts()
    assert (row["bucket"], row["stage"]) == (bucket, stage)
    for words in named:
        assert row["reason"].count(words) == 1, row["reason"]
    assert [row["reason"].index(words) for words in named] == sorted(row["reason"].index(w) for w in named)
    assert row["reason"].count("[1] meant") == len(named), row["reason"]
