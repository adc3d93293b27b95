-- prompt_documents.sql: the retrieved chunks, with their text, of the traces whose context no
-- span traced: what a generation span's prompt is searched for.
-- Purpose: the chunks come from the retrieval spans the trace's `retrieved` list was read from
--   (citeline's when there are any, else OpenInference's, ids as joined to gold: t_oi_docs),
--   in span order; a chunk whose text was not recorded (record_content=False) has ''.
-- Grain: one row per (trace, retrieval span, position).
-- Parameters: none. Reads: t_traces, spans, t_oi_docs.
WITH need AS (
    SELECT trace_id FROM t_traces WHERE context_span IS NULL AND generation_span IS NOT NULL
),
spans_of AS (
    SELECT s.trace_id, s.span_id, s.start_ns, s.schema_version IS NOT NULL AS citeline,
           coalesce(d.chunk_ids, s.chunk_id) AS ids,
           coalesce(d.texts, s.chunk_text, list_transform(s.chunk_id, lambda x: '')) AS texts
    FROM spans AS s
    JOIN need USING (trace_id)
    LEFT JOIN t_oi_docs AS d ON d.trace_id = s.trace_id AND d.span_id = s.span_id
    WHERE s.stage = 'retrieval' AND s.chunk_id IS NOT NULL
),
chosen AS (      -- citeline's retrieval spans win, as in run_traces.sql
    SELECT *, bool_or(citeline) OVER (PARTITION BY trace_id) AS any_citeline FROM spans_of
)
SELECT trace_id, span_id, start_ns, unnest(ids) AS chunk_id, unnest(texts) AS text,
       generate_subscripts(ids, 1) AS position
FROM chosen
WHERE citeline = any_citeline
ORDER BY trace_id, start_ns, span_id, position
