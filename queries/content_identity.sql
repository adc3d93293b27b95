-- content_identity.sql: chunk ids the instrumentation derived -> the gold chunk with the same text.
-- Purpose: a chunk the app gave no id (loaders, splitters) is recorded with a derived id
--   (source#start=N, sha=H, ...; trace-schema.md). It joins the gold chunk whose normalised
--   text has the same content hash, when exactly one gold chunk has it. A derived id that
--   met two different texts, or a text the gold corpus does not hold, joins nothing.
--   Only retrieval spans that derived ids are read, so ordinary traffic costs nothing here.
-- Grain: one row per derived id seen in the slice's traces: to_id NULL when it joined nothing.
-- Parameters: none. Reads: spans, t_traces (trace_id), t_gold_chunks (chunk_id, content_hash).
-- Writes: t_id_map
-- Columns: from_id VARCHAR, to_id VARCHAR
WITH served AS (
    SELECT DISTINCT u.id, u.h
    FROM (
        SELECT unnest(s.chunk_id) AS id, unnest(s.chunk_hash) AS h
        FROM spans AS s
        WHERE s.stage = 'retrieval' AND s.derived_ids > 0
          AND s.trace_id IN (SELECT trace_id FROM t_traces)
    ) AS u
    WHERE u.id NOT IN (SELECT chunk_id FROM t_gold_chunks)
),
gold AS (
    SELECT content_hash AS h, min(chunk_id) AS chunk_id, count(*) AS n
    FROM t_gold_chunks
    WHERE content_hash <> ''
    GROUP BY content_hash
)
SELECT s.id AS from_id,
       CASE WHEN count(DISTINCT g.chunk_id) = 1 AND bool_and(g.n = 1) THEN min(g.chunk_id) END AS to_id
FROM served AS s
LEFT JOIN gold AS g ON g.h = s.h AND coalesce(s.h, '') <> ''
GROUP BY s.id;
