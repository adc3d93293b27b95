-- json_answers.sql: the distinct answers of the slice that may be JSON (a structured answer
-- recorded as text: response_format, a tool call's arguments, an app's own JSON).
-- Grain: one row per distinct answer. Parameters: none. Reads: t_traces.
SELECT DISTINCT answer
FROM t_traces
WHERE answer IS NOT NULL AND answer_format IS DISTINCT FROM 'structured' AND regexp_matches(answer, '^\s*[\[{]')
