-- apply_prompt_context.sql: the context read off a generation's prompt, into t_traces.
-- Purpose: for a trace whose context no span traced, analyzer/sources/prompt_context.py read which
--   retrieved chunks the model was given, and under which labels, from the prompt of the
--   innermost LLM call that holds one (t_prompt_context). That call's span is the context
--   span (a drop shows there); when no citeline generation span exists it is also the
--   generation (its answer is the one read). A label map recorded on a citeline generation
--   span still wins. Nothing readable (no prompt recorded, no chunk text to look for) leaves
--   the context not observed: its claims are not_evaluable, and a marker is never called an
--   invalid citation because nobody saw what it meant.
-- Grain: one row per trace of t_traces (rewritten in place).
-- Parameters: none. Reads: t_traces, t_prompt_context (trace_id, span_id, answer, is_generation,
--   context, labels, error).
-- Writes: t_traces (rewrite)
SELECT t.* REPLACE (
    CASE WHEN p.is_generation THEN p.span_id ELSE t.generation_span END AS generation_span,
    CASE WHEN p.is_generation THEN p.answer ELSE t.answer END AS answer,
    CASE WHEN p.is_generation THEN 'prose' ELSE t.answer_format END AS answer_format,
    CASE WHEN p.is_generation THEN NULL ELSE t.abstained END AS abstained,
    CASE WHEN p.is_generation THEN NULL ELSE t.claim_text END AS claim_text,
    CASE WHEN p.is_generation THEN NULL ELSE t.evidence_claim END AS evidence_claim,
    CASE WHEN p.is_generation THEN NULL ELSE t.evidence_chunk END AS evidence_chunk,
    CASE WHEN p.is_generation THEN NULL ELSE t.evidence_quote END AS evidence_quote,
    coalesce(p.span_id, t.context_span) AS context_span,
    CASE WHEN p.trace_id IS NULL THEN t.context ELSE p.context END AS context,
    CASE WHEN p.trace_id IS NOT NULL AND (p.is_generation OR len(t.map_label) = 0) THEN p.labels
         ELSE t.map_label END AS map_label,
    CASE WHEN p.trace_id IS NOT NULL AND (p.is_generation OR len(t.map_label) = 0) THEN p.context
         ELSE t.map_chunk_id END AS map_chunk_id,
    CASE WHEN p.trace_id IS NOT NULL AND (p.is_generation OR len(t.map_label) = 0)
         THEN list_transform(p.context, lambda x: '') ELSE t.map_version END AS map_version,
    CASE WHEN t.unreadable_stage IS NULL AND p.error IS NOT NULL THEN 'context' ELSE t.unreadable_stage END
        AS unreadable_stage,
    CASE WHEN t.unreadable_stage IS NULL AND p.error IS NOT NULL THEN p.span_id ELSE t.unreadable_span END
        AS unreadable_span,
    CASE WHEN t.unreadable_stage IS NULL AND p.error IS NOT NULL THEN p.error ELSE t.unreadable_error END
        AS unreadable_error
)
FROM t_traces AS t
LEFT JOIN t_prompt_context AS p USING (trace_id)
