-- recorded_acl.sql: who may see each retrieved chunk, as the app's own index said.
-- Purpose: a retrieval span records each chunk's ACL when the app's chunks carry one
--   (citeline.chunks.acl_group: every chunk's groups one after another; acl_count: how many
--   belong to each chunk, -1 for a chunk with none). This cuts the flat list back into one
--   ACL per chunk. classify.sql checks access on these beside the gold corpus's ACLs: a chunk
--   the index returned with its ACL leaks when it goes further for a principal outside it
--   (into the context, a citation or the page). Only spans that recorded an ACL are read, and
--   an empty ACL (acl: [], count 0) restricts nothing: an index's filter lets such a chunk through.
-- Grain: one row per (trace, chunk id, ACL) a retrieval span of the slice recorded.
-- Parameters: none. Reads: spans, t_traces (trace_id).
-- Writes: t_recorded_acl
-- Columns: trace_id VARCHAR, chunk_id VARCHAR, acl VARCHAR[]
WITH recorded AS (
    SELECT trace_id, chunk_id AS ids, acl_group, acl_count, unnest(range(1, len(acl_count) + 1)) AS i
    FROM spans
    WHERE stage = 'retrieval' AND acl_count IS NOT NULL AND len(acl_count) = len(chunk_id)
      AND trace_id IN (SELECT trace_id FROM t_traces)
),
cut AS (         -- chunk i's groups start after every earlier chunk's
    SELECT trace_id, ids[i] AS chunk_id, acl_count[i] AS n,
           coalesce(list_sum(list_transform(list_slice(acl_count, 1, i - 1), lambda c: greatest(c, 0))), 0) AS before,
           acl_group
    FROM recorded
)
SELECT DISTINCT trace_id, chunk_id,
       list_sort(list_slice(coalesce(acl_group, []), before + 1, before + n)) AS acl
FROM cut
WHERE n > 0 AND chunk_id IS NOT NULL;  -- an empty ACL is no restriction, as the apps' own filters read it
