-- classify.sql: every claim's flags, its one primary bucket, and where the chain broke.
-- Purpose: the classification. Rows are (trace, gold claim) -- plus one "(abstain)" row
--   per trace of an expect: abstain case -- and every factual generated claim that
--   matches no gold claim. The evidence chain is walked in order:
--   retrieved -> in context -> cited -> resolved -> rendered; the primary bucket is the
--   first flag in $bucket_order (most urgent repair first). A claim whose evidence chain
--   cannot be read (a stage span with an adapter error and no usable sibling, or a judgment
--   that is missing or not a known label) is not_evaluable: never the bucket of a
--   component that did nothing wrong, never ok.
-- Grain: one row per classified claim.
-- Parameters: $run_id (VARCHAR), $bucket_order (VARCHAR[]: the buckets most urgent first, from
--   BUCKETS in analyzer/_store.py), $labels (VARCHAR[]: the judge labels), $judge (VARCHAR: name@version).
-- Reads: t_traces, t_gold_claims, t_gold_chunks, t_gen_claims (with joins: gen_claims.sql), t_match,
--   t_judged_gold (case_id, claim_id, text, cited, quotes, label, rationale),
--   t_judged_cited (text, cited, quotes, label, rationale), t_abstain (trace_id, abstains),
--   (a judgment is keyed by the claim text, what it cites and what it quotes: two traces
--   saying the same thing with different quotes are judged apart),
--   t_human (trace_id, claim_key, label),
--   t_trace_drift (trace_id, chunk_id, served_hash, gold_hash: content_drift.sql),
--   t_restricted_alias (trace_id, chunk_id, gold_chunk_id, acl: restricted_by_content.sql).
WITH
-- 1. every chunk each stage exposed, in chain order
res_rows AS (
    SELECT trace_id, resolution_span,
           unnest(res_marker) AS marker, unnest(res_chunk_id) AS chunk_id,
           unnest(res_version) AS version, unnest(res_uri) AS uri
    FROM t_traces WHERE resolution_span IS NOT NULL
),
ren_raw AS (
    SELECT trace_id, render_span,
           unnest(ren_label) AS label, unnest(ren_uri) AS uri, unnest(ren_chunk_id) AS chunk_id
    FROM t_traces WHERE render_span IS NOT NULL
),
ren_rows AS (    -- rendered links, ids recovered from the uri where the corpus knows it
    SELECT r.trace_id, r.render_span, r.label, r.uri,
           coalesce(nullif(r.chunk_id, ''), c.chunk_id) AS chunk_id
    FROM ren_raw AS r
    LEFT JOIN t_gold_chunks AS c ON c.uri = r.uri AND c.uri <> ''
),
restricted AS (   -- chunks with an ACL; a trace that touched none needs no unnesting
    SELECT coalesce(list(chunk_id), []) AS ids FROM t_gold_chunks WHERE acl IS NOT NULL
),
touched AS (      -- ... by id, or by serving a restricted text under another id (t_restricted_alias)
    SELECT t.* FROM t_traces AS t, restricted AS r
    WHERE list_has_any(t.retrieved, r.ids) OR list_has_any(t.context, r.ids)
       OR t.trace_id IN (SELECT trace_id FROM t_restricted_alias)
),
exposure AS (
    SELECT trace_id, 1 AS stage_no, 'retrieval' AS stage, retrieval_span AS span_id, unnest(retrieved) AS chunk_id
    FROM touched
    UNION ALL
    SELECT trace_id, 2, 'context', context_span, unnest(context) FROM touched
    UNION ALL
    SELECT g.trace_id, 3, 'generation', t.generation_span, unnest(g.cited)
    FROM t_gen_claims AS g JOIN t_traces AS t USING (trace_id)
    UNION ALL
    SELECT trace_id, 5, 'render', render_span, chunk_id FROM ren_rows
),
exposed_acl AS (  -- each exposed chunk with its ACL: its gold entry's, or that of the restricted text it holds
    SELECT e.*, c.acl, c.chunk_id AS shown
    FROM exposure AS e JOIN t_gold_chunks AS c ON c.chunk_id = e.chunk_id AND c.acl IS NOT NULL
    UNION ALL
    SELECT e.*, a.acl, a.chunk_id || ' (the text of ' || a.gold_chunk_id || ')'
    FROM exposure AS e JOIN t_restricted_alias AS a ON a.trace_id = e.trace_id AND a.chunk_id = e.chunk_id
),
violations AS (  -- 2. access: anything outside the principal's ACL, at the first stage it reached.
    -- A request that names no principal cannot be checked: principal_unknown (not_evaluable)
    SELECT e.trace_id,
           min_by(e.stage, e.stage_no) AS stage,
           min_by(e.span_id, e.stage_no) AS span_id,
           list_sort(list_distinct(list(e.shown))) AS chunks,
           bool_or(t.principal_groups IS NULL) AS principal_unknown
    FROM exposed_acl AS e
    JOIN t_traces AS t USING (trace_id)
    WHERE t.principal_groups IS NULL OR NOT list_has_any(e.acl, t.principal_groups)
    GROUP BY e.trace_id
),
stale AS (       -- 3. freshness: cited chunks not in force at as_of
    SELECT g.trace_id, g.claim_idx,
           string_agg(c.chunk_id || ' (' || CASE
               WHEN c.status <> 'active' THEN c.status
               WHEN c.effective_from > t.as_of THEN 'not in force until ' || c.effective_from
               ELSE 'superseded on ' || c.effective_to END || ')', ', ' ORDER BY c.chunk_id) AS what
    FROM (SELECT trace_id, claim_idx, unnest(cited) AS chunk_id FROM t_gen_claims) AS g
    JOIN t_traces AS t USING (trace_id)
    JOIN t_gold_chunks AS c ON c.chunk_id = g.chunk_id
    WHERE c.status <> 'active' OR c.effective_from > t.as_of OR c.effective_to <= t.as_of
    GROUP BY g.trace_id, g.claim_idx
),
label_checks AS ( -- 9. resolution: what each marker meant vs what the app resolved and rendered
    SELECT g.trace_id, g.claim_idx, g.label,
           t.map_chunk_id[list_position(t.map_label, g.label)] AS meant_chunk,
           t.map_version[list_position(t.map_label, g.label)] AS meant_version,
           t.resolution_span, t.render_span,
           r.chunk_id AS res_chunk, r.version AS res_version, r.uri AS res_uri,
           rr.uri AS ren_uri, rr.chunk_id AS ren_chunk, rr.label AS ren_label,
           -- resolved elsewhere: no row for the marker, another chunk, or another version
           t.resolution_span IS NOT NULL AND (r.chunk_id IS NULL OR r.chunk_id <> meant_chunk
               OR (coalesce(meant_version, '') <> '' AND coalesce(r.version, '') <> ''
                   AND r.version <> meant_version)) AS res_bad,
           -- rendered elsewhere: no link for the label, another chunk, or another uri than resolved
           t.render_span IS NOT NULL AND (rr.label IS NULL OR rr.chunk_id IS DISTINCT FROM meant_chunk
               OR (r.uri IS NOT NULL AND rr.uri <> r.uri)) AS ren_bad
    FROM (SELECT trace_id, claim_idx, unnest(labels) AS label FROM t_gen_claims) AS g
    JOIN t_traces AS t USING (trace_id)
    LEFT JOIN res_rows AS r ON r.trace_id = g.trace_id AND r.marker = g.label
    LEFT JOIN ren_rows AS rr ON rr.trace_id = g.trace_id AND rr.label = g.label
    WHERE list_contains(t.map_label, g.label)
),
mis_resolved AS (
    SELECT trace_id, claim_idx,
           bool_or(res_bad) AS res_bad,
           bool_or(ren_bad) AS ren_bad,
           string_agg(CASE WHEN res_bad THEN '[' || label || '] meant ' || meant_chunk || ' but resolved to '
                                || coalesce(res_chunk || ' ' || coalesce(res_version, ''), 'nothing') END, '; ') AS res_what,
           string_agg(CASE WHEN ren_bad THEN '[' || label || '] meant ' || meant_chunk || ' but the page links '
                                || coalesce(ren_uri, 'nothing') END, '; ') AS ren_what
    FROM label_checks
    GROUP BY trace_id, claim_idx
),
drifted AS (     -- 3b. freshness too: the index served another text under a gold id and version
    SELECT trace_id, list(chunk_id) AS ids,
           string_agg(chunk_id || ' with content hash ' || served_hash || ' where the gold corpus has ' || gold_hash,
                      ', ' ORDER BY chunk_id) AS what
    FROM t_trace_drift
    GROUP BY trace_id
),
-- 4. the rows to classify
gold_rows AS (
    SELECT t.trace_id, t.case_id, gc.claim_id AS gold_claim_id, gc.bundles, m.claim_idx
    FROM t_traces AS t
    JOIN t_gold_claims AS gc USING (case_id)
    LEFT JOIN t_match AS m ON m.trace_id = t.trace_id AND m.claim_id = gc.claim_id
    UNION ALL
    SELECT t.trace_id, t.case_id, '(abstain)', []::VARCHAR[][], NULL
    FROM t_traces AS t WHERE t.expect = 'abstain'
),
answered AS (   -- generated claims some gold claim took: matched, or a clause of a matched whole sentence
    SELECT trace_id, claim_idx FROM t_match
    UNION
    SELECT w.trace_id, unnest(w.joins) FROM t_match AS m
    JOIN t_gen_claims AS w ON w.trace_id = m.trace_id AND w.claim_idx = m.claim_idx
    WHERE len(w.joins) > 0
),
unmatched_rows AS (  -- a sentence cut into clauses is claimed by its clauses, never as a whole
    SELECT g.trace_id, t.case_id, NULL::VARCHAR AS gold_claim_id, []::VARCHAR[][] AS bundles, g.claim_idx
    FROM t_gen_claims AS g
    JOIN t_traces AS t USING (trace_id)
    WHERE g.factual AND len(g.joins) = 0
      AND NOT EXISTS (SELECT 1 FROM answered AS m WHERE m.trace_id = g.trace_id AND m.claim_idx = g.claim_idx)
),
rows AS (
    SELECT * FROM gold_rows UNION ALL SELECT * FROM unmatched_rows
),
judged AS (
    SELECT r.*, t.expect, t.retrieved, t.context, t.as_of, t.started_at,
           t.request_span, t.retrieval_span, t.context_span, t.generation_span, t.resolution_span, t.render_span,
           t.unreadable_stage, t.unreadable_span, t.unreadable_error,
           coalesce(a.abstains, false) OR coalesce(t.abstained, false) AS abstains,
           g.text AS gen_text, coalesce(g.cited, []) AS cited, coalesce(g.invalid, []) AS invalid,
           coalesce(h.label, jg.label, jc.label) AS support_label,
           CASE WHEN h.label IS NOT NULL THEN 'human label' ELSE coalesce(jg.rationale, jc.rationale) END AS rationale,
           len(r.bundles) > 0 AS has_bundles,
           -- the chain, bundle by bundle: does some support bundle lie wholly in each stage?
           list_bool_or(list_transform(r.bundles, lambda b: all_in(b, t.retrieved))) IS TRUE AS bundle_retrieved,
           list_bool_or(list_transform(r.bundles, lambda b: all_in(b, t.context))) IS TRUE AS bundle_in_context,
           list_bool_or(list_transform(r.bundles, lambda b: all_in(b, g.cited))) IS TRUE
               AS bundle_cited
    FROM rows AS r
    JOIN t_traces AS t USING (trace_id)
    LEFT JOIN t_abstain AS a ON a.trace_id = r.trace_id
    LEFT JOIN t_gen_claims AS g ON g.trace_id = r.trace_id AND g.claim_idx = r.claim_idx
    LEFT JOIN t_judged_gold AS jg
           ON r.gold_claim_id IS NOT NULL AND jg.case_id = r.case_id AND jg.claim_id = r.gold_claim_id AND jg.text = g.text
          AND jg.cited = list_sort(g.cited) AND jg.quotes = g.quotes
    LEFT JOIN t_judged_cited AS jc
           ON r.gold_claim_id IS NULL AND jc.text = g.text
          AND jc.cited = list_sort(g.cited) AND jc.quotes = g.quotes
    LEFT JOIN t_human AS h
           ON h.trace_id = r.trace_id AND h.claim_key = coalesce(r.gold_claim_id, g.text)
),
-- 5. the flags, one column per bucket, in chain order
flagged AS (
    SELECT j.*,
           v.trace_id IS NOT NULL AND NOT v.principal_unknown AS f_access,
           coalesce(v.principal_unknown, false) AS f_who,
           dr.ids IS NOT NULL AND (any_in(j.cited, dr.ids) OR any_in(flatten(j.bundles), dr.ids)) AS f_drift,
           dr.what AS drift_what,
           -- a judgment this claim needs, and did not get in a known label
           ((j.gold_claim_id IS NOT NULL AND j.gold_claim_id <> '(abstain)' AND j.claim_idx IS NOT NULL)
                OR (j.gold_claim_id IS NULL AND len(j.cited) > 0))
               AND (j.support_label IS NULL OR NOT list_contains($labels, j.support_label)
                    OR j.support_label = 'not_applicable') AS no_judgment,
           -- (a label map read off an unobservable context says nothing about the markers)
           len(j.invalid) > 0 AND j.unreadable_stage IS DISTINCT FROM 'context' AS f_invalid,
           s.what IS NOT NULL OR f_drift AS f_fresh,
           j.has_bundles AND NOT j.bundle_retrieved AS f_miss,
           j.has_bundles AND j.bundle_retrieved AND NOT j.bundle_in_context AS f_drop,
           CASE
               WHEN j.gold_claim_id = '(abstain)' THEN NOT j.abstains
               WHEN j.gold_claim_id IS NOT NULL THEN j.claim_idx IS NULL
                    OR j.support_label IN ('contradicted', 'insufficient')
               ELSE len(j.cited) > 0 AND j.support_label IN ('contradicted', 'insufficient')
           END AS f_ground,
           CASE
               WHEN j.gold_claim_id = '(abstain)' THEN false
               WHEN j.gold_claim_id IS NOT NULL THEN j.claim_idx IS NOT NULL AND j.support_label = 'entailed'
                    AND len(j.cited) = 0
               ELSE len(j.cited) = 0
           END AS f_uncited,
           j.gold_claim_id IS NOT NULL AND j.has_bundles AND j.claim_idx IS NOT NULL AND j.support_label = 'entailed'
               AND len(j.cited) > 0
               AND NOT j.bundle_cited AS f_attr,
           coalesce(mr.res_bad, false) AS f_res,
           coalesce(mr.ren_bad, false) AS f_ren,
           v.stage AS access_stage, v.span_id AS access_span, v.chunks AS access_chunks,
           s.what AS stale_what, mr.res_what, mr.ren_what
    FROM judged AS j
    LEFT JOIN violations AS v USING (trace_id)
    LEFT JOIN stale AS s ON s.trace_id = j.trace_id AND s.claim_idx = j.claim_idx
    LEFT JOIN drifted AS dr ON dr.trace_id = j.trace_id
    LEFT JOIN mis_resolved AS mr ON mr.trace_id = j.trace_id AND mr.claim_idx = j.claim_idx
),
-- 6. not evaluable: a stage up to generation could not be read (everything after it is
--    unknown), the judgment is missing (a judge failure, an unknown label, not_applicable), or
--    resolution/render could not be read, when nothing
--    earlier already broke the chain
evaluable AS (
    SELECT f.*,
           -- (an unreadable context or generation leaves what the retrieval showed standing)
           -- (restricted chunks reached a request that names no principal: access cannot be decided)
           f.f_who
           OR coalesce(f.unreadable_stage = 'retrieval'
                    OR (f.unreadable_stage = 'context' AND NOT f_miss)
                    OR (f.unreadable_stage = 'generation' AND NOT (f_miss OR f_drop)), false)
           -- a missing judgment matters only when no earlier link, judged without it, already broke
           OR coalesce(f.no_judgment AND NOT (f_invalid OR f_fresh OR f_miss OR f_drop), false)
           OR coalesce(f.unreadable_stage IN ('resolution', 'render')
                       AND NOT (f_invalid OR f_fresh OR f_miss OR f_drop OR coalesce(f_ground, false)
                                OR coalesce(f_uncited, false) OR coalesce(f_attr, false)), false) AS f_noteval
    FROM flagged AS f
),
-- 7. every flag that is up; the first of them in repair order wins
named AS (
    SELECT e.*,
           list_filter([
               CASE WHEN f_access THEN 'access_violation' END,
               CASE WHEN f_noteval THEN 'not_evaluable' END,
               CASE WHEN f_invalid THEN 'invalid_citation' END,
               CASE WHEN f_fresh THEN 'freshness' END,
               CASE WHEN f_miss THEN 'retrieval_miss' END,
               CASE WHEN f_drop THEN 'context_drop' END,
               CASE WHEN f_ground THEN 'grounding' END,
               CASE WHEN f_uncited THEN 'uncited' END,
               CASE WHEN f_attr THEN 'attribution' END,
               CASE WHEN f_res OR f_ren THEN 'resolution' END
           ], lambda x: x IS NOT NULL) AS raised
    FROM evaluable AS e
),
bucketed AS (
    SELECT n.*,
           list_filter($bucket_order, lambda b: list_contains(n.raised, b)) AS in_order,
           coalesce(in_order[1], 'ok') AS bucket,
           in_order || CASE WHEN n.f_drift THEN ['content_drift'] ELSE [] END AS flags
    FROM named AS n
)
SELECT
    $run_id AS run_id,
    trace_id,
    case_id,
    gold_claim_id,
    gen_text AS claim_text,
    bucket,
    CASE bucket
        WHEN 'access_violation' THEN access_stage
        WHEN 'not_evaluable' THEN CASE WHEN f_who THEN 'request' WHEN no_judgment THEN 'generation'
                                       ELSE unreadable_stage END
        WHEN 'freshness' THEN 'retrieval'
        WHEN 'retrieval_miss' THEN 'retrieval'
        WHEN 'context_drop' THEN 'context'
        WHEN 'resolution' THEN CASE WHEN f_res THEN 'resolution' ELSE 'render' END
        WHEN 'ok' THEN NULL
        ELSE 'generation'
    END AS stage,
    CASE bucket
        WHEN 'access_violation' THEN access_span
        WHEN 'not_evaluable' THEN CASE WHEN f_who THEN request_span WHEN no_judgment THEN generation_span
                                       ELSE unreadable_span END
        WHEN 'freshness' THEN retrieval_span
        WHEN 'retrieval_miss' THEN retrieval_span
        WHEN 'context_drop' THEN context_span
        WHEN 'resolution' THEN CASE WHEN f_res THEN resolution_span ELSE render_span END
        WHEN 'ok' THEN NULL
        ELSE generation_span
    END AS span_id,
    flags,
    CASE bucket
        WHEN 'access_violation' THEN 'restricted ' || array_to_string(access_chunks, ', ') || ' reached ' || access_stage
        WHEN 'not_evaluable' THEN CASE
             WHEN f_who THEN 'restricted ' || array_to_string(access_chunks, ', ') || ' reached ' || access_stage
                  || ', and the request names no principal, so access cannot be checked: record '
                  || 'request(principal={"id": ..., "groups": [...]}) (an empty list of groups is a guest)'
             WHEN no_judgment AND support_label IS NULL THEN 'judge ' || $judge || ' gave no verdict for this claim'
             WHEN no_judgment AND support_label = 'not_applicable' THEN 'judge ' || $judge || ' could not decide: '
                  || coalesce(rationale, 'no reason given')
             WHEN no_judgment THEN 'judge ' || $judge || ' answered ''' || support_label || ''', not one of '
                  || array_to_string($labels, ', ')
             WHEN starts_with(coalesce(unreadable_error, ''), 'not observed: ')  -- zero-code traces
                  THEN 'the ' || unreadable_stage || ' stage is ' || unreadable_error
             ELSE 'the ' || unreadable_stage || ' span could not be read ('
                  || coalesce(unreadable_error, 'adapter error')
                  || '); fix its adapter (to_chunks=) so the chain can be judged' END
        WHEN 'invalid_citation' THEN 'cites ' || array_to_string(invalid, ', ') || ', which the model was not given'
        WHEN 'freshness' THEN CASE WHEN stale_what IS NOT NULL THEN 'cites ' || stale_what
             ELSE 'content drift: the index served ' || drift_what || ' (same id and version, other text)' END
        WHEN 'retrieval_miss' THEN 'no support bundle was fully retrieved (needs one of '
             || array_to_string(list_transform(bundles, lambda b: '[' || array_to_string(b, ' + ') || ']'), ' or ') || ')'
        WHEN 'context_drop' THEN 'support was retrieved but not all of it reached the model'
        WHEN 'grounding' THEN CASE
             WHEN gold_claim_id = '(abstain)' THEN 'answered where it should abstain'
             WHEN gold_claim_id IS NOT NULL AND claim_idx IS NULL THEN CASE WHEN abstains
                  THEN 'abstained although the evidence was in context' ELSE 'required claim left out' END
             ELSE support_label || ': ' || coalesce(rationale, '') END
        WHEN 'uncited' THEN 'factual claim without a citation'
        WHEN 'attribution' THEN 'right claim, but cites ' || array_to_string(list_sort(cited), ', ')
             || ', which is no support bundle'
        WHEN 'resolution' THEN coalesce(res_what, ren_what)
        ELSE CASE
             WHEN resolution_span IS NULL AND render_span IS NULL AND claim_idx IS NOT NULL AND len(cited) > 0
                 THEN 'supported and cited as the gold set says; resolution and render were not traced '
                      || '(add @resolution and @render to check the links the user got)'
             ELSE 'supported, cited and resolved as the gold set says' END
    END AS reason,
    support_label,
    list_sort(cited) AS cited_chunks,
    started_at AS trace_started_at,
    -- the evidence chain of this claim, for the stage funnel
    has_bundles AS evidence_needed,
    has_bundles AND bundle_retrieved AS evidence_retrieved,
    has_bundles AND bundle_in_context AS evidence_in_context,
    has_bundles AND bundle_cited AS evidence_cited,
    has_bundles AND bundle_cited AND NOT f_res
        AS evidence_resolved,
    has_bundles AND bundle_cited AND NOT f_res AND NOT f_ren AS evidence_rendered,
    -- citation counts, for the citation metrics
    len(cited) + len(invalid) AS n_citations,
    len(invalid) AS n_invalid,
    CASE WHEN gold_claim_id IS NULL THEN CASE WHEN support_label = 'entailed' THEN len(cited) ELSE 0 END
         ELSE len(list_filter(cited, lambda c: list_contains(flatten(bundles), c))) END AS n_aligned,
    expect,
    abstains AS abstained,
    rationale AS support_rationale,
    generation_span
FROM bucketed
