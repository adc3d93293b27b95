-- restricted_by_content.sql: restricted gold text the index served under another id.
-- Purpose: an ACL protects a text, not an id. A retrieval span records each chunk's content
--   hash; a chunk whose hash is the hash of a gold chunk with an ACL carries that ACL in this
--   trace, whatever id it was served under (an id the gold set does not list, or another
--   chunk's). classify.sql checks access on these as on the gold ids themselves.
-- Grain: one row per (trace, served chunk id, restricted gold chunk it holds the text of).
-- Parameters: none. Reads: spans, t_traces (trace_id), t_gold_chunks (chunk_id, acl, content_hash).
-- Writes: t_restricted_alias
-- Columns: trace_id VARCHAR, chunk_id VARCHAR, gold_chunk_id VARCHAR, acl VARCHAR[]
WITH restricted AS (
    SELECT chunk_id, acl, content_hash FROM t_gold_chunks WHERE acl IS NOT NULL AND content_hash <> ''
),
served AS (      -- only spans that served a restricted hash are unnested
    SELECT trace_id, unnest(list_zip(chunk_id, chunk_hash)) AS p
    FROM spans
    WHERE stage = 'retrieval' AND chunk_hash IS NOT NULL AND trace_id IN (SELECT trace_id FROM t_traces)
      AND list_has_any(chunk_hash, (SELECT coalesce(list(content_hash), []) FROM restricted))
)
SELECT DISTINCT s.trace_id, s.p[1] AS chunk_id, r.chunk_id AS gold_chunk_id, r.acl
FROM served AS s
JOIN restricted AS r ON r.content_hash = s.p[2]
WHERE s.p[1] IS DISTINCT FROM r.chunk_id;
