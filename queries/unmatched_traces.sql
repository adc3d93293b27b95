-- unmatched_traces.sql: coverage: the slice's traces that joined no gold case, and why.
-- Purpose: a trace no case answers is judged on the corpus basis, and the run says so
--   (unknown_case_id | question_not_in_gold | ambiguous, with the candidate cases).
-- Grain: one row per trace of the slice without a case. Parameters: $run_id.
-- Reads: t_traces (trace_id, case_id, unmatched_reason, candidates).
-- Writes: unmatched_traces (append)
SELECT $run_id AS run_id, trace_id, unmatched_reason AS reason, candidates
FROM t_traces
WHERE case_id IS NULL
