-- report_worst_cases.sql: the cases with the most failing claims in a run.
-- Purpose: where to look first. The worst bucket is the most urgent one among the
--   case's failing claims.
-- Grain: one row per case with at least one failing claim, worst first.
-- Parameters: $run_id (VARCHAR), $limit (INTEGER).
WITH failing AS (
    SELECT case_id, trace_id, bucket,
           CASE bucket
               WHEN 'access_violation' THEN 1 WHEN 'invalid_citation' THEN 2 WHEN 'freshness' THEN 3
               WHEN 'retrieval_miss' THEN 4 WHEN 'context_drop' THEN 5 WHEN 'grounding' THEN 6
               WHEN 'uncited' THEN 7 WHEN 'attribution' THEN 8 WHEN 'resolution' THEN 9
           END AS position
    FROM claim_results
    WHERE run_id = $run_id AND bucket <> 'ok'
)
SELECT case_id,
       count(*) AS failing_claims,
       count(DISTINCT trace_id) AS traces,
       arg_min(bucket, position) AS worst_bucket,
       list_sort(list_distinct(list(bucket))) AS buckets
FROM failing
GROUP BY case_id
ORDER BY failing_claims DESC, min(position), case_id
LIMIT $limit
