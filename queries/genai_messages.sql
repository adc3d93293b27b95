-- genai_messages.sql: the message attributes of the batch's GenAI inference spans, for reading them
-- into prompt and answer (analyzer/sources/genai.py).
-- Purpose: gen_ai.system_instructions, gen_ai.input.messages and gen_ai.output.messages come as a JSON
--   string (content on the span) or as a log record's structured value merged onto the span; which
--   text is the prompt and which the answer is read once per distinct triple. Spans that already
--   have both (the flattened gen_ai.prompt.N / gen_ai.completion.N forms) are not read again.
-- Grain: one row per distinct (system, input, output) of t_batch's GenAI inference spans.
-- Parameters: none. Reads: t_batch.
SELECT DISTINCT genai_system, genai_input, genai_output
FROM t_batch
WHERE genai_kind = 'inference' AND (answer IS NULL OR oi_prompt IS NULL)
