-- run_feedback.sql: the users' reports on the answers of a run's traces.
-- Purpose: a `citeline.feedback` span event (request.feedback(...) in the app, or the app's own
--   span event) says what a user reported ("this source does not say that"), about which claim
--   and which cited chunk when the user said. Each report of each trace the run classified is
--   kept with the run: claims it is about are flagged (flag_feedback.sql) and `citeline gold
--   draft --from-feedback` turns each into a draft case.
-- Grain: one row per feedback event of a trace of the run.
-- Parameters: $run_id. Reads: spans, claim_results.
-- Writes: run_feedback (append)
SELECT $run_id AS run_id, trace_id, span_id, text, claim, chunk_id
FROM (
    SELECT trace_id, span_id, unnest(feedback_text) AS text, unnest(feedback_claim) AS claim,
           unnest(feedback_chunk) AS chunk_id
    FROM spans
    WHERE feedback_text IS NOT NULL
      AND trace_id IN (SELECT DISTINCT trace_id FROM claim_results WHERE run_id = $run_id)
)
