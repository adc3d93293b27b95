-- run_problems.sql: the run's input problems (trace files, gold set, labels), kept with the run.
-- Grain: one row per problem. Parameters: $run_id, $seen_at (TIMESTAMP).
-- Reads: t_problems (source, place, field, message: made by the run from what it met).
-- Writes: input_problems (append)
SELECT $run_id AS run_id, source, place, field, message, $seen_at::TIMESTAMP AS seen_at FROM t_problems
