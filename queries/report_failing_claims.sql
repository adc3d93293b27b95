-- report_failing_claims.sql: every claim of a run that is not ok, with the span to open.
-- Purpose: the rows a person drills into; each names the trace and the span where the
--   evidence chain broke, so a Phoenix link can be made from it.
-- Grain: one row per failing claim, most urgent bucket first.
-- Parameters: $run_id (VARCHAR).
SELECT case_id, gold_claim_id, claim_text, bucket, stage, reason, trace_id, span_id, flags
FROM claim_results
WHERE run_id = $run_id AND bucket <> 'ok'
ORDER BY CASE bucket
             WHEN 'access_violation' THEN 1 WHEN 'invalid_citation' THEN 2 WHEN 'freshness' THEN 3
             WHEN 'retrieval_miss' THEN 4 WHEN 'context_drop' THEN 5 WHEN 'grounding' THEN 6
             WHEN 'uncited' THEN 7 WHEN 'attribution' THEN 8 WHEN 'resolution' THEN 9
         END,
         case_id, gold_claim_id NULLS LAST, claim_text, trace_id
