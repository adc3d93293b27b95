-- report_skipped_text.sql: the text of a run's answers that was no claim, per kind.
-- Purpose: nothing is dropped silently. A greeting, a transition, a question back to the
--   user, a statement about the sources, a heading, a table's header row, a list number, a
--   reference list, a sentence with nothing to check, a code block: each is counted where
--   the answer was split (analyzer/claims/policy.py names the kinds), never judged.
-- Grain: one row per kind that occurred in the run.
-- Parameters: $run_id (VARCHAR).
SELECT kind, sum(units)::BIGINT AS units
FROM run_skipped_text
WHERE run_id = $run_id
GROUP BY kind
ORDER BY kind
