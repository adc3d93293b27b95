"""Which cell of a table row is wrong: a row is one claim (``auto``), its cells the parts a reason names.

A row the judge does not find supported ("Plan: Pro; price: $25; storage: 100 GB" against "The Pro plan
costs $20 per month and includes 100 GB of storage.") is of little help until the reason says which cell to
fix. Each cell after the row's first is judged against the same evidence, by the same cached judge, with
the row's first cell as its subject ("Plan: Pro; price: $25": a header-labelled row is "X is V; Y is W"),
and the first one the evidence does not support (one with the row's own label first) is named before the
judge's rationale: ``cell 'price: $25': states $25 where the gold fact is '$20'``. Only rows judged
``contradicted`` or ``insufficient`` cost these judgments; the stored judgments stay the judge's own (the
name is added as they are read, every run), so a row judged in an earlier run is named the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence

import duckdb

from citeline.analyzer.claims.tables import PART, row_parts
from citeline.analyzer.judges import JudgeItem
from citeline.analyzer.judges._api import as_item

#: the run's table row claims: the claims a cell names as its row (``joins`` of one: gen_claims.sql)
_ROWS = """
SELECT DISTINCT r.text FROM t_gen_claims AS r
WHERE EXISTS (SELECT 1 FROM t_gen_claims AS c
              WHERE c.trace_id = r.trace_id AND len(c.joins) = 1 AND c.joins[1] = r.claim_idx)
"""
FAILED = ("contradicted", "insufficient")

Item = JudgeItem | tuple[str, list[str], list[str], list[str]]


def rows_of(con: duckdb.DuckDBPyConnection) -> frozenset[str]:
    """The texts of the run's table row claims (t_gen_claims)."""
    return frozenset(text for (text,) in con.execute(_ROWS).fetchall())


def named(
    items: Sequence[Item],
    answers: list[tuple[str, str]],
    rows: Collection[str],
    ask: Callable[[list[Item]], list[tuple[str, str]]],
) -> list[tuple[str, str]]:
    """``answers`` (label, rationale per item), the rationale of each row judged not supported naming its
    wrong cell; ``ask`` judges the cells (the run's cached judge)."""
    plan: list[tuple[int, list[str], int]] = []  # item, its cells, where their verdicts start
    cells: list[Item] = []
    for i, (label, _r) in enumerate(answers):
        if label not in FAILED or items[i][0] not in rows:
            continue
        it = as_item(items[i])
        parts = row_parts(it.claim)
        plan.append((i, parts[1:], len(cells)))
        for part in parts[1:]:
            text = parts[0] + PART + part
            if isinstance(items[i], JudgeItem):
                cells.append(JudgeItem(text, it.evidence, [], [], question=it.question, sources=it.sources))
            else:
                cells.append((text, list(it.evidence), [], []))
    if not plan:
        return answers
    verdicts = ask(cells)
    out = list(answers)
    for i, parts, at in plan:
        label, rationale = answers[i]
        judged = [(part, verdicts[at + k][0]) for k, part in enumerate(parts)]
        wrong = [p for p, lab in judged if lab == label] or [p for p, lab in judged if lab in FAILED]
        if wrong:
            out[i] = (label, f"cell {wrong[0]!r}: {rationale}")
    return out
