-- feedback_cases.sql: each user report of a run with what a minimized regression case needs.
-- Purpose: `citeline gold draft --from-feedback` (analyzer/drafting/feedback.py): the seed's incident
--   record per report: the trace, its question and case id, the answer, the claims the report is
--   about (flag_feedback.sql flagged them) with the chunks each cited and their version and text.
-- Grain: one row per (report, claim it is about). Parameters: $run_id.
-- Reads: run_feedback, claim_results, spans, run_chunks.
WITH requests AS (
    SELECT trace_id, min(question) AS question, min(case_id) AS asked_case FROM spans
    WHERE stage = 'request' AND trace_id IN (SELECT trace_id FROM run_feedback WHERE run_id = $run_id)
    GROUP BY trace_id
),
chunks AS (
    SELECT map_from_entries(list({'key': chunk_id, 'value': {'text': text, 'version': version}})) AS m
    FROM (SELECT chunk_id, any_value(text) AS text, any_value(version) AS version
          FROM run_chunks WHERE run_id = $run_id GROUP BY chunk_id)
)
SELECT f.trace_id, f.text AS reported, f.claim AS reported_claim, f.chunk_id AS reported_chunk,
       r.question, r.asked_case, a.answer, c.claim_text, c.cited_chunks,
       list_transform(c.cited_chunks, lambda x: k.m[x].version) AS versions,
       list_transform(c.cited_chunks, lambda x: k.m[x].text) AS texts
FROM run_feedback AS f
JOIN claim_results AS c ON c.run_id = f.run_id AND c.trace_id = f.trace_id AND list_contains(c.flags, 'user_feedback')
     AND CASE WHEN f.claim <> '' THEN contains(lower(regexp_replace(c.claim_text, '\s+', ' ', 'g')),
                                               lower(regexp_replace(trim(f.claim), '\s+', ' ', 'g')))
              WHEN f.chunk_id <> '' THEN list_contains(c.cited_chunks, f.chunk_id)
              ELSE true END
LEFT JOIN requests AS r ON r.trace_id = f.trace_id
LEFT JOIN spans AS a ON a.trace_id = c.trace_id AND a.span_id = c.generation_span
CROSS JOIN chunks AS k
WHERE f.run_id = $run_id
ORDER BY f.trace_id, f.text, c.claim_text
