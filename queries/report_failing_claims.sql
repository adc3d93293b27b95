-- report_failing_claims.sql: every claim of a run that is not ok, with the span to open.
-- Purpose: the rows a person drills into; each names the trace and the span where the
--   evidence chain broke, so a Phoenix link can be made from it.
-- Grain: one row per failing claim, most urgent bucket first.
-- Parameters: $run_id (VARCHAR), $basis (VARCHAR or NULL: 'gold' | 'corpus' rows only; NULL, every row).
SELECT c.case_id, c.gold_claim_id, c.claim_text, c.bucket, c.stage, c.reason, c.trace_id, c.span_id, c.flags,
       coalesce(c.basis, 'gold') AS basis
FROM claim_results AS c
JOIN bucket_order AS o USING (bucket)
WHERE c.run_id = $run_id AND c.bucket <> 'ok' AND ($basis IS NULL OR coalesce(c.basis, 'gold') = $basis)
ORDER BY o.position, c.case_id, c.gold_claim_id NULLS LAST, c.claim_text, c.trace_id
