-- gen_claims.sql: one row per generated claim of a trace, with what it cites.
-- Purpose: turn markers into chunk ids through the label map recorded at generation
--   time (never through positions). Prose answers come split by Python (t_answer_claims,
--   one split per answer and policy: t_split_keys says which split each trace reads);
--   structured answers carry claims and chunk ids already. A label the
--   map does not hold is an invalid citation (the splitter only reads brackets that fit
--   the map's shape, so "[2026]" before a map of eight labels is text, not a label).
--   joins: a sentence cut into clauses also comes whole, naming its clauses' claim_idx (two
--   or more), and a table row's cells come beside the row, each naming the row's (one);
--   matching may take either, and neither is a claim row of its own (classify.sql).
-- Grain: one row per (trace, claim_idx).
-- Parameters: none. Reads: t_traces, t_split_keys (trace_id, split_id),
--   t_answer_claims (split, claim_idx, text, labels, factual, joins).
-- Writes: t_gen_claims
-- Columns: trace_id VARCHAR, claim_idx BIGINT, text VARCHAR, labels VARCHAR[], factual BOOLEAN,
--   joins BIGINT[], cited VARCHAR[], invalid VARCHAR[], quotes VARCHAR[]
WITH prose AS (
    SELECT t.trace_id, a.claim_idx, a.text, a.labels, a.factual, a.joins,
           list_transform(a.labels, lambda l: t.map_chunk_id[list_position(t.map_label, l)]) AS mapped,
           list_filter(a.labels, lambda l: NOT list_contains(t.map_label, l)) AS invalid,
           []::VARCHAR[] AS quotes
    FROM t_traces AS t
    JOIN t_split_keys AS k USING (trace_id)
    JOIN t_answer_claims AS a ON a.split = k.split_id
    WHERE t.answer_format IS DISTINCT FROM 'structured'
),
structured AS (
    SELECT t.trace_id, i - 1 AS claim_idx, t.claim_text[i] AS text,
           []::VARCHAR[] AS labels, true AS factual, []::BIGINT[] AS joins,
           list_filter(list_transform(list_zip(t.evidence_claim, t.evidence_chunk),
                                      lambda e: CASE WHEN e[1] = i - 1 THEN e[2] END),
                       lambda c: c IS NOT NULL) AS mapped,
           list_filter(list_transform(list_zip(t.evidence_claim, t.evidence_chunk),
                                      lambda e: CASE WHEN e[1] = i - 1 AND NOT list_contains(t.context, e[2]) THEN e[2] END),
                       lambda c: c IS NOT NULL) AS invalid,
           list_filter(list_transform(list_zip(t.evidence_claim, t.evidence_quote),
                                      lambda e: CASE WHEN e[1] = i - 1 AND e[2] <> '' THEN e[2] END),
                       lambda c: c IS NOT NULL) AS quotes
    FROM t_traces AS t, range(1, len(t.claim_text) + 1) AS r(i)
    WHERE t.answer_format = 'structured'
)
SELECT trace_id, claim_idx, text, labels, factual, joins,
       list_distinct(list_filter(mapped, lambda c: c IS NOT NULL AND NOT list_contains(invalid, c))) AS cited,
       invalid, quotes
FROM prose
UNION ALL
SELECT trace_id, claim_idx, text, labels, factual, joins,
       list_distinct(list_filter(mapped, lambda c: NOT list_contains(invalid, c))) AS cited,
       invalid, quotes
FROM structured
