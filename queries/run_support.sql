-- run_support.sql: each gold case's support chunks, as the run read the gold set.
-- Purpose: reports and annotate name what a case needed without the gold file at hand.
-- Grain: one row per gold case with claims. Parameters: $run_id. Reads: t_gold_claims (case_id, bundles).
-- Writes: run_support (append)
SELECT $run_id AS run_id, case_id, list_sort(list_distinct(flatten(list(flatten(bundles))))) AS chunk_ids
FROM t_gold_claims
GROUP BY case_id
