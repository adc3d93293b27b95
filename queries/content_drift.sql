-- content_drift.sql: chunks the index served with other text than the gold corpus holds.
-- Purpose: a retrieval span records each chunk's content hash. A chunk served under a gold
--   chunk id (and the same version, where both name one) whose hash differs from the hash of
--   the gold text is content drift: the index holds another text under that identity. Claims
--   citing or needing it are freshness (classify.sql), never the model's grounding.
--   Read from the distinct chunk lists first, so repeated retrievals cost one row each.
-- Grain: one row per (trace, drifted chunk id, served hash).
-- Parameters: none. Reads: spans, t_traces (trace_id), t_gold_chunks (chunk_id, version, content_hash).
CREATE OR REPLACE TEMP TABLE t_trace_drift AS
WITH lists AS (
    SELECT DISTINCT chunk_id, chunk_version, chunk_hash
    FROM spans
    WHERE stage = 'retrieval' AND chunk_hash IS NOT NULL AND trace_id IN (SELECT trace_id FROM t_traces)
),
served AS (
    SELECT DISTINCT unnest(chunk_id) AS id, unnest(chunk_version) AS version, unnest(chunk_hash) AS h FROM lists
),
drift AS (
    SELECT s.id AS chunk_id, s.h AS served_hash, g.content_hash AS gold_hash
    FROM served AS s
    JOIN t_gold_chunks AS g ON g.chunk_id = s.id
    WHERE coalesce(s.h, '') <> '' AND g.content_hash <> '' AND s.h <> g.content_hash
      AND (coalesce(s.version, '') = '' OR coalesce(g.version, '') = '' OR s.version = g.version)
),
per_trace AS (   -- only traces whose retrievals hold a drifted id are unnested
    SELECT trace_id, unnest(chunk_id) AS id, unnest(chunk_hash) AS h
    FROM spans
    WHERE stage = 'retrieval' AND chunk_hash IS NOT NULL AND trace_id IN (SELECT trace_id FROM t_traces)
      AND list_has_any(chunk_id, (SELECT coalesce(list(chunk_id), []) FROM drift))
)
SELECT DISTINCT p.trace_id, d.chunk_id, d.served_hash, d.gold_hash
FROM per_trace AS p
JOIN drift AS d ON d.chunk_id = p.id AND d.served_hash = p.h;
