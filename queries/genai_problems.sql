-- genai_problems.sql: the batch's GenAI inference spans that give no answer, for the run's problems.
-- Purpose: an LLM span no decoder could read (its content was not captured) is named with what it
--   lacked and the setting that captures it (its adapter error, apply_genai.sql), never silently
--   left out; one entry per file and reason, with the first span and a count.
-- Grain: one row per (source file, reason). Parameters: none. Reads: t_batch.
SELECT source_file,
       arg_min(trace_id, (trace_id, span_id)) AS trace_id,
       arg_min(span_id, (trace_id, span_id)) AS span_id,
       count(DISTINCT (trace_id, span_id)) AS spans,
       adapter_error
FROM t_batch
WHERE genai_kind = 'inference' AND answer IS NULL AND adapter_error IS NOT NULL
GROUP BY source_file, adapter_error
ORDER BY source_file, adapter_error
