"""Are two runs' classifications identical, row for row? (EXCEPT ALL both ways.)

    python bench/same_buckets.py STORE_A STORE_B     # the latest run of each

Used before and after every speed change on the benchmark store: a faster
analyzer that moves one claim to another bucket is not faster, it is wrong.
"""

from __future__ import annotations

import sys

import duckdb

COLUMNS = (
    "trace_id, case_id, gold_claim_id, claim_text, bucket, stage, span_id, flags, reason, support_label, "
    "list_sort(cited_chunks) AS cited, evidence_needed, evidence_retrieved, evidence_in_context, evidence_cited, "
    "evidence_resolved, evidence_rendered, n_citations, n_invalid, n_aligned, expect, abstained"
)


def main() -> None:
    a, b = sys.argv[1:3]
    con = duckdb.connect()
    con.execute(f"ATTACH '{a}' AS a (READ_ONLY)")
    con.execute(f"ATTACH '{b}' AS b (READ_ONLY)")
    for side in ("a", "b"):
        con.execute(
            f"CREATE TEMP TABLE r_{side} AS SELECT {COLUMNS} FROM {side}.claim_results "
            f"WHERE run_id = (SELECT max(run_id) FROM {side}.runs)"
        )
    n_a, n_b = (con.execute(f"SELECT count(*) FROM r_{s}").fetchall()[0][0] for s in "ab")
    only_a = con.execute("SELECT count(*) FROM (SELECT * FROM r_a EXCEPT ALL SELECT * FROM r_b)").fetchall()[0][0]
    only_b = con.execute("SELECT count(*) FROM (SELECT * FROM r_b EXCEPT ALL SELECT * FROM r_a)").fetchall()[0][0]
    print(f"rows: {n_a:,} vs {n_b:,}; only in A: {only_a:,}; only in B: {only_b:,}")
    if only_a or only_b:
        for row in con.execute("SELECT * FROM r_a EXCEPT ALL SELECT * FROM r_b LIMIT 5").fetchall():
            print("A:", row)
        for row in con.execute("SELECT * FROM r_b EXCEPT ALL SELECT * FROM r_a LIMIT 5").fetchall():
            print("B:", row)
        sys.exit(1)


if __name__ == "__main__":
    main()
