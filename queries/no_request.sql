-- no_request.sql: coverage: traces in scope that have no request span.
-- Purpose: such a trace was read but has nothing to join to a case; the run names it.
-- Grain: one row per such trace. Parameters: $run_id, $files (VARCHAR[] or NULL).
-- Reads: spans, t_scope.
-- Writes: unmatched_traces (append)
SELECT $run_id AS run_id, trace_id, 'no_request_span' AS reason, []::VARCHAR[] AS candidates
FROM spans
WHERE $files IS NULL OR trace_id IN (SELECT trace_id FROM t_scope)
GROUP BY trace_id
HAVING NOT coalesce(bool_or(stage = 'request'), false)
