-- sample_claims.sql: every claim of a run a person could label, with what a reviewer needs.
-- Purpose: the population `citeline sample` draws from (analyzer/labels/sample.py). A row holds the
--   question, the claim and each cited passage's text and version, and, for drawing strata
--   only (never written to the sheet), its bucket, basis and the judge's label. Rows without
--   claim text (an abstain case's row, a gold claim the answer left out) have nothing to label.
-- Grain: one row per claim row of the run with claim text.
-- Parameters: $run_id. Reads: claim_results, spans, run_chunks.
WITH claims AS (
    SELECT c.trace_id, coalesce(c.gold_claim_id, c.claim_text) AS claim, c.claim_text, c.bucket,
           coalesce(c.basis, 'gold') AS basis,
           c.support_label AS judge_label, c.cited_chunks
    FROM claim_results AS c
    WHERE c.run_id = $run_id AND c.claim_text IS NOT NULL AND c.gold_claim_id IS DISTINCT FROM '(abstain)'
),
questions AS (
    SELECT trace_id, min(question) AS question FROM spans
    WHERE stage = 'request' AND trace_id IN (SELECT trace_id FROM claims)
    GROUP BY trace_id
),
texts AS (
    SELECT map_from_entries(list({'key': chunk_id, 'value': {'text': text, 'version': version}})) AS m
    FROM (SELECT chunk_id, any_value(text) AS text, any_value(version) AS version
          FROM run_chunks WHERE run_id = $run_id GROUP BY chunk_id)
)
SELECT c.trace_id, c.claim, c.claim_text, c.bucket, c.basis, c.judge_label, q.question,
       coalesce(c.cited_chunks, []) AS cited_chunks,
       list_transform(coalesce(c.cited_chunks, []), lambda x: t.m[x].version) AS cited_versions,
       list_transform(coalesce(c.cited_chunks, []), lambda x: t.m[x].text) AS cited_text
FROM claims AS c
CROSS JOIN texts AS t
LEFT JOIN questions AS q USING (trace_id)
ORDER BY c.trace_id, c.claim
