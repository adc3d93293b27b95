-- span_parents.sql: the parent of every span of some traces, to tell a wrapper LLM span from the
-- call inside it (analyzer/sources/prompt_context.py).
-- Grain: one row per span. Parameters: $traces (VARCHAR[]). Reads: spans.
SELECT trace_id, span_id, parent_span_id FROM spans WHERE list_contains($traces, trace_id)
