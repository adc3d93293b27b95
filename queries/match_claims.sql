-- match_claims.sql: which generated claim answers which gold claim, per trace.
-- Purpose: deterministic matching. A gold claim takes, in this order of preference,
--   (1) the generated claim that cites one of its support or contradicting chunks, unless
--       the gold claim states numbers and that claim states none of them; then (2) a claim
--       citing nothing of it, before (3) one that cites another gold claim's evidence (and
--       none of this one's) without stating all of this claim's numbers: that one is about
--       the other claim. Among equals: the most lexically similar (word overlap that ignores
--       numbers, so "60 days" still meets the "30 days" claim it gets wrong), then the one
--       sharing more of the gold claim's numbers, then the first.
--   One generated claim may answer several gold claims, and a gold claim takes at most one.
--   Parallel sentences ("Section 0 items ... 11 days. Section 1 items ... 12 days [2].")
--   differ in word overlap by a filler word or two, which must not hand a gold claim to its
--   neighbour (3). A chunk that supports several gold claims says nothing about which one a
--   sentence citing it is about: "... 5 business days. A 15% fee applies [1]." must not take
--   the 5-day claim from the right, uncited sentence before it (1). A gold claim without
--   numbers keeps citing first (a right sentence citing the wrong chunk must still meet it:
--   attribution). A sentence cut into clauses is a candidate whole as well (gen_claims.sql):
--   a gold claim the clauses answer together takes the whole. A table row is one claim and
--   each of its cells a candidate too (joins names the row): a gold claim one cell states all
--   the numbers of takes the cell, one whose numbers no cell states alone takes the row (fit).
-- Grain: one row per (trace, gold claim) that found a match.
-- Parameters: $min_sim (DOUBLE), $min_shared_sim (DOUBLE, when a citation is shared).
-- Reads: t_gen_claims, t_traces, t_gold_claims,
--   t_sim (case_id, text, claim_id, sim, num_agree, gold_has_numbers: similarity.sql).
-- Writes: t_match
-- Columns: trace_id VARCHAR, case_id VARCHAR, claim_id VARCHAR, claim_idx BIGINT
WITH gold AS (  -- each gold claim with the evidence of its case's other gold claims (not its own)
    SELECT case_id, claim_id, evidence_ids,
           list_filter(list_distinct(flatten(list(evidence_ids) OVER (PARTITION BY case_id))),
                       lambda x: NOT list_contains(evidence_ids, x)) AS other_ids
    FROM t_gold_claims
),
candidates AS (
    SELECT g.trace_id, t.case_id, gc.claim_id, g.claim_idx, s.sim, s.num_agree,
           CASE WHEN len(g.joins) = 1 THEN g.joins[1] END AS row_idx,  -- a table cell: its row's claim
           any_in(g.cited, gc.evidence_ids) AS shares,
           s.gold_has_numbers, s.gold_has_numbers AND s.num_agree = 0 AS states_none,
           any_in(g.cited, gc.other_ids) AND s.gold_has_numbers AND s.num_agree < 1 AS about_other
    FROM t_gen_claims AS g
    JOIN t_traces AS t USING (trace_id)
    JOIN gold AS gc ON gc.case_id = t.case_id
    JOIN t_sim AS s ON s.case_id = t.case_id AND s.text = g.text AND s.claim_id = gc.claim_id
    WHERE g.factual
),
ranked AS (
    SELECT *, CASE WHEN shares AND NOT states_none THEN 2 WHEN about_other THEN 0 ELSE 1 END AS preference,
           -- a table cell: first when it states every number of the gold claim (the narrowest claim that
           -- answers it, before its row), last when it states fewer (a gold claim spanning cells is its
           -- row's, however many other columns dilute the row's word overlap); any other claim between
           CASE WHEN row_idx IS NULL OR NOT gold_has_numbers THEN 0 WHEN num_agree = 1 THEN 1 ELSE -1 END AS fit
    FROM candidates
    WHERE sim >= $min_sim OR (shares AND sim >= $min_shared_sim)
)
SELECT trace_id, case_id, claim_id,
       arg_max(claim_idx, {'preference': preference, 'fit': fit, 'sim': sim, 'numbers': num_agree,
                           'earlier': -claim_idx})
           AS claim_idx
FROM ranked
GROUP BY trace_id, case_id, claim_id
