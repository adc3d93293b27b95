-- report_funnel.sql: where gold evidence is lost along the chain, for one run.
-- Purpose: the stage funnel. Over the gold claims that need evidence (they have
--   support bundles), how many had a whole bundle retrieved, then in context, then
--   cited by the matching generated claim, then resolved to the chunk the marker
--   meant, then rendered as a link to it. Each step implies the ones before
--   it except that a claim can be cited from context only if it reached context.
-- Grain: one row per step (always 5 rows), in chain order.
-- Parameters: $run_id (VARCHAR).
WITH needed AS (
    SELECT * FROM claim_results WHERE run_id = $run_id AND evidence_needed
),
counts AS (
    SELECT count(*) AS needed,
           count(*) FILTER (WHERE evidence_retrieved) AS retrieved,
           count(*) FILTER (WHERE evidence_retrieved AND evidence_in_context) AS in_context,
           count(*) FILTER (WHERE evidence_in_context AND evidence_cited) AS cited,
           count(*) FILTER (WHERE evidence_in_context AND evidence_resolved) AS resolved,
           count(*) FILTER (WHERE evidence_in_context AND evidence_rendered) AS rendered
    FROM needed
),
steps AS (
    SELECT 1 AS position, 'retrieved' AS step, retrieved AS claims, needed AS previous, needed FROM counts
    UNION ALL SELECT 2, 'in_context', in_context, retrieved, needed FROM counts
    UNION ALL SELECT 3, 'cited', cited, in_context, needed FROM counts
    UNION ALL SELECT 4, 'resolved', resolved, cited, needed FROM counts
    UNION ALL SELECT 5, 'rendered', rendered, resolved, needed FROM counts
)
SELECT position, step, claims, needed,
       CASE WHEN needed = 0 THEN 0.0 ELSE round(claims / needed, 4) END AS rate,
       CASE WHEN previous = 0 THEN 0.0 ELSE round(claims / previous, 4) END AS step_rate
FROM steps
ORDER BY position
