-- drilldown.sql: what the HTML report shows for each failing claim of a run.
-- Purpose: one section per failing claim: the question, the answer, the evidence chain step by
--   step, the gold support and the cited chunks (their gold text is in run_chunks).
-- Grain: one row per failing claim; the same rows as report_failing_claims, keyed the same way.
-- Parameters: $run_id (VARCHAR).
WITH q AS (
    SELECT trace_id, any_value(question) AS question FROM spans WHERE stage = 'request' GROUP BY trace_id
),
a AS (
    SELECT trace_id, any_value(answer) AS answer
    FROM spans WHERE stage = 'generation' AND answer IS NOT NULL GROUP BY trace_id
)
SELECT c.trace_id, c.case_id, c.gold_claim_id, c.claim_text, c.support_label, c.cited_chunks,
       c.evidence_needed, c.evidence_retrieved, c.evidence_in_context, c.evidence_cited,
       c.evidence_resolved, c.evidence_rendered,
       q.question, a.answer, coalesce(s.chunk_ids, []) AS support_chunks
FROM claim_results AS c
LEFT JOIN q USING (trace_id)
LEFT JOIN a USING (trace_id)
LEFT JOIN run_support AS s ON s.run_id = c.run_id AND s.case_id = c.case_id
WHERE c.run_id = $run_id AND c.bucket <> 'ok'
