-- run_size.sql: how large the run is, read once before it starts.
-- Purpose: the traces a run classifies (those with a request span: how many slices it is cut
--   into), about how many distinct answers it splits (whether its text work needs every core),
--   and every trace it read (the runs row's traces_read).
-- Grain: one row. Parameters: $files (VARCHAR[] or NULL: only traces in t_scope).
-- Reads: spans, t_scope.
SELECT count(DISTINCT trace_id) FILTER (WHERE stage = 'request') AS classified,
       coalesce(approx_count_distinct(answer), 0) AS distinct_answers,
       count(DISTINCT trace_id) AS traces
FROM spans
WHERE $files IS NULL OR trace_id IN (SELECT trace_id FROM t_scope)
