-- match_claims.sql: which generated claim answers which gold claim, per trace.
-- Purpose: deterministic matching. A gold claim takes the generated claim that
--   (1) cites one of its support or contradicting chunks, then (2) is lexically most
--   similar (word overlap that ignores numbers, so "60 days" still meets the "30 days"
--   claim it gets wrong), then (3) shares more of the gold claim's numbers, then
--   (4) comes first. One generated sentence may answer several gold claims.
--   Before (2): a sentence that cites another gold claim's evidence (and none of
--   this one's) and does not state all of this claim's numbers is about that other
--   claim; for this one it comes after every sentence that is not. Parallel
--   sentences ("Section 0 items ... 11 days. Section 1 items ... 12 days [2].")
--   differ in word overlap by a filler word or two, which must not hand a gold
--   claim to its neighbour. A gold claim without numbers keeps the plain order (a
--   right sentence citing the wrong chunk must still meet it: attribution).
-- Grain: one row per (trace, gold claim) that found a match.
-- Parameters: $min_sim (DOUBLE), $min_shared_sim (DOUBLE, when a citation is shared).
-- Reads: t_gen_claims, t_traces, t_gold_claims,
--   t_sim (case_id, text, claim_id, sim, num_agree, gold_has_numbers: similarity.sql).
WITH gold AS (  -- each gold claim with the evidence of its case's other gold claims (not its own)
    SELECT case_id, claim_id, evidence_ids,
           list_filter(list_distinct(flatten(list(evidence_ids) OVER (PARTITION BY case_id))),
                       lambda x: NOT list_contains(evidence_ids, x)) AS other_ids
    FROM t_gold_claims
),
candidates AS (
    SELECT g.trace_id, t.case_id, gc.claim_id, g.claim_idx, s.sim, s.num_agree,
           any_in(g.cited, gc.evidence_ids) AS shares,
           any_in(g.cited, gc.other_ids) AND s.gold_has_numbers AND s.num_agree < 1 AS about_other
    FROM t_gen_claims AS g
    JOIN t_traces AS t USING (trace_id)
    JOIN gold AS gc ON gc.case_id = t.case_id
    JOIN t_sim AS s ON s.case_id = t.case_id AND s.text = g.text AND s.claim_id = gc.claim_id
    WHERE g.factual
)
SELECT trace_id, case_id, claim_id,
       max_by(claim_idx, (CASE WHEN shares THEN 10 WHEN about_other THEN -10 ELSE 0 END)
                         + sim + num_agree * 1e-3 - claim_idx * 1e-6)
           AS claim_idx
FROM candidates
WHERE sim >= $min_sim OR (shares AND sim >= $min_shared_sim)
GROUP BY trace_id, case_id, claim_id
