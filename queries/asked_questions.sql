-- asked_questions.sql: the distinct questions of the run's requests that name no case id.
-- Purpose: each is normalised once in Python (the gold set's own normaliser: t_question_norm),
--   so run_traces.sql joins a trace to its case by question without normalising per trace.
-- Grain: one row per distinct question. Parameters: $files (VARCHAR[] or NULL).
-- Reads: spans, t_scope.
SELECT DISTINCT question
FROM spans
WHERE stage = 'request' AND case_id IS NULL AND question IS NOT NULL
  AND ($files IS NULL OR trace_id IN (SELECT trace_id FROM t_scope))
