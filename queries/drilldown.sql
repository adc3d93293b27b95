-- drilldown.sql: what the HTML report shows for each failing claim of a run.
-- Purpose: one section per failing claim: the question, the answer, the evidence chain step by
--   step, the gold support and the cited chunks (their gold text is in run_chunks), the
--   judge's label and rationale.
-- Grain: one row per failing claim; the same rows as report_failing_claims, keyed the same way.
-- Parameters: $run_id (VARCHAR).
WITH q AS (
    SELECT trace_id, any_value(question) AS question FROM spans WHERE stage = 'request' GROUP BY trace_id
),
a AS (  -- the answer the run read (runs stored before generation_span: any answer of the trace)
    SELECT trace_id, span_id, answer
    FROM spans WHERE stage = 'generation' AND answer IS NOT NULL
      AND trace_id IN (SELECT trace_id FROM claim_results WHERE run_id = $run_id AND bucket <> 'ok')
)
SELECT c.trace_id, c.case_id, c.gold_claim_id, c.claim_text, c.support_label, c.support_rationale, c.cited_chunks,
       c.evidence_needed, c.evidence_retrieved, c.evidence_in_context, c.evidence_cited,
       c.evidence_resolved, c.evidence_rendered,
       q.question,
       coalesce(ag.answer, aa.answer) AS answer,
       coalesce(s.chunk_ids, []) AS support_chunks
FROM claim_results AS c
LEFT JOIN q USING (trace_id)
LEFT JOIN a AS ag ON ag.trace_id = c.trace_id AND ag.span_id = c.generation_span
LEFT JOIN (SELECT trace_id, any_value(answer) AS answer FROM a GROUP BY trace_id) AS aa ON aa.trace_id = c.trace_id
LEFT JOIN run_support AS s ON s.run_id = c.run_id AND s.case_id = c.case_id
WHERE c.run_id = $run_id AND c.bucket <> 'ok'
