-- abstain.sql: whether each trace's prose answer abstains.
-- Purpose: the splitter decided it once per split (t_split_abstain); a structured answer says
--   itself whether it abstained, so the split's phrases count only for a prose answer.
-- Grain: one row per trace with an answer. Parameters: none.
-- Reads: t_split_keys (trace_id, split_id, prose), t_split_abstain (split_id, abstains).
-- Writes: t_abstain
-- Columns: trace_id VARCHAR, abstains BOOLEAN
SELECT k.trace_id, a.abstains AND k.prose AS abstains
FROM t_split_keys AS k
JOIN t_split_abstain AS a USING (split_id)
