-- remap_ids.sql: every chunk id list of the slice's traces, read through the derived-id map.
-- Purpose: a chunk id the instrumentation derived (the app gave none) that joined a gold chunk
--   by its content hash (content_identity.sql: t_id_map) is that gold chunk from here on, at
--   every stage of the chain.
-- Grain: one row per trace of t_traces (rewritten in place). Parameters: none.
-- Reads: t_traces, t_id_map (from_id, to_id).
-- Writes: t_traces (rewrite)
WITH m AS (
    SELECT map_from_entries(list({'key': from_id, 'value': to_id})) AS ids FROM t_id_map WHERE to_id IS NOT NULL
)
SELECT t.* REPLACE (
    list_transform(t.retrieved, lambda x: coalesce(m.ids[x], x)) AS retrieved,
    list_transform(t.context, lambda x: coalesce(m.ids[x], x)) AS context,
    list_transform(t.map_chunk_id, lambda x: coalesce(m.ids[x], x)) AS map_chunk_id,
    list_transform(t.evidence_chunk, lambda x: coalesce(m.ids[x], x)) AS evidence_chunk,
    list_transform(t.res_chunk_id, lambda x: coalesce(m.ids[x], x)) AS res_chunk_id,
    list_transform(t.ren_chunk_id, lambda x: coalesce(m.ids[x], x)) AS ren_chunk_id
)
FROM t_traces AS t, m
