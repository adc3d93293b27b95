-- apply_json_answers.sql: JSON answers become the structured generations they are.
-- Purpose: analyzer/sources/structured.py read each JSON answer (t_json_answers): its claims and the id
--   each evidence item names, or prose inside JSON, or the keys it saw when it matches no shape.
--   A claims answer is from here on a structured answer, as if @generation had returned the
--   object: an evidence id that is a label of the map in force ('1', '[1]', 'S1') is the chunk
--   that label meant, any other id is taken as a chunk id (gen_claims.sql calls one that was not
--   in context an invalid citation). Prose inside JSON is the answer text. An unknown shape
--   leaves the generation not readable: its claims are not_evaluable, never prose claims.
-- Grain: one row per trace of t_traces (rewritten in place).
-- Parameters: none. Reads: t_traces, t_json_answers (answer, prose, claims, ev_claim, refs,
--   norm_refs, quotes, abstained, error).
-- Writes: t_traces (rewrite)
WITH j AS (
    SELECT *, prose IS NULL AND error IS NULL AS is_claims FROM t_json_answers
)
SELECT t.* REPLACE (
    CASE WHEN j.prose IS NOT NULL THEN j.prose ELSE t.answer END AS answer,
    CASE WHEN j.is_claims THEN 'structured' ELSE t.answer_format END AS answer_format,
    coalesce(j.abstained, t.abstained) AS abstained,
    CASE WHEN j.is_claims THEN j.claims ELSE t.claim_text END AS claim_text,
    CASE WHEN j.is_claims THEN j.ev_claim ELSE t.evidence_claim END AS evidence_claim,
    CASE WHEN j.is_claims THEN list_transform(list_zip(j.refs, j.norm_refs), lambda r: coalesce(
             t.map_chunk_id[list_position(t.map_label, r[1])],
             t.map_chunk_id[list_position(t.map_label, r[2])],
             r[1])) ELSE t.evidence_chunk END AS evidence_chunk,
    CASE WHEN j.is_claims THEN j.quotes ELSE t.evidence_quote END AS evidence_quote,
    CASE WHEN j.error IS NOT NULL AND t.unreadable_stage IS NULL THEN 'generation' ELSE t.unreadable_stage END
        AS unreadable_stage,
    CASE WHEN j.error IS NOT NULL AND t.unreadable_stage IS NULL THEN t.generation_span ELSE t.unreadable_span END
        AS unreadable_span,
    CASE WHEN j.error IS NOT NULL AND t.unreadable_stage IS NULL THEN j.error ELSE t.unreadable_error END
        AS unreadable_error
)
FROM t_traces AS t
LEFT JOIN j ON j.answer = t.answer
