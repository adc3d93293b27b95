-- run_traces.sql: one row per trace that answers a gold case, with its evidence chain.
-- Purpose: normalise the stage spans of each trace into lists keyed by chunk id, in
--   chain order: request -> retrieved -> in context -> generated -> resolved -> rendered.
--   One pass over the spans: each stage's span is picked per trace by aggregation
--   (the first request and retrieval, the last context assembly by start time, the last
--   generation, resolution and render by end time; equal times are broken by span id).
--   A trace is joined to its case by case_id, else by the normalised question text.
--   Spans of an unknown schema version are left out (ingest reports them).
-- Grain: one row per trace (with a request span and a matching gold case).
-- Parameters: $schema_versions (VARCHAR[]: versions this analyzer reads),
--   $files (VARCHAR[] or NULL: only spans read from these trace files; NULL = the whole store),
--   $part, $parts (INTEGER: this call covers the traces whose id hashes to $part modulo
--   $parts; analyze classifies a large run slice by slice; 0 and 1 = every trace).
-- Reads: spans, t_gold_cases (case_id, question_norm, as_of, expect, principal_groups).
WITH per_trace AS (
    SELECT
        trace_id,
        arg_min({'span_id': span_id, 'question': question, 'case_id': case_id,
                 'principal_groups': principal_groups, 'as_of': as_of, 'started_ns': start_ns},
                {'t': start_ns, 's': span_id}) FILTER (WHERE stage = 'request') AS req,
        count(*) FILTER (WHERE stage = 'retrieval' AND chunk_id IS NOT NULL) AS n_retrievals,
        arg_min({'span_id': span_id, 'chunk_id': chunk_id}, {'t': start_ns, 's': span_id})
            FILTER (WHERE stage = 'retrieval' AND chunk_id IS NOT NULL) AS ret,
        list(chunk_id) FILTER (WHERE stage = 'retrieval' AND chunk_id IS NOT NULL) AS ret_all,
        arg_max({'span_id': span_id, 'chunk_id': chunk_id}, {'t': start_ns, 's': span_id})
            FILTER (WHERE stage = 'context' AND chunk_id IS NOT NULL) AS ctx,
        arg_max({'span_id': span_id, 'answer': answer, 'answer_format': answer_format, 'abstained': abstained,
                 'claim_text': claim_text, 'evidence_claim': evidence_claim, 'evidence_chunk': evidence_chunk,
                 'evidence_quote': evidence_quote, 'map_label': map_label, 'map_chunk_id': map_chunk_id,
                 'map_version': map_version}, {'t': end_ns, 's': span_id})
            FILTER (WHERE stage = 'generation' AND answer IS NOT NULL) AS gen,
        arg_max({'span_id': span_id, 'res_marker': res_marker, 'res_chunk_id': res_chunk_id,
                 'res_version': res_version, 'res_uri': res_uri}, {'t': end_ns, 's': span_id})
            FILTER (WHERE stage = 'resolution' AND res_marker IS NOT NULL) AS res,
        arg_max({'span_id': span_id, 'ren_label': ren_label, 'ren_uri': ren_uri, 'ren_chunk_id': ren_chunk_id},
                {'t': end_ns, 's': span_id})
            FILTER (WHERE stage = 'render' AND ren_label IS NOT NULL) AS ren
    FROM spans
    WHERE (schema_version IS NULL OR list_contains($schema_versions, schema_version))
      AND ($files IS NULL OR list_contains($files, source_file))
      AND ($parts = 1 OR hash(trace_id) % CAST($parts AS UBIGINT) = $part)
    GROUP BY trace_id
    HAVING req IS NOT NULL
),
cased AS (
    SELECT p.*, coalesce(by_id.case_id, by_q.case_id) AS gold_case_id
    FROM per_trace AS p
    LEFT JOIN t_gold_cases AS by_id ON by_id.case_id = p.req.case_id
    LEFT JOIN t_gold_cases AS by_q
           ON by_q.question_norm = CASE WHEN p.req.case_id IS NULL
                                        THEN lower(trim(regexp_replace(p.req.question, '\s+', ' ', 'g'))) END
)
SELECT
    c.trace_id,
    c.gold_case_id AS case_id,
    g.expect,
    coalesce(c.req.principal_groups, g.principal_groups, []) AS principal_groups,
    coalesce(TRY_CAST(c.req.as_of AS DATE), g.as_of) AS as_of,
    make_timestamp(c.req.started_ns // 1000) AS started_at,
    c.req.span_id AS request_span,
    c.ret.span_id AS retrieval_span,
    CASE WHEN c.n_retrievals > 1 THEN list_distinct(flatten(c.ret_all)) ELSE coalesce(c.ret.chunk_id, []) END AS retrieved,
    -- no context assembly recorded (e.g. OpenInference-only traces): what was retrieved reached the model
    c.ctx.span_id AS context_span,
    coalesce(c.ctx.chunk_id, CASE WHEN c.n_retrievals > 1 THEN list_distinct(flatten(c.ret_all)) ELSE c.ret.chunk_id END, []) AS context,
    c.gen.span_id AS generation_span, c.gen.answer, c.gen.answer_format, c.gen.abstained,
    c.gen.claim_text, c.gen.evidence_claim, c.gen.evidence_chunk, c.gen.evidence_quote,
    coalesce(c.gen.map_label, []) AS map_label,
    coalesce(c.gen.map_chunk_id, []) AS map_chunk_id,
    coalesce(c.gen.map_version, []) AS map_version,
    c.res.span_id AS resolution_span, coalesce(c.res.res_marker, []) AS res_marker, c.res.res_chunk_id,
    c.res.res_version, c.res.res_uri,
    c.ren.span_id AS render_span, coalesce(c.ren.ren_label, []) AS ren_label, c.ren.ren_uri, c.ren.ren_chunk_id
FROM cased AS c
JOIN t_gold_cases AS g ON g.case_id = c.gold_case_id
