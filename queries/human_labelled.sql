-- human_labelled.sql: the run's claims people labelled (analyze --labels), with their evidence.
-- Purpose: what `citeline calibrate --against-gold` measures a judge on: each labelled claim's
--   cited chunks and their gold text, the person's label, and, for a `citeline sample` sheet, the
--   judge's label and bucket in the run the sheet was drawn from.
-- Grain: one row per labelled claim of the run. Parameters: $run_id.
-- Reads: claim_results, t_human (trace_id, claim_key, label, sampled_run), t_gold_chunks (chunk_id, text).
-- Writes: human_labelled (append)
SELECT c.run_id, c.trace_id, c.claim_text, c.cited_chunks,
       list_transform(c.cited_chunks, lambda x: coalesce(m.texts[x], '')) AS evidence, h.label AS human_label,
       h.sampled_run, s.support_label AS judge_label, s.bucket AS judge_bucket
FROM claim_results AS c
JOIN t_human AS h ON h.trace_id = c.trace_id AND h.claim_key = coalesce(c.gold_claim_id, c.claim_text)
LEFT JOIN claim_results AS s ON s.run_id = h.sampled_run AND s.trace_id = h.trace_id
      AND coalesce(s.gold_claim_id, s.claim_text) = h.claim_key,
     (SELECT map_from_entries(list({'key': chunk_id, 'value': text})) AS texts FROM t_gold_chunks) AS m
WHERE c.run_id = $run_id AND c.claim_text IS NOT NULL
