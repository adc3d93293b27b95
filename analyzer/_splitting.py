"""Which policy each trace's answer is split by, and the run's count of text that is no claim.

An answer is split once per (answer, policy): the policy holds the attachment unit (the case's,
the run's or the gold file's), the kinds of text exempt from citation, and the shape of the label
map its generation was given (``[2026]`` is a year before a map of eight labels). The SQL is
``queries/split_keys.sql`` and ``queries/skipped_text.sql``.
"""

from __future__ import annotations

from collections.abc import Collection

import duckdb
import polars as pl

from citeline.instrumentation._labels import Shape

from ._policy import Policy, exempt_or_default, merge
from ._store import register_frame, sql

# each split's answer and policy, by its number (split_keys.sql numbers them 0, 1, ...)
_SPLITS = "SELECT any_value(answer), any_value(policy) FROM t_split_keys GROUP BY split_id ORDER BY split_id"
_LABEL_MAPS = (
    "SELECT DISTINCT t.map_label, g.attach FROM t_traces AS t LEFT JOIN t_gold_cases AS g USING (case_id) "
    "WHERE t.answer IS NOT NULL"
)


def split_keys(
    con: duckdb.DuckDBPyConnection,
    *,
    attach: str | None,
    exempt: Collection[str] | None,
    file_attach: str | None,
    file_exempt: Collection[str] | None,
) -> tuple[list[str], list[Policy]]:
    """t_split_keys (trace_id, split_id, prose): which split of its answer each trace reads; returns each split's
    answer and policy, in split_id order. Distinct label maps and case settings are few, so the policies are
    made in Python once each and joined back by SQL; the rest joins on the split's number, not on answer text."""
    kinds = exempt_or_default(exempt, file_exempt)
    rows = con.execute(_LABEL_MAPS).fetchall()
    policies: dict[str, Policy] = {}
    keys: list[str] = []
    for labels, case_attach in rows:
        policy = Policy(merge(case_attach, attach, file_attach), kinds, Shape.of(labels or ()))
        policies[policy.key] = policy
        keys.append(policy.key)
    register_frame(
        con,
        "t_policy_of",
        pl.DataFrame(
            {"map_label": [r[0] for r in rows], "attach": [r[1] for r in rows], "policy": keys},
            schema={"map_label": pl.List(pl.Utf8), "attach": pl.Utf8, "policy": pl.Utf8},
        ),
    )
    con.execute("CREATE OR REPLACE TEMP TABLE t_split_keys AS " + sql("split_keys").strip().rstrip(";"))
    splits = con.execute(_SPLITS).fetchall()
    return [a for a, _ in splits], [policies[k] for _, k in splits]


def abstentions(con: duckdb.DuckDBPyConnection, abstains: list[bool]) -> None:
    """t_abstain (trace_id, abstains): whether each trace's prose answer abstains (``abstains[split_id]``).

    Decided per trace: a structured answer says whether it abstained (``abstained``), so its split's
    phrases say nothing for it, and nothing for a prose answer of the same words either."""
    register_frame(
        con,
        "t_split_abstain",
        pl.DataFrame(
            {"split_id": range(len(abstains)), "abstains": abstains},
            schema={"split_id": pl.Int64, "abstains": pl.Boolean},
        ),
    )
    con.execute(
        "CREATE OR REPLACE TEMP TABLE t_abstain AS SELECT k.trace_id, a.abstains AND k.prose AS abstains "
        "FROM t_split_keys AS k JOIN t_split_abstain AS a USING (split_id)"
    )


def store_skipped(con: duckdb.DuckDBPyConnection, run_id: str) -> None:
    """Add this slice's text that is no claim, per kind, to the run's count (run_skipped_text)."""
    con.execute("INSERT INTO run_skipped_text " + sql("skipped_text").strip().rstrip(";"), {"run_id": run_id})


def skipped_counts(con: duckdb.DuckDBPyConnection, run_id: str) -> dict[str, int]:
    """The run's text that is no claim, per kind (every kind of ``_policy.SKIP_KINDS`` that occurred)."""
    from ._policy import SKIP_KINDS

    rows = con.execute(
        "SELECT kind, sum(units) FROM run_skipped_text WHERE run_id = $r GROUP BY kind", {"r": run_id}
    ).fetchall()
    found = {str(k): int(n) for k, n in rows}
    return {k: found[k] for k in SKIP_KINDS if k in found}
