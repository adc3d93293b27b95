-- report_worst_cases.sql: the cases with the most failing claims in a run.
-- Purpose: where to look first. The worst bucket is the most urgent one among the
--   case's failing claims.
-- Grain: one row per case with at least one failing claim, worst first.
-- Parameters: $run_id (VARCHAR), $limit (INTEGER), $basis (VARCHAR or NULL: 'gold' | 'corpus' rows only;
--   NULL, every row). Corpus-basis rows have no case: they count under case NULL.
WITH failing AS (
    SELECT c.case_id, c.trace_id, c.bucket, o.position
    FROM claim_results AS c
    JOIN bucket_order AS o USING (bucket)
    WHERE c.run_id = $run_id AND c.bucket <> 'ok' AND ($basis IS NULL OR coalesce(c.basis, 'gold') = $basis)
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
