-- run_traces.sql: one row per trace, with its evidence chain and the gold case it answers (if any).
-- Purpose: normalise the stage spans of each trace into lists keyed by chunk id, in
--   chain order: request -> retrieved -> in context -> generated -> resolved -> rendered.
--   Each stage's span is picked per trace by a cheap aggregation over span ids (the first
--   request and retrieval, the last context assembly by start time, the last generation,
--   resolution and render by end time; equal times are broken by span id; a citeline
--   span always before an OpenInference one of the same stage), then its columns are
--   joined in.
--   A trace is joined to at most one case: by case_id, else by the normalised question
--   (t_question_norm, made by the one normaliser the gold set also uses); when several
--   gold cases share the question, by the principal and as_of that decide it. A trace
--   that joins no case keeps its row with case_id NULL and unmatched_reason
--   'unknown_case_id' | 'question_not_in_gold' | 'ambiguous' (then with its candidates):
--   the caller stores those rows as the run's coverage, and classify.sql judges them on the
--   corpus basis (the corpus and the trace alone).
--   Spans of an unknown schema version are left out (ingest reports them).
-- Grain: one row per trace with a request span.
-- Parameters: $schema_versions (VARCHAR[]: versions this analyzer reads),
--   $files (VARCHAR[] or NULL: only traces held by these trace files, as listed in t_scope
--   (file_traces); NULL = the whole store),
--   $parts, $part, $lo, $hi (a large run is classified a slice at a time: with $parts > 1
--   this call covers the traces of slice $part in t_slices, whose spans lie between
--   rowids $lo and $hi; see run_slices.sql. With $parts = 1, every trace).
-- Reads: spans, t_oi_docs (trace_id, span_id, chunk_ids: OpenInference documents as joined to gold),
--   t_slices (trace_id, slice), t_gold_cases (case_id, question_norm, as_of, expect, principal_groups),
--   t_question_norm (question, question_norm).
-- Writes: t_traces
-- Columns: trace_id VARCHAR, case_id VARCHAR, unmatched_reason VARCHAR, candidates VARCHAR[],
--   unreadable_stage VARCHAR, unreadable_span VARCHAR, unreadable_error VARCHAR, expect VARCHAR,
--   require_rank INTEGER, principal_groups VARCHAR[], as_of DATE, started_at TIMESTAMP,
--   request_span VARCHAR, retrieval_span VARCHAR, retrieval_observed BOOLEAN, retrieved VARCHAR[],
--   context_span VARCHAR, context VARCHAR[], generation_span VARCHAR, answer VARCHAR, answer_format VARCHAR,
--   abstained BOOLEAN, claim_text VARCHAR[], evidence_claim BIGINT[], evidence_chunk VARCHAR[],
--   evidence_quote VARCHAR[], map_label VARCHAR[], map_chunk_id VARCHAR[], map_version VARCHAR[],
--   resolution_span VARCHAR, res_marker VARCHAR[], res_chunk_id VARCHAR[], res_version VARCHAR[],
--   res_uri VARCHAR[], render_span VARCHAR, ren_label VARCHAR[], ren_uri VARCHAR[], ren_chunk_id VARCHAR[],
--   ren_title VARCHAR[], ren_preview VARCHAR[]
WITH usable AS NOT MATERIALIZED (  -- the columns read below, by name. Read several times, and each read
    -- scans the store for the columns it needs: materialised, it copied every stage's lists for every span
    -- (600,000 spans at 100k traces) to read most of them once (20,000 traces: 0.71-0.75 -> 0.61-0.62 s CPU)
    -- (an OpenInference document's id is the gold chunk it joined: t_oi_docs)
    SELECT s.trace_id, s.span_id, s.stage, s.start_ns, s.end_ns, s.schema_version, s.adapter_error,
           s.question, s.case_id, s.principal_groups, s.as_of, coalesce(d.chunk_ids, s.chunk_id) AS chunk_id,
           s.chunk_version,
           s.answer, s.answer_format, s.abstained, s.claim_text, s.evidence_claim, s.evidence_chunk, s.evidence_quote,
           s.map_label, s.map_chunk_id, s.map_version, s.res_marker, s.res_chunk_id, s.res_version, s.res_uri,
           s.ren_label, s.ren_uri, s.ren_chunk_id, s.ren_title, s.ren_preview
    FROM spans AS s
    LEFT JOIN t_oi_docs AS d ON d.trace_id = s.trace_id AND d.span_id = s.span_id
    WHERE (s.schema_version IS NULL OR list_contains($schema_versions, s.schema_version))
      AND ($files IS NULL OR s.trace_id IN (SELECT trace_id FROM t_scope))
      AND ($parts = 1 OR (s.rowid BETWEEN $lo AND $hi
                          AND s.trace_id IN (SELECT trace_id FROM t_slices WHERE slice = $part)))
),
picks AS (       -- which span of each stage counts, by id only: scalar aggregates are cheap
    -- A citeline span (schema_version set) always beats an OpenInference span of the same
    -- stage: in mixed traces the app's root span, an LLM call inside generation or a
    -- follow-up LLM call after it must not become the request or the answer. The first
    -- key of each ordering says "is citeline's"; OpenInference spans only stand in for a
    -- stage with no citeline span at all.
    SELECT
        trace_id,
        arg_min(span_id, {'oi': schema_version IS NULL, 't': start_ns, 's': span_id}) FILTER (WHERE stage = 'request')
            AS request_span,
        count(*) FILTER (WHERE stage = 'retrieval' AND chunk_id IS NOT NULL AND schema_version IS NOT NULL)
            AS n_cl_retrievals,
        count(*) FILTER (WHERE stage = 'retrieval' AND chunk_id IS NOT NULL) AS n_any_retrievals,
        CASE WHEN n_cl_retrievals > 0 THEN n_cl_retrievals ELSE n_any_retrievals END AS n_retrievals,
        arg_min(span_id, {'oi': schema_version IS NULL, 't': start_ns, 's': span_id})
            FILTER (WHERE stage = 'retrieval' AND chunk_id IS NOT NULL) AS retrieval_span,
        arg_max(span_id, {'cl': schema_version IS NOT NULL, 't': start_ns, 's': span_id})
            FILTER (WHERE stage = 'context' AND chunk_id IS NOT NULL) AS context_span,
        arg_max(span_id, {'cl': schema_version IS NOT NULL, 't': end_ns, 's': span_id})
            FILTER (WHERE stage = 'generation' AND answer IS NOT NULL) AS generation_span,
        arg_max(span_id, {'cl': schema_version IS NOT NULL, 't': end_ns, 's': span_id})
            FILTER (WHERE stage = 'resolution' AND res_marker IS NOT NULL) AS resolution_span,
        arg_max(span_id, {'cl': schema_version IS NOT NULL, 't': end_ns, 's': span_id})
            FILTER (WHERE stage = 'render' AND ren_label IS NOT NULL) AS render_span,
        -- stage spans whose output could not be read at run time (rare: evaluated on those rows only)
        arg_max({'span': span_id, 'error': adapter_error}, {'t': end_ns, 's': span_id})
            FILTER (WHERE stage = 'retrieval' AND adapter_error IS NOT NULL) AS retrieval_error,
        arg_max({'span': span_id, 'error': adapter_error}, {'t': end_ns, 's': span_id})
            FILTER (WHERE stage = 'context' AND adapter_error IS NOT NULL) AS context_error,
        arg_max({'span': span_id, 'error': adapter_error}, {'t': end_ns, 's': span_id})
            FILTER (WHERE stage = 'generation' AND adapter_error IS NOT NULL) AS generation_error,
        arg_max({'span': span_id, 'error': adapter_error}, {'t': end_ns, 's': span_id})
            FILTER (WHERE stage = 'resolution' AND adapter_error IS NOT NULL) AS resolution_error,
        arg_max({'span': span_id, 'error': adapter_error}, {'t': end_ns, 's': span_id})
            FILTER (WHERE stage = 'render' AND adapter_error IS NOT NULL) AS render_error
    FROM usable
    GROUP BY trace_id
    HAVING request_span IS NOT NULL
),
several_retrievals AS (   -- rare: every chunk any retrieval span returned (citeline's only, if any)
    SELECT u.trace_id, list_distinct(flatten(list(u.chunk_id))) AS retrieved
    FROM usable AS u
    JOIN picks AS p ON p.trace_id = u.trace_id AND p.n_retrievals > 1
    WHERE u.stage = 'retrieval' AND u.chunk_id IS NOT NULL
      AND (u.schema_version IS NOT NULL OR p.n_cl_retrievals = 0)
    GROUP BY u.trace_id
),
requests AS (
    SELECT p.*, r.question, r.case_id AS asked_case, r.principal_groups, r.as_of, r.start_ns AS started_ns,
           qn.question_norm
    FROM picks AS p
    JOIN usable AS r ON r.trace_id = p.trace_id AND r.span_id = p.request_span AND r.stage = 'request'
    LEFT JOIN t_question_norm AS qn ON qn.question = r.question AND r.case_id IS NULL
),
by_question AS (  -- without a case id: every gold case asking the same question is a candidate
    SELECT q.trace_id, g.case_id,
           -- a candidate conflicts when its principal or date says it is another request ...
           coalesce((len(coalesce(g.principal_groups, [])) > 0
                     AND list_sort(g.principal_groups) <> list_sort(coalesce(q.principal_groups, [])))
                    OR g.as_of <> TRY_CAST(q.as_of AS DATE), false) AS conflicts,
           -- ... and agrees by how many of the two it pins down
           (len(coalesce(g.principal_groups, [])) > 0
                AND list_sort(g.principal_groups) = list_sort(coalesce(q.principal_groups, [])))::INTEGER
           + coalesce(g.as_of = TRY_CAST(q.as_of AS DATE), false)::INTEGER AS agreement
    FROM requests AS q
    JOIN t_gold_cases AS g ON g.question_norm = q.question_norm
),
best AS (
    SELECT trace_id, max(agreement) FILTER (WHERE NOT conflicts) AS best
    FROM by_question
    GROUP BY trace_id
),
chosen AS (       -- one candidate: it; several: the unique best that does not conflict, else ambiguous
    SELECT b.trace_id,
           list(b.case_id ORDER BY b.case_id) AS candidates,
           list(b.case_id ORDER BY b.case_id) FILTER (WHERE NOT b.conflicts AND b.agreement = m.best) AS top,
           CASE WHEN len(candidates) = 1 THEN candidates[1] WHEN len(top) = 1 THEN top[1] END AS case_id
    FROM by_question AS b
    JOIN best AS m USING (trace_id)
    GROUP BY b.trace_id
),
cased AS (
    SELECT q.*,
           CASE WHEN q.asked_case IS NOT NULL THEN by_id.case_id ELSE ch.case_id END AS gold_case_id,
           CASE WHEN q.asked_case IS NOT NULL AND by_id.case_id IS NULL THEN 'unknown_case_id'
                WHEN q.asked_case IS NULL AND ch.trace_id IS NULL THEN 'question_not_in_gold'
                WHEN q.asked_case IS NULL AND ch.case_id IS NULL THEN 'ambiguous' END AS unmatched_reason,
           CASE WHEN q.asked_case IS NULL AND ch.case_id IS NULL THEN ch.candidates END AS candidates
    FROM requests AS q
    LEFT JOIN t_gold_cases AS by_id ON by_id.case_id = q.asked_case
    LEFT JOIN chosen AS ch ON ch.trace_id = q.trace_id
)
SELECT
    c.trace_id,
    c.gold_case_id AS case_id,
    c.unmatched_reason,
    coalesce(c.candidates, []) AS candidates,
    -- the first stage in chain order that has only unreadable spans: its claims are not_evaluable
    u.err.stage AS unreadable_stage, u.err.span AS unreadable_span, u.err.error AS unreadable_error,
    g.expect,
    g.require_rank,  -- the least authority (1 primary, 2 secondary) the case's claims must rest on
    -- who asked, as the trace says: [] is a principal with no groups, NULL one the trace does not
    -- name (access is then not evaluable). Never the gold case's groups: a case describes the
    -- request it expects, not the one that was made
    c.principal_groups,
    -- the date the corpus is read at: the request's as_of, else its case's; a trace with no case
    -- (corpus basis) is read at the day it was made
    coalesce(TRY_CAST(c.as_of AS DATE), g.as_of,
             CASE WHEN c.gold_case_id IS NULL THEN CAST(make_timestamp(c.started_ns // 1000) AS DATE) END) AS as_of,
    make_timestamp(c.started_ns // 1000) AS started_at,
    c.request_span,
    c.retrieval_span,
    -- no retrieval span of any source: what reached the model was retrieved, the rest is unknown
    -- (a support missing from the context is then neither a miss nor a drop: classify.sql)
    c.retrieval_span IS NOT NULL OR c.retrieval_error IS NOT NULL AS retrieval_observed,
    coalesce(sr.retrieved, rt.chunk_id, CASE WHEN c.retrieval_span IS NULL THEN x.chunk_id END, []) AS retrieved,
    -- no context span (citeline's or a reranker's): read off the generation's prompt next
    -- (prompt_generations.sql, apply_prompt_context.sql); until then, what was retrieved
    c.context_span,
    coalesce(x.chunk_id, sr.retrieved, rt.chunk_id, []) AS context,
    c.generation_span, gen.answer, gen.answer_format, gen.abstained,
    gen.claim_text, gen.evidence_claim, gen.evidence_chunk, gen.evidence_quote,
    -- the label map in force: the generation span's, else (another source traced the generation)
    -- the one the context span gave
    CASE WHEN len(coalesce(gen.map_label, [])) > 0 THEN gen.map_label ELSE coalesce(x.map_label, []) END AS map_label,
    -- (a context span's map: its labels beside its own chunk ids and versions; a store ingested before this
    -- release holds them again in map_chunk_id and map_version)
    CASE WHEN len(coalesce(gen.map_label, [])) > 0 THEN gen.map_chunk_id
         ELSE coalesce(x.map_chunk_id, CASE WHEN x.map_label IS NOT NULL THEN x.chunk_id END, []) END AS map_chunk_id,
    CASE WHEN len(coalesce(gen.map_label, [])) > 0 THEN gen.map_version
         ELSE coalesce(x.map_version, CASE WHEN x.map_label IS NOT NULL THEN x.chunk_version END, []) END AS map_version,
    c.resolution_span, coalesce(res.res_marker, []) AS res_marker, res.res_chunk_id,
    res.res_version, res.res_uri,
    c.render_span, coalesce(ren.ren_label, []) AS ren_label, ren.ren_uri, ren.ren_chunk_id,
    -- what the page showed with each link besides it: a title, a preview (content on only)
    ren.ren_title, ren.ren_preview
FROM cased AS c
CROSS JOIN LATERAL (SELECT CASE
        WHEN c.retrieval_span IS NULL AND c.retrieval_error IS NOT NULL THEN {'stage': 'retrieval', 'span': c.retrieval_error.span, 'error': c.retrieval_error.error}
        WHEN c.context_span IS NULL AND c.context_error IS NOT NULL THEN {'stage': 'context', 'span': c.context_error.span, 'error': c.context_error.error}
        WHEN c.generation_span IS NULL AND c.generation_error IS NOT NULL THEN {'stage': 'generation', 'span': c.generation_error.span, 'error': c.generation_error.error}
        WHEN c.resolution_span IS NULL AND c.resolution_error IS NOT NULL THEN {'stage': 'resolution', 'span': c.resolution_error.span, 'error': c.resolution_error.error}
        WHEN c.render_span IS NULL AND c.render_error IS NOT NULL THEN {'stage': 'render', 'span': c.render_error.span, 'error': c.render_error.error}
        -- no span of any source shows the answer: nothing the model said can be judged
        WHEN c.generation_span IS NULL AND c.generation_error IS NULL THEN {'stage': 'generation', 'span': c.request_span,
             'error': 'not observed: no span recorded the answer; add @generation (or an instrumentor for the LLM calls)'}
    END AS err) AS u
LEFT JOIN t_gold_cases AS g ON g.case_id = c.gold_case_id
LEFT JOIN several_retrievals AS sr ON sr.trace_id = c.trace_id
-- each stage's span by its id, and by the stage it was picked for (true of it already: a span is stored once): the
-- stage is a filter DuckDB applies to the scan, so each join is built on that stage's spans, not on every span of
-- the run (100k traces: this statement 2.27 -> 1.59 s CPU)
LEFT JOIN usable AS rt ON rt.trace_id = c.trace_id AND rt.span_id = c.retrieval_span AND rt.stage = 'retrieval'
LEFT JOIN usable AS x ON x.trace_id = c.trace_id AND x.span_id = c.context_span AND x.stage = 'context'
LEFT JOIN usable AS gen ON gen.trace_id = c.trace_id AND gen.span_id = c.generation_span AND gen.stage = 'generation'
LEFT JOIN usable AS res ON res.trace_id = c.trace_id AND res.span_id = c.resolution_span AND res.stage = 'resolution'
LEFT JOIN usable AS ren ON ren.trace_id = c.trace_id AND ren.span_id = c.render_span AND ren.stage = 'render'
