-- report_basis.sql: claims per bucket on each basis a run judged on.
-- Purpose: what a report's figures stand on. A trace that joined a gold case is judged against it
--   (basis 'gold': bundles, expected claims, retrieval_miss and context_drop possible); every other
--   trace against the corpus and the trace alone (basis 'corpus': provenance, citations and meaning,
--   never retrieval_miss or context_drop). Every bucket appears for both bases, zero where nothing
--   landed; per-basis gates (`--fail-on 'grounding>0@corpus'`) read these counts.
-- Grain: one row per (basis, bucket of bucket_order), gold first, buckets in repair order.
-- Parameters: $run_id (VARCHAR).
WITH bases AS (
    SELECT * FROM (VALUES (1, 'gold'), (2, 'corpus')) AS b(n, basis)
),
counted AS (
    SELECT coalesce(basis, 'gold') AS basis, bucket, count(*) AS claims
    FROM claim_results WHERE run_id = $run_id
    GROUP BY ALL
)
SELECT s.basis, o.bucket, coalesce(c.claims, 0) AS claims
FROM bases AS s
CROSS JOIN bucket_order AS o
LEFT JOIN counted AS c ON c.basis = s.basis AND c.bucket = o.bucket
ORDER BY s.n, o.position
