"""Text the analyzer stores or shows is the same on every run over the same traces: each ``string_agg`` in the
queries says its order. Without ORDER BY, DuckDB joins the strings in whatever order its plan hands them over,
which may change with the thread count and the size of the input, so a claim's reason (stored in
``claim_results``, written to Phoenix as the annotation's explanation, compared by the regression report)
could read differently on the next run with nothing changed.
"""

from __future__ import annotations

import re
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

QUERIES = Path(__file__).resolve().parents[1] / "queries"

#: a string literal ('' inside it is a quote) or a comment (to the end of its line)
_LITERAL_OR_COMMENT = re.compile(r"'(?:[^']|'')*'|--[^\n]*")


def code_only(sql: str) -> str:
    """``sql`` with every string literal and comment blanked out, each character kept as a space (a newline as
    itself), so positions and line numbers stay those of the file."""
    return _LITERAL_OR_COMMENT.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), sql)


def calls(sql: str, name: str) -> list[tuple[int, str]]:
    """Each call of the function ``name`` in ``sql`` (not in a literal or a comment): the line it opens on and
    its argument text, literals and comments blanked (an unclosed call runs to the end)."""
    code = code_only(sql)
    out = []
    for m in re.finditer(rf"\b{name}\s*\(", code, re.IGNORECASE):
        depth, i = 1, m.end()
        while i < len(code) and depth:
            depth += {"(": 1, ")": -1}.get(code[i], 0)
            i += 1
        out.append((code.count("\n", 0, m.start()) + 1, code[m.end() : i - 1 if not depth else i]))
    return out


#: pieces of SQL, each balanced on its own: literals and a comment holding brackets or an ORDER BY, an empty
#: literal (two quotes, which joins a literal beside it), a nested call with its own ORDER BY
_PIECES = ["a", "'x)('", "(b)", " ORDER BY n", "-- ) ORDER BY\n", ", ", "''", "(c ORDER BY d)", "'--'"]


@given(st.lists(st.sampled_from(_PIECES), max_size=8))
def test_calls_finds_the_argument_whatever_it_holds(pieces: list[str]) -> None:
    inner = "".join(pieces)
    sql = f"-- string_agg(x) in a comment\nSELECT 'string_agg(' AS s, string_agg({inner}) AS x FROM t"
    got = calls(sql, "string_agg")
    assert [line for line, _ in got] == [2]
    assert got[0][1] == code_only(inner)


def test_every_string_agg_says_its_order() -> None:
    unordered = [
        f"{path.name}:{line}"
        for path in sorted(QUERIES.glob("*.sql"))
        for line, args in calls(path.read_text(), "string_agg")
        if not re.search(r"\bORDER\s+BY\b", args, re.IGNORECASE)
    ]
    assert unordered == []
