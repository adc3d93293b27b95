-- content_drift.sql: chunks the index served with other text than the gold corpus holds.
-- Purpose: a retrieval span records each chunk's content hash. A chunk served under a gold
--   chunk id (and the same version, where both name one) whose hash differs from the hash of
--   the gold text is content drift: the index holds another text under that identity. Claims
--   citing or needing it are freshness (classify.sql), never the model's grounding.
--   Each distinct (id, version, hash) is compared once; which traces served a drifted chunk
--   is content_drift_traces.sql, run only when this finds any.
-- Grain: one row per drifted (chunk id, served hash).
-- Parameters: none. Reads: spans, t_traces (trace_id), t_gold_chunks (chunk_id, version, content_hash).
-- Writes: t_drift
-- Columns: chunk_id VARCHAR, served_hash VARCHAR, gold_hash VARCHAR
WITH served AS (
    SELECT DISTINCT unnest(list_zip(chunk_id, chunk_version, chunk_hash)) AS p
    FROM spans
    WHERE stage = 'retrieval' AND chunk_hash IS NOT NULL AND trace_id IN (SELECT trace_id FROM t_traces)
)
SELECT DISTINCT g.chunk_id, s.p[3] AS served_hash, g.content_hash AS gold_hash
FROM served AS s
JOIN t_gold_chunks AS g ON g.chunk_id = s.p[1]
WHERE coalesce(s.p[3], '') <> '' AND g.content_hash <> '' AND s.p[3] <> g.content_hash
  AND (coalesce(s.p[2], '') = '' OR coalesce(g.version, '') = '' OR s.p[2] = g.version);
