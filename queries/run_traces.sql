-- run_traces.sql: one row per trace that answers a gold case, with its evidence chain.
-- Purpose: normalise the stage spans of each trace into lists keyed by chunk id, in
--   chain order: request -> retrieved -> in context -> generated -> resolved -> rendered.
--   A trace is joined to its case by case_id, else by the normalised question text.
--   Spans of an unknown schema version are left out (ingest reports them).
-- Grain: one row per trace (with a request span and a matching gold case).
-- Parameters: $schema_versions (VARCHAR[]: versions this analyzer reads),
--   $files (VARCHAR[] or NULL: only spans read from these trace files; NULL = the whole store).
-- Reads: spans, t_gold_cases (case_id, question_norm, as_of, expect, principal_groups).
WITH usable AS (
    SELECT *
    FROM spans
    WHERE (schema_version IS NULL OR list_contains($schema_versions, schema_version))
      AND ($files IS NULL OR list_contains($files, source_file))
),
request AS (     -- the first request span of each trace
    SELECT trace_id, span_id AS request_span, question, case_id, principal_groups, as_of,
           start_ns AS started_ns
    FROM usable WHERE stage = 'request'
    QUALIFY row_number() OVER (PARTITION BY trace_id ORDER BY start_ns, span_id) = 1
),
retrieval_spans AS (
    SELECT trace_id, span_id, start_ns, chunk_id
    FROM usable WHERE stage = 'retrieval' AND chunk_id IS NOT NULL
),
retrieved AS (   -- every chunk any retrieval span returned; most traces have one retrieval
    SELECT trace_id, span_id AS retrieval_span, chunk_id AS retrieved
    FROM retrieval_spans
    QUALIFY count(*) OVER (PARTITION BY trace_id) = 1
    UNION ALL
    SELECT trace_id, arg_min(span_id, start_ns), list_distinct(flatten(list(chunk_id)))
    FROM (SELECT * FROM retrieval_spans QUALIFY count(*) OVER (PARTITION BY trace_id) > 1)
    GROUP BY trace_id
),
in_context AS (  -- the last context assembly is what the model saw
    SELECT trace_id, span_id AS context_span, chunk_id AS context
    FROM usable WHERE stage = 'context' AND chunk_id IS NOT NULL
    QUALIFY row_number() OVER (PARTITION BY trace_id ORDER BY start_ns DESC, span_id) = 1
),
generated AS (
    SELECT trace_id, span_id AS generation_span, answer, answer_format, abstained,
           claim_text, evidence_claim, evidence_chunk, evidence_quote,
           map_label, map_chunk_id, map_version
    FROM usable WHERE stage = 'generation' AND answer IS NOT NULL
    QUALIFY row_number() OVER (PARTITION BY trace_id ORDER BY end_ns DESC, span_id) = 1
),
resolved AS (
    SELECT trace_id, span_id AS resolution_span, res_marker, res_chunk_id, res_version, res_uri
    FROM usable WHERE stage = 'resolution' AND res_marker IS NOT NULL
    QUALIFY row_number() OVER (PARTITION BY trace_id ORDER BY end_ns DESC, span_id) = 1
),
rendered AS (
    SELECT trace_id, span_id AS render_span, ren_label, ren_uri, ren_chunk_id
    FROM usable WHERE stage = 'render' AND ren_label IS NOT NULL
    QUALIFY row_number() OVER (PARTITION BY trace_id ORDER BY end_ns DESC, span_id) = 1
),
cased AS (
    SELECT r.*, coalesce(by_id.case_id, by_q.case_id) AS gold_case_id
    FROM request AS r
    LEFT JOIN t_gold_cases AS by_id ON by_id.case_id = r.case_id
    LEFT JOIN t_gold_cases AS by_q
           ON r.case_id IS NULL AND by_q.question_norm = lower(trim(regexp_replace(r.question, '\s+', ' ', 'g')))
)
SELECT
    c.trace_id,
    c.gold_case_id AS case_id,
    g.expect,
    coalesce(c.principal_groups, g.principal_groups, []) AS principal_groups,
    coalesce(TRY_CAST(c.as_of AS DATE), g.as_of) AS as_of,
    make_timestamp(c.started_ns // 1000) AS started_at,
    c.request_span,
    rt.retrieval_span, coalesce(rt.retrieved, []) AS retrieved,
    -- no context assembly recorded (e.g. OpenInference-only traces): what was retrieved reached the model
    x.context_span, coalesce(x.context, rt.retrieved, []) AS context,
    gen.generation_span, gen.answer, gen.answer_format, gen.abstained,
    gen.claim_text, gen.evidence_claim, gen.evidence_chunk, gen.evidence_quote,
    coalesce(gen.map_label, []) AS map_label,
    coalesce(gen.map_chunk_id, []) AS map_chunk_id,
    coalesce(gen.map_version, []) AS map_version,
    res.resolution_span, coalesce(res.res_marker, []) AS res_marker, res.res_chunk_id,
    res.res_version, res.res_uri,
    ren.render_span, coalesce(ren.ren_label, []) AS ren_label, ren.ren_uri, ren.ren_chunk_id
FROM cased AS c
JOIN t_gold_cases AS g ON g.case_id = c.gold_case_id
LEFT JOIN retrieved AS rt USING (trace_id)
LEFT JOIN in_context AS x USING (trace_id)
LEFT JOIN generated AS gen USING (trace_id)
LEFT JOIN resolved AS res USING (trace_id)
LEFT JOIN rendered AS ren USING (trace_id)
