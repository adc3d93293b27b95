-- classify.sql: every claim's flags, its one primary bucket, and where the chain broke.
-- Purpose: the classification. Rows are (trace, gold claim) -- plus one "(abstain)" row
--   per trace of an expect: abstain case -- and every factual generated claim that
--   matches no gold claim. A trace that joined no gold case (case_id NULL) is judged on the
--   corpus basis: its factual claims against what they cite and, where that does not
--   support them, the other chunks of its context (attribution when one does, grounding
--   when none does: never retrieval_miss or context_drop, which need a gold case), plus one
--   "(answer)" row when it makes no factual claim, so its trace-wide checks count. Every
--   row says its basis ('gold' | 'corpus'). The evidence chain is walked in order:
--   retrieved -> in context -> cited -> resolved -> rendered; the primary bucket is the
--   first flag in repair order (most urgent repair first). A claim whose evidence chain
--   cannot be read (a stage span with an adapter error and no usable sibling, or a judgment
--   that is missing or not a known label) is not_evaluable: never the bucket of a
--   component that did nothing wrong, never ok.
-- Grain: one row per classified claim.
-- Parameters: $run_id (VARCHAR), $labels (VARCHAR[]: the judge labels), $judge (VARCHAR: name@version).
-- Reads: bucket_order (bucket, position, flag), bucket_reasons (bucket, variant, stage, template):
--   the bucket table (analyzer/buckets.py); t_traces, t_gold_claims, t_gold_chunks,
--   t_gen_claims (with joins: gen_claims.sql), t_match,
--   t_judged_gold (case_id, claim_id, text, cited, quotes, label, rationale),
--   t_judged_cited (text, cited, quotes, label, rationale), t_abstain (trace_id, abstains),
--   t_judged_context (text, cited, others, label, rationale, supporting, joint, named: corpus basis, the rest
--   of the context; joint: only what it cites and the supporting chunks together; named: a report's source),
--   t_untrusted_action (text, cited, quotes, action, low: a call to action resting only on sources rated
--   below primary), t_source_conflicts (trace_id, claim_idx, sources: a report another source contradicts),
--   (a judgment is keyed by the claim text, what it cites and what it quotes: two traces
--   saying the same thing with different quotes are judged apart),
--   t_human (trace_id, claim_key, label),
--   t_trace_drift (trace_id, chunk_id, served_hash, gold_hash: content_drift.sql),
--   t_restricted_alias (trace_id, chunk_id, gold_chunk_id, acl: restricted_by_content.sql),
--   t_recorded_acl (trace_id, chunk_id, acl: recorded_acl.sql),
--   t_invented (trace_id, claim_idx, invented, untrusted_links, link_sources: invented_locators.sql), t_shown (trace_id, render_span, chunk_id,
--   what: render_shown.sql).
-- Writes: claim_results (append)
WITH
-- 1. every chunk each stage exposed, in chain order
restricted AS (   -- chunks with an ACL; a trace that touched none needs no unnesting
    SELECT coalesce(list(chunk_id), []) AS ids FROM t_gold_chunks WHERE acl IS NOT NULL
),
touched AS (      -- ... by id, by serving a restricted text under another id (t_restricted_alias), or
    -- chunks the app's index recorded an ACL for (t_recorded_acl)
    SELECT t.* FROM t_traces AS t, restricted AS r
    WHERE list_has_any(t.retrieved, r.ids) OR list_has_any(t.context, r.ids)
       OR t.trace_id IN (SELECT trace_id FROM t_restricted_alias)
       OR t.trace_id IN (SELECT trace_id FROM t_recorded_acl)
),
exposure AS (     -- (what: for the page, what it showed of the chunk: its title, preview, link)
    SELECT trace_id, 1 AS stage_no, 'retrieval' AS stage, retrieval_span AS span_id, unnest(retrieved) AS chunk_id,
           NULL::VARCHAR[] AS what
    FROM touched
    UNION ALL
    SELECT trace_id, 2, 'context', context_span, unnest(context), NULL FROM touched
    UNION ALL
    SELECT g.trace_id, 3, 'generation', t.generation_span, unnest(g.cited), NULL
    FROM t_gen_claims AS g JOIN t_traces AS t USING (trace_id)
    UNION ALL
    SELECT trace_id, 5, 'render', render_span, chunk_id, what FROM t_shown  -- render_shown.sql
),
exposed_acl AS (  -- each exposed chunk with its ACL: its gold entry's, that of the restricted text it holds,
    -- or the one the app's index recorded with it, from the context on (the index returned the chunk with
    -- its ACL for the app to trim by; it leaks when it goes further)
    SELECT e.*, c.acl, c.chunk_id AS shown
    FROM exposure AS e JOIN t_gold_chunks AS c ON c.chunk_id = e.chunk_id AND c.acl IS NOT NULL
    UNION ALL
    SELECT e.*, a.acl, a.chunk_id || ' (the text of ' || a.gold_chunk_id || ')'
    FROM exposure AS e JOIN t_restricted_alias AS a ON a.trace_id = e.trace_id AND a.chunk_id = e.chunk_id
    UNION ALL
    SELECT e.*, a.acl, e.chunk_id
    FROM exposure AS e JOIN t_recorded_acl AS a ON a.trace_id = e.trace_id AND a.chunk_id = e.chunk_id
    WHERE e.stage_no >= 2
),
violating AS (   -- 2. access: anything outside the principal's ACL, each at the first stage it reached
    SELECT e.trace_id, e.shown,
           min(e.stage_no) AS first_no, min_by(e.stage, e.stage_no) AS stage, min_by(e.span_id, e.stage_no) AS span_id,
           list_sort(list_distinct(flatten(list(coalesce(e.what, []))))) AS what,
           bool_or(t.principal_groups IS NULL) AS principal_unknown
    FROM exposed_acl AS e
    JOIN t_traces AS t USING (trace_id)
    WHERE t.principal_groups IS NULL OR NOT list_has_any(e.acl, t.principal_groups)
    GROUP BY e.trace_id, e.shown
),
violations AS (  -- ... and the trace at the first stage anything reached; a chunk only the page showed
    -- names what it showed. A request that recorded no groups is entitled to nothing restricted (fail
    -- closed): a violation like any other, its reason saying the groups were not recorded (principal_unknown)
    SELECT trace_id,
           min_by(stage, first_no) AS stage,
           min_by(span_id, first_no) AS span_id,
           list_sort(list(CASE WHEN first_no = 5 THEN shown || ' (its ' || array_to_string(what, ', ') || ' shown)'
                               ELSE shown END)) AS chunks,
           bool_or(principal_unknown) AS principal_unknown
    FROM violating
    GROUP BY trace_id
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
marks AS (      -- 9. resolution: what each marker meant, and where its resolution rows and rendered links are in
    -- the trace's own lists (every one: a marker resolved twice is checked twice; none: one row of NULLs). Found
    -- by position, not by joining every trace's unnested lists on the label (a third of this statement at 100k)
    SELECT g.trace_id, g.claim_idx, g.label, g.label_no,
           t.map_chunk_id[list_position(t.map_label, g.label)] AS meant_chunk,
           t.map_version[list_position(t.map_label, g.label)] AS meant_version,
           t.resolution_span, t.render_span, t.res_chunk_id AS res_chunks, t.res_version AS res_versions,
           t.res_uri AS res_uris, t.ren_label AS ren_labels, t.ren_uri AS ren_uris, t.ren_chunk_id AS ren_chunks,
           unnest(CASE WHEN t.resolution_span IS NULL THEN [NULL::BIGINT]
                       ELSE coalesce(nullif(list_filter(range(1, len(t.res_marker) + 1), lambda i: t.res_marker[i] = g.label),
                                            []), [NULL::BIGINT]) END) AS ri,
           CASE WHEN t.render_span IS NULL THEN [NULL::BIGINT]
                ELSE coalesce(nullif(list_filter(range(1, len(t.ren_label) + 1), lambda i: t.ren_label[i] = g.label), []),
                              [NULL::BIGINT]) END AS wis
    FROM (SELECT trace_id, claim_idx, unnest(labels) AS label, unnest(range(1, len(labels) + 1)) AS label_no
          FROM t_gen_claims) AS g
    JOIN t_traces AS t USING (trace_id)
    WHERE list_contains(t.map_label, g.label)
),
links AS (
    SELECT m.* EXCLUDE (wis), unnest(m.wis) AS wi FROM marks AS m
),
label_checks AS ( -- what the app resolved and rendered for each; a link's chunk id recovered from its uri where
    -- the corpus knows it
    SELECT l.trace_id, l.claim_idx, l.label, l.label_no, l.ri, l.wi, l.meant_chunk, l.meant_version, l.resolution_span,
           l.render_span,
           l.res_chunks[l.ri] AS res_chunk, l.res_versions[l.ri] AS res_version, l.res_uris[l.ri] AS res_uri,
           l.ren_uris[l.wi] AS ren_uri, coalesce(nullif(l.ren_chunks[l.wi], ''), c.chunk_id) AS ren_chunk,
           l.ren_labels[l.wi] AS ren_label,
           -- resolved elsewhere: no row for the marker, another chunk, or another version
           l.resolution_span IS NOT NULL AND (res_chunk IS NULL OR res_chunk <> l.meant_chunk
               OR (coalesce(l.meant_version, '') <> '' AND coalesce(res_version, '') <> ''
                   AND res_version <> l.meant_version)) AS res_bad,
           -- rendered elsewhere: no link for the label, another chunk, or another uri than resolved
           l.render_span IS NOT NULL AND (ren_label IS NULL OR ren_chunk IS DISTINCT FROM l.meant_chunk
               OR (coalesce(res_uri, '') <> '' AND ren_uri <> res_uri)) AS ren_bad  -- '' is a uri not recorded
    FROM links AS l
    LEFT JOIN t_gold_chunks AS c ON c.uri = l.ren_uris[l.wi] AND c.uri <> ''
),
mis_resolved AS ( -- (the messages in the claim's order of its markers: the same reason on every run)
    SELECT trace_id, claim_idx,
           bool_or(res_bad) AS res_bad,
           bool_or(ren_bad) AS ren_bad,
           -- (only the bad rows are sorted: ordering every row cost 0.9 s more of this statement's 3.1 s at 100k)
           string_agg('[' || label || '] meant ' || meant_chunk || ' but resolved to '
                          || coalesce(res_chunk || ' ' || coalesce(res_version, ''), 'nothing'), '; '
                      ORDER BY label_no, ri, wi) FILTER (WHERE res_bad) AS res_what,
           string_agg('[' || label || '] meant ' || meant_chunk || ' but the page links ' || coalesce(ren_uri, 'nothing'),
                      '; ' ORDER BY label_no, ri, wi) FILTER (WHERE ren_bad) AS ren_what
    FROM label_checks
    GROUP BY trace_id, claim_idx
),
rated AS (       -- 3c. source quality: the authority of each cited chunk the gold corpus rates
    SELECT g.trace_id, g.claim_idx,
           map_from_entries(list({'key': c.chunk_id, 'value': c.authority_rank})) AS rank_of,
           list_sort(list(c.chunk_id) FILTER (WHERE c.untrusted)) AS untrusted
    FROM (SELECT DISTINCT trace_id, claim_idx, chunk_id
          FROM (SELECT trace_id, claim_idx, unnest(cited) AS chunk_id FROM t_gen_claims)) AS g
    JOIN t_gold_chunks AS c ON c.chunk_id = g.chunk_id AND c.authority_rank IS NOT NULL
    GROUP BY g.trace_id, g.claim_idx
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
answered AS (   -- generated claims some gold claim took: matched, a clause of a matched whole sentence, or a
                -- table row every cell of which some gold claim took (a cell names its row, a whole its clauses)
    SELECT trace_id, claim_idx FROM t_match
    UNION
    SELECT w.trace_id, unnest(w.joins) FROM t_match AS m
    JOIN t_gen_claims AS w ON w.trace_id = m.trace_id AND w.claim_idx = m.claim_idx
    WHERE len(w.joins) > 1
    UNION
    SELECT c.trace_id, c.joins[1] FROM t_gen_claims AS c
    LEFT JOIN (SELECT DISTINCT trace_id, claim_idx FROM t_match) AS m USING (trace_id, claim_idx)
    WHERE len(c.joins) = 1 AND c.factual
    GROUP BY c.trace_id, c.joins[1]
    HAVING bool_and(m.claim_idx IS NOT NULL)
),
unmatched_rows AS (  -- a sentence cut into clauses is claimed by its clauses, never as a whole; a row not by its cells
    SELECT g.trace_id, t.case_id, NULL::VARCHAR AS gold_claim_id, []::VARCHAR[][] AS bundles, g.claim_idx
    FROM t_gen_claims AS g
    JOIN t_traces AS t USING (trace_id)
    WHERE g.factual AND len(g.joins) = 0
      AND NOT EXISTS (SELECT 1 FROM answered AS m WHERE m.trace_id = g.trace_id AND m.claim_idx = g.claim_idx)
),
answer_rows AS (  -- corpus basis: a trace with no factual claim still gets its trace-wide checks (access, stages)
    SELECT t.trace_id, NULL::VARCHAR AS case_id, '(answer)' AS gold_claim_id, []::VARCHAR[][] AS bundles,
           NULL::BIGINT AS claim_idx
    FROM t_traces AS t
    WHERE t.case_id IS NULL AND NOT EXISTS (SELECT 1 FROM unmatched_rows AS u WHERE u.trace_id = t.trace_id)
      -- ... when it shows a request at all: a stage span, or a stage that failed. A trace no stage of which
      -- was traced (a framework building its index, a health check) stays in coverage and has no row
      AND (t.retrieval_span IS NOT NULL OR t.context_span IS NOT NULL OR t.generation_span IS NOT NULL
           OR t.resolution_span IS NOT NULL OR t.render_span IS NOT NULL
           OR NOT starts_with(coalesce(t.unreadable_error, 'not observed: '), 'not observed: '))
),
rows AS (
    SELECT * FROM gold_rows UNION ALL SELECT * FROM unmatched_rows UNION ALL SELECT * FROM answer_rows
),
context_support AS (  -- corpus basis: does the rest of the context support a claim its citation does not?
    SELECT g.trace_id, g.claim_idx, j.supporting, j.joint, j.named,
           -- the judge could not decide on it: it might have supported the claim, so nothing is blamed
           j.label IS NULL OR NOT list_contains($labels, j.label) OR j.label = 'not_applicable' AS undecided,
           j.rationale AS undecided_rationale
    FROM (SELECT * FROM t_gen_claims WHERE text IN (SELECT text FROM t_judged_context)) AS g
    JOIN t_traces AS t USING (trace_id)
    JOIN t_judged_context AS j
      ON j.text = g.text AND j.cited = list_sort(g.cited)
     AND j.others = list_sort(list_filter(t.context, lambda c: NOT list_contains(g.cited, c)))
    WHERE t.case_id IS NULL
),
judged AS (
    SELECT r.*, CASE WHEN t.case_id IS NULL THEN 'corpus' ELSE 'gold' END AS basis,
           t.expect, t.require_rank, t.retrieved, t.context, t.as_of, t.started_at,
           t.request_span, t.retrieval_span, t.context_span, t.generation_span, t.resolution_span, t.render_span,
           t.unreadable_stage, t.unreadable_span, t.unreadable_error, t.retrieval_observed,
           coalesce(a.abstains, false) OR coalesce(t.abstained, false) AS abstains,
           g.text AS gen_text, coalesce(g.cited, []) AS cited, coalesce(g.invalid, []) AS invalid,
           coalesce(h.label, jg.label, jc.label) AS support_label,
           CASE WHEN h.label IS NOT NULL THEN 'human label' ELSE coalesce(jg.rationale, jc.rationale) END AS rationale,
           ua.action AS action, ua.low AS low_sources,
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
    LEFT JOIN t_untrusted_action AS ua
           ON r.gold_claim_id IS NULL AND ua.text = g.text AND ua.cited = list_sort(g.cited) AND ua.quotes = g.quotes
    LEFT JOIN t_human AS h
           ON h.trace_id = r.trace_id AND h.claim_key = coalesce(r.gold_claim_id, g.text)
),
-- 5. the flags, one column per bucket, in chain order (which bucket each raises: bucket_order.flag).
--    On the corpus basis (no gold case: no bundles, no expectation) a claim is judged against what it
--    cites and, when that does not support it, against the other chunks of its context
flagged AS (
    SELECT j.*,
           coalesce(cs.supporting, []) AS ctx_supporting,
           len(ctx_supporting) > 0 AS ctx_supported,
           NOT ctx_supported AND coalesce(cs.undecided, false) AS ctx_undecided,
           cs.undecided_rationale AS ctx_rationale,
           coalesce(cs.joint, false) AS ctx_joint,
           coalesce(cs.named, []) AS ctx_named,
           -- corpus basis: the claim needs the context's judgment (its citation does not support it, or it has none)
           j.basis = 'corpus' AND j.claim_idx IS NOT NULL
               AND ((len(j.cited) = 0 AND len(j.invalid) = 0)
                    OR coalesce(j.support_label IN ('contradicted', 'insufficient'), false)) AS needs_context,
           v.trace_id IS NOT NULL AS is_restricted,
           coalesce(v.principal_unknown, false) AS principal_unknown,
           dr.ids IS NOT NULL AND (any_in(j.cited, dr.ids) OR any_in(flatten(j.bundles), dr.ids)) AS is_drift,
           dr.what AS drift_what,
           -- a judgment this claim needs, and did not get in a known label
           (((j.gold_claim_id IS NOT NULL AND j.gold_claim_id <> '(abstain)' AND j.claim_idx IS NOT NULL)
                OR (j.gold_claim_id IS NULL AND len(j.cited) > 0))
               AND (j.support_label IS NULL OR NOT list_contains($labels, j.support_label)
                    OR j.support_label = 'not_applicable'))
           OR (needs_context AND ctx_undecided) AS no_judgment,
           -- (a label map read off an unobservable context says nothing about the markers)
           len(j.invalid) > 0 AND j.unreadable_stage IS DISTINCT FROM 'context' AS is_unknown_label,
           -- a source the gold corpus marks untrusted (a forum post, a poisoned snippet) is never to be cited
           coalesce(len(ra.untrusted), 0) > 0 AS cites_untrusted,
           -- a URL, section, page or title the claim names that no supplied source has, or a URL only
           -- untrusted sources give (invented_locators.sql)
           coalesce(len(iv.invented), 0) > 0 AS names_invented,
           coalesce(len(iv.untrusted_links), 0) > 0 AS links_untrusted,
           is_unknown_label OR cites_untrusted OR names_invented OR links_untrusted AS is_miscited,
           -- the claim's support (what it cites of its bundles; unmatched: what it cites) is all rated
           -- below the least authority its case requires (a chunk not rated meets any requirement)
           coalesce(j.require_rank IS NOT NULL AND j.support_label = 'entailed'
               AND len(list_filter(j.cited, lambda c: j.gold_claim_id IS NULL
                                                      OR list_contains(flatten(j.bundles), c))) > 0
               AND list_bool_and(list_transform(
                       list_filter(j.cited, lambda c: j.gold_claim_id IS NULL OR list_contains(flatten(j.bundles), c)),
                       lambda c: coalesce(ra.rank_of[c], 0) > j.require_rank)), false) AS is_low_authority,
           s.what IS NOT NULL OR is_drift AS is_stale,
           -- a call to action (a link, a credential request, an instruction) its citation supports only by
           -- sources the gold corpus rates below primary: seed 004's poisoned snippet (t_untrusted_action)
           coalesce(j.action IS NOT NULL AND j.support_label = 'entailed', false) AS is_untrusted_action,
           j.has_bundles AND NOT j.bundle_retrieved AND j.retrieval_observed AS is_unretrieved,
           j.has_bundles AND j.bundle_retrieved AND NOT j.bundle_in_context AND j.retrieval_observed AS is_dropped,
           -- no retrieval traced and the support is not in the context: missed or dropped, nobody can tell
           j.has_bundles AND NOT j.bundle_in_context AND NOT j.retrieval_observed AS unseen,
           coalesce(CASE
               WHEN j.basis = 'corpus' THEN needs_context AND NOT ctx_supported AND NOT ctx_undecided
               WHEN j.gold_claim_id = '(abstain)' THEN NOT j.abstains
               WHEN j.gold_claim_id IS NOT NULL THEN j.claim_idx IS NULL
                    OR j.support_label IN ('contradicted', 'insufficient')
               ELSE len(j.cited) > 0 AND j.support_label IN ('contradicted', 'insufficient')
           END, false) OR is_untrusted_action AS is_unsupported,
           coalesce(CASE
               WHEN j.basis = 'corpus' THEN j.claim_idx IS NOT NULL AND len(j.cited) = 0 AND ctx_supported
               WHEN j.gold_claim_id = '(abstain)' THEN false
               WHEN j.gold_claim_id IS NOT NULL THEN j.claim_idx IS NOT NULL AND j.support_label = 'entailed'
                    AND len(j.cited) = 0
               ELSE len(j.cited) = 0
           END, false) AS is_unmarked,
           coalesce(CASE
               WHEN j.basis = 'corpus' THEN len(j.cited) > 0 AND needs_context AND ctx_supported
               ELSE j.gold_claim_id IS NOT NULL AND j.has_bundles AND j.claim_idx IS NOT NULL
                    AND j.support_label = 'entailed' AND len(j.cited) > 0 AND NOT j.bundle_cited
           END, false) AS is_misattributed,
           coalesce(mr.res_bad, false) AS res_bad,
           coalesce(mr.ren_bad, false) AS ren_bad,
           res_bad OR ren_bad AS is_misresolved,
           v.stage AS access_stage, v.chunks AS access_chunks,
           s.what AS stale_what, mr.res_what, mr.ren_what, ra.untrusted AS untrusted_cited,
           iv.invented, iv.untrusted_links, iv.link_sources, sc.sources AS conflict_sources
    FROM judged AS j
    LEFT JOIN violations AS v USING (trace_id)
    LEFT JOIN stale AS s ON s.trace_id = j.trace_id AND s.claim_idx = j.claim_idx
    LEFT JOIN rated AS ra ON ra.trace_id = j.trace_id AND ra.claim_idx = j.claim_idx
    LEFT JOIN t_invented AS iv ON iv.trace_id = j.trace_id AND iv.claim_idx = j.claim_idx
    LEFT JOIN drifted AS dr ON dr.trace_id = j.trace_id
    LEFT JOIN mis_resolved AS mr ON mr.trace_id = j.trace_id AND mr.claim_idx = j.claim_idx
    LEFT JOIN context_support AS cs ON cs.trace_id = j.trace_id AND cs.claim_idx = j.claim_idx
    LEFT JOIN t_source_conflicts AS sc ON sc.trace_id = j.trace_id AND sc.claim_idx = j.claim_idx
),
-- 6. not evaluable: a stage up to generation could not be read (everything after it is
--    unknown), the judgment is missing (a judge failure, an unknown label, not_applicable), or
--    resolution/render could not be read, when nothing
--    earlier already broke the chain
evaluable AS (
    SELECT f.*,
           -- (an unreadable context or generation leaves what the retrieval showed standing)
           f.unseen
           OR coalesce(f.unreadable_stage = 'retrieval'
                    OR (f.unreadable_stage = 'context' AND NOT is_unretrieved)
                    OR (f.unreadable_stage = 'generation' AND NOT (is_unretrieved OR is_dropped)), false)
           -- a missing judgment matters only when no earlier link, judged without it, already broke
           OR coalesce(f.no_judgment AND NOT (is_miscited OR is_stale OR is_unretrieved OR is_dropped), false)
           OR coalesce(f.unreadable_stage IN ('resolution', 'render')
                       AND NOT (is_miscited OR is_stale OR is_unretrieved OR is_dropped OR is_unsupported
                                OR is_unmarked OR is_misattributed), false) AS is_unobservable
    FROM flagged AS f
),
-- 7. every raised flag with the reason it gives, in any order: the bucket table (bucket_order,
--    bucket_reasons: analyzer/buckets.py) says which bucket a flag raises, the repair order, the
--    stage each reason blames and its words. The last entry (flag '') is always there: the bucket of
--    a claim nothing else flagged. (An entry is made only where its flag is up.)
raised AS (
    SELECT e.*, list_filter([
        CASE WHEN is_restricted THEN {'flag': 'is_restricted',
                                      'why': CASE WHEN principal_unknown THEN 'unrecorded' ELSE 'reached' END} END,
        CASE WHEN is_unobservable THEN {'flag': 'is_unobservable', 'why': CASE
            WHEN unseen THEN 'unseen'
            WHEN no_judgment AND needs_context AND ctx_undecided THEN 'undecided'
            WHEN no_judgment AND support_label IS NULL THEN 'no_verdict'
            WHEN no_judgment AND support_label = 'not_applicable' THEN 'undecided'
            WHEN no_judgment THEN 'unknown_label'
            WHEN starts_with(coalesce(unreadable_error, ''), 'not observed: ')  -- a stage nobody traced
                  OR starts_with(coalesce(unreadable_error, ''), 'not readable: ')  -- a JSON answer of no known shape
                  THEN 'not_observed'
            ELSE 'unreadable' END} END,
        CASE WHEN is_miscited THEN {'flag': 'is_miscited', 'why': CASE
            WHEN is_unknown_label THEN 'cites'
            WHEN cites_untrusted THEN 'untrusted'
            WHEN names_invented THEN 'invented'
            ELSE 'untrusted_link' END} END,
        CASE WHEN is_stale THEN {'flag': 'is_stale', 'why': CASE WHEN stale_what IS NOT NULL THEN 'stale' ELSE 'drift' END} END,
        CASE WHEN is_unretrieved THEN {'flag': 'is_unretrieved', 'why': 'missed'} END,
        CASE WHEN is_dropped THEN {'flag': 'is_dropped', 'why': 'dropped'} END,
        CASE WHEN is_unsupported THEN {'flag': 'is_unsupported', 'why': CASE
            WHEN is_untrusted_action THEN 'untrusted_action'
            WHEN basis = 'corpus' AND len(ctx_named) > 0 THEN 'corpus_reported'
            WHEN basis = 'corpus' THEN CASE WHEN len(cited) = 0 THEN 'corpus_uncited' ELSE 'corpus_judged' END
            WHEN gold_claim_id = '(abstain)' THEN 'answered'
            WHEN gold_claim_id IS NOT NULL AND claim_idx IS NULL THEN CASE WHEN abstains THEN 'abstained' ELSE 'left_out' END
            ELSE 'judged' END} END,
        CASE WHEN is_unmarked THEN {'flag': 'is_unmarked',
                                    'why': CASE WHEN basis = 'corpus' THEN 'corpus_no_marker' ELSE 'no_marker' END} END,
        CASE WHEN is_misattributed THEN {'flag': 'is_misattributed',
                                         'why': CASE WHEN basis <> 'corpus' THEN 'elsewhere'
                                                     WHEN ctx_joint THEN 'corpus_joint' ELSE 'corpus_elsewhere' END} END,
        CASE WHEN is_misresolved THEN {'flag': 'is_misresolved', 'why': CASE WHEN res_bad THEN 'resolved' ELSE 'rendered' END} END,
        {'flag': '', 'why': CASE
            WHEN basis = 'corpus' AND claim_idx IS NULL THEN 'corpus_no_claim'
            WHEN resolution_span IS NULL AND render_span IS NULL AND claim_idx IS NOT NULL AND len(cited) > 0
                THEN CASE WHEN basis = 'corpus' THEN 'corpus_untraced' ELSE 'untraced' END
            WHEN basis = 'corpus' THEN 'corpus_checked'
            ELSE 'checked' END}
    ], lambda v: v IS NOT NULL) AS raised
    FROM evaluable AS e
),
-- 8. the raised flags in repair order: the first is the claim's bucket; its reason's stage, span and words
buckets AS (
    SELECT map_from_entries(list({'key': flag, 'value': {'position': position, 'bucket': bucket}})) AS of_flag
    FROM bucket_order
),
reasons AS (     -- each reason's words cut at its {details} once: literal parts, and the detail after each (joined
                 -- by bucket and variant: a map of them looked up per claim cost 6% of this statement)
    SELECT bucket, variant, {'stage': stage, 'parts': regexp_split_to_array(template, '\{\w+\}'),
                             'details': regexp_extract_all(template, '\{(\w+)\}', 1)} AS why
    FROM bucket_reasons
),
ordered AS (
    SELECT r.*,
           list_sort(list_transform(r.raised, lambda v: {'position': b.of_flag[v.flag].position, 'flag': v.flag,
                                                         'bucket': b.of_flag[v.flag].bucket, 'why': v.why})) AS in_order
    FROM raised AS r, buckets AS b
),
bucketed AS (
    SELECT r.*,
           r.in_order[1].bucket AS bucket,
           x.why AS why,
           CASE why['stage'] WHEN 'first_reached' THEN access_stage WHEN 'unreadable' THEN unreadable_stage
                ELSE why['stage'] END AS stage,
           list_transform(list_filter(in_order, lambda v: v.flag <> ''), lambda v: v.bucket)
               || CASE WHEN r.is_drift THEN ['content_drift'] ELSE [] END
               || CASE WHEN r.is_low_authority THEN ['low_authority'] ELSE [] END
               || CASE WHEN r.is_untrusted_action THEN ['untrusted_action'] ELSE [] END
               || CASE WHEN r.conflict_sources IS NOT NULL THEN ['source_conflict'] ELSE [] END AS flags

    FROM ordered AS r
    LEFT JOIN reasons AS x ON x.bucket = r.in_order[1].bucket AND x.variant = r.in_order[1].why
)
SELECT
    $run_id AS run_id,
    basis,
    trace_id,
    case_id,
    gold_claim_id,
    gen_text AS claim_text,
    bucket,
    stage,
    CASE WHEN why.stage = 'unreadable' THEN unreadable_span
         ELSE CASE stage WHEN 'request' THEN request_span
                         WHEN 'retrieval' THEN coalesce(retrieval_span, request_span)  -- (untraced: the root)
                         WHEN 'context' THEN context_span WHEN 'generation' THEN generation_span
                         WHEN 'resolution' THEN resolution_span WHEN 'render' THEN render_span END
    END AS span_id,
    flags,
    -- a reason's words with each {detail} they name, computed only when named (a map of every detail, made for
    -- each claim whose reason has any, cost 5% of this statement)
    CASE WHEN len(why.details) = 0 THEN why.parts[1]  -- words without details: most reasons, every ok
         ELSE array_to_string(list_transform(range(1, len(why.parts) + 1), lambda i: why.parts[i] || coalesce(
                 CASE why.details[i]
                     WHEN 'chunks' THEN array_to_string(access_chunks, ', ')
                     WHEN 'reached' THEN access_stage
                     WHEN 'judge' THEN $judge
                     WHEN 'label' THEN support_label
                     WHEN 'labels' THEN array_to_string($labels, ', ')
                     WHEN 'rationale' THEN coalesce(rationale, '')
                     WHEN 'given_rationale' THEN coalesce(CASE WHEN needs_context AND ctx_undecided THEN ctx_rationale END,
                                                          rationale, 'no reason given')
                     WHEN 'supporting' THEN array_to_string(ctx_supporting, ', ')
                     WHEN 'unreadable' THEN unreadable_stage
                     WHEN 'error' THEN coalesce(unreadable_error, 'adapter error')
                     WHEN 'invalid' THEN array_to_string(invalid, ', ')
                     WHEN 'untrusted' THEN array_to_string(untrusted_cited, ', ')
                     WHEN 'invented' THEN array_to_string(invented, ', ')
                     WHEN 'links' THEN array_to_string(untrusted_links, ', ')
                     WHEN 'link_sources' THEN array_to_string(link_sources, ', ')
                     WHEN 'stale' THEN stale_what
                     WHEN 'drift' THEN drift_what
                     WHEN 'bundles' THEN array_to_string(list_transform(bundles,
                                                                        lambda b: '[' || array_to_string(b, ' + ') || ']'), ' or ')
                     WHEN 'cited' THEN array_to_string(list_sort(cited), ', ')
                     WHEN 'resolved' THEN res_what
                     WHEN 'rendered' THEN ren_what
                     WHEN 'action' THEN action
                     WHEN 'low' THEN array_to_string(low_sources, ', ')
                     WHEN 'named' THEN array_to_string(ctx_named, ', ') END, '')), '')
    END AS reason,
    support_label,
    list_sort(cited) AS cited_chunks,
    started_at AS trace_started_at,
    -- the evidence chain of this claim, for the stage funnel
    has_bundles AS evidence_needed,
    has_bundles AND bundle_retrieved AS evidence_retrieved,
    has_bundles AND bundle_in_context AS evidence_in_context,
    has_bundles AND bundle_cited AS evidence_cited,
    has_bundles AND bundle_cited AND NOT res_bad
        AS evidence_resolved,
    has_bundles AND bundle_cited AND NOT res_bad AND NOT ren_bad AS evidence_rendered,
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
