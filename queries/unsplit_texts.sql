-- unsplit_texts.sql: the texts matching compares whose word and number sets no splitter made.
-- Purpose: the splitting workers make each split claim's sets (t_text_sets); a structured
--   answer's claims and the gold claims get theirs in the run's process (t_more_sets).
-- Grain: one row per distinct text. Parameters: none.
-- Reads: t_gen_claims (text, factual), t_text_sets (text), t_gold_claims (text).
SELECT DISTINCT text FROM t_gen_claims WHERE factual AND text NOT IN (SELECT text FROM t_text_sets)
UNION
SELECT DISTINCT text FROM t_gold_claims
