-- genai_problems.sql: an ingest's GenAI inference spans that give no answer, for the run's problems.
-- Purpose: an LLM span no decoder could read (its content was not captured) is named with what it
--   lacked and the setting that captures it (its adapter error, apply_genai.sql), never silently
--   left out; one entry per file and reason, with the first span and a count.
-- Grain: one row per (source file, reason). Parameters: none. Reads: t_genai_unread (genai.note: each
--   batch's spans with no answer; genai.problems drops those a later log record completed).
SELECT source_file,
       arg_min(trace_id, (trace_id, span_id)) AS trace_id,
       arg_min(span_id, (trace_id, span_id)) AS span_id,
       count(DISTINCT (trace_id, span_id)) AS spans,
       adapter_error
FROM t_genai_unread
GROUP BY source_file, adapter_error
ORDER BY source_file, adapter_error
