-- apply_genai.sql: GenAI inference spans get the prompt and answer their messages hold.
-- Purpose: analyzer/sources/genai.py read each distinct triple of message attributes (t_genai_read);
--   a span keeps what it already had (a flattened gen_ai.prompt.N / gen_ai.completion.N), and one
--   that still has no answer gets, as its adapter error, what it lacked and the setting that
--   captures it (run_traces.sql then makes its generation not_evaluable at that span).
-- Grain: updates t_batch rows of GenAI inference spans in place.
-- Parameters: none. Reads: t_genai_read (system, inputs, outputs, prompt, answer, error).
-- Writes: t_batch (update)
UPDATE t_batch AS b
SET oi_prompt = coalesce(b.oi_prompt, g.prompt),
    answer = coalesce(b.answer, g.answer),
    adapter_error = CASE WHEN coalesce(b.answer, g.answer) IS NULL THEN coalesce(b.adapter_error, g.error)
                         ELSE b.adapter_error END
FROM t_genai_read AS g
WHERE b.genai_kind = 'inference'
  AND g.system IS NOT DISTINCT FROM b.genai_system
  AND g.inputs IS NOT DISTINCT FROM b.genai_input
  AND g.outputs IS NOT DISTINCT FROM b.genai_output
