-- report_buckets.sql: how many claims of a run landed in each failure bucket (unweighted).
-- Purpose: the headline of every report. Every bucket of the bucket table appears (ok
--   included), in repair order (most urgent first), with zero where nothing landed.
-- Grain: one row per bucket of bucket_order (analyzer/buckets.py).
-- Parameters: $run_id (VARCHAR), $basis (VARCHAR or NULL: 'gold' | 'corpus' rows only; NULL, every row).
WITH run_claims AS (
    SELECT bucket FROM claim_results WHERE run_id = $run_id AND ($basis IS NULL OR coalesce(basis, 'gold') = $basis)
),
total AS (
    SELECT count(*) AS n FROM run_claims
)
SELECT b.position,
       b.bucket,
       count(c.bucket) AS claims,
       CASE WHEN t.n = 0 THEN 0.0 ELSE round(count(c.bucket) / t.n, 4) END AS share
FROM bucket_order AS b
CROSS JOIN total AS t
LEFT JOIN run_claims AS c ON c.bucket = b.bucket
GROUP BY b.position, b.bucket, t.n
ORDER BY b.position
