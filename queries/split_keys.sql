-- split_keys.sql: which policy each trace's prose answer is split by.
-- Purpose: an answer is split into claims once per (answer, policy): the policy names the
--   attachment unit (the gold case's, else the run's, else the gold file's), the kinds of text
--   that need no citation, and the shape of the label map the generation was given. Python made
--   one policy key per distinct (label map, case setting) (t_policy_of); this gives it to each trace,
--   and numbers the distinct (answer, policy) splits 0, 1, ...: the split's rows (t_answer_claims,
--   t_answer_skipped) join on that number, never on the answer's text.
-- Grain: one row per trace with an answer (prose: not a structured answer, whose claims come parsed).
-- Parameters: none. Reads: t_traces, t_gold_cases (case_id, attach), t_policy_of (map_label, attach, policy).
-- Writes: t_split_keys
-- Columns: trace_id VARCHAR, answer VARCHAR, policy VARCHAR, prose BOOLEAN, split_id BIGINT
SELECT t.trace_id, t.answer, p.policy, t.answer_format IS DISTINCT FROM 'structured' AS prose,
       dense_rank() OVER (ORDER BY t.answer, p.policy) - 1 AS split_id
FROM t_traces AS t
LEFT JOIN t_gold_cases AS g USING (case_id)
JOIN t_policy_of AS p ON p.map_label = t.map_label AND p.attach IS NOT DISTINCT FROM g.attach
WHERE t.answer IS NOT NULL
