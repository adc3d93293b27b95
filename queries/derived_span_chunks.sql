-- derived_span_chunks.sql: retrieval spans of the slice whose derived chunk ids joined gold ids.
-- Purpose: annotate writes each retrieved document's relevance under the gold id the run read
--   it as (run_span_chunks), not the id the instrumentation derived.
-- Grain: one row per retrieval span of the slice with derived ids. Parameters: $run_id.
-- Reads: spans, t_traces (trace_id), t_id_map (from_id, to_id).
-- Writes: run_span_chunks (append)
WITH m AS (
    SELECT map_from_entries(list({'key': from_id, 'value': to_id})) AS ids FROM t_id_map WHERE to_id IS NOT NULL
)
SELECT $run_id AS run_id, s.span_id, list_transform(s.chunk_id, lambda x: coalesce(m.ids[x], x)) AS chunk_ids
FROM spans AS s, m
WHERE s.stage = 'retrieval' AND s.derived_ids > 0 AND s.trace_id IN (SELECT trace_id FROM t_traces)
