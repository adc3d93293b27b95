-- prompt_generations.sql: every generation span of the traces whose context no span traced.
-- Purpose: with no context assembly span (citeline's) and no reranker span (OpenInference's),
--   what reached the model is read off a generation span's prompt (analyzer/sources/prompt_context.py):
--   the innermost LLM call that was given a retrieved chunk, whichever source recorded it. Each
--   candidate comes with its source, its parent (to tell a wrapper span from the call inside it),
--   its prompt and its answer.
-- Grain: one row per generation span of such a trace.
-- Parameters: none. Reads: t_traces, spans.
SELECT s.trace_id, s.span_id, s.parent_span_id, s.schema_version IS NOT NULL AS citeline,
       s.end_ns, s.oi_prompt AS prompt, s.answer, t.generation_span = s.span_id AS picked
FROM t_traces AS t
JOIN spans AS s ON s.trace_id = t.trace_id AND s.stage = 'generation'
WHERE t.context_span IS NULL AND t.generation_span IS NOT NULL
  -- a context span that traced the step but could not be read is no trace without one: its claims stay
  -- not_evaluable at that span, whatever a prompt recorded later says
  AND t.unreadable_stage IS DISTINCT FROM 'context'
ORDER BY s.trace_id, s.end_ns, s.span_id
