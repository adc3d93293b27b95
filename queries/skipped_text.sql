-- skipped_text.sql: how much text of a slice's answers is no claim, per kind.
-- Purpose: nothing is dropped silently. A greeting, a heading, a table's header row, a list
--   number, a reference list, a statement about the sources, a sentence with nothing to check
--   is no claim (analyzer/claims/policy.py names the kinds); each trace's answer counts its own.
-- Grain: one row per kind that occurred in the slice.
-- Parameters: $run_id (VARCHAR). Reads: t_split_keys (trace_id, split_id, prose),
--   t_answer_skipped (split, kind, units: made where the answer was split).
-- Writes: run_skipped_text (append)
SELECT $run_id AS run_id, s.kind, sum(s.units)::BIGINT AS units
FROM t_split_keys AS k
JOIN t_answer_skipped AS s ON s.split = k.split_id
WHERE k.prose
GROUP BY s.kind
