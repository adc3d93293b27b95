-- content_drift_traces.sql: which traces of the slice served a drifted chunk (t_drift).
-- Purpose: content drift is decided per trace: a trace that served the gold text under the
--   same id is not affected by another trace that served other text.
-- Grain: one row per (trace, drifted chunk id, served hash).
-- Parameters: none. Reads: spans, t_traces (trace_id), t_drift (content_drift.sql).
-- Writes: t_trace_drift
-- Columns: trace_id VARCHAR, chunk_id VARCHAR, served_hash VARCHAR, gold_hash VARCHAR
WITH served AS (
    SELECT trace_id, unnest(list_zip(chunk_id, chunk_hash)) AS p
    FROM spans
    WHERE stage = 'retrieval' AND chunk_hash IS NOT NULL AND trace_id IN (SELECT trace_id FROM t_traces)
      AND list_has_any(chunk_id, (SELECT list(chunk_id) FROM t_drift))
)
SELECT DISTINCT s.trace_id, d.chunk_id, d.served_hash, d.gold_hash
FROM served AS s
JOIN t_drift AS d ON d.chunk_id = s.p[1] AND d.served_hash = s.p[2];
