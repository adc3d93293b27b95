-- missing_cases.sql: coverage: the gold cases no trace of the run answered.
-- Purpose: a case the app was never asked is named, not counted as passing. Corpus-basis rows
--   have no case (case_id NULL): they answer none, and never hide one (NOT IN over NULLs).
-- Grain: one row per unanswered case. Parameters: $run_id. Reads: t_gold_cases, case_results.
-- Writes: missing_cases (append)
SELECT $run_id AS run_id, case_id
FROM t_gold_cases
WHERE case_id NOT IN (SELECT case_id FROM case_results WHERE run_id = $run_id AND case_id IS NOT NULL)
