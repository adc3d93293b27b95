-- run_chunks.sql: the gold text of the chunks the run's drill-down shows.
-- Purpose: a failing case's support chunks and every cited chunk, with text and version, kept
--   with the run (the report's drill-down and `citeline sample` show them later).
-- Grain: one row per chunk. Parameters: $run_id.
-- Reads: t_gold_chunks, run_support, claim_results.
-- Writes: run_chunks (append)
SELECT $run_id AS run_id, chunk_id, text, version
FROM t_gold_chunks
WHERE text <> '' AND chunk_id IN (
    SELECT unnest(chunk_ids) FROM run_support
    WHERE run_id = $run_id AND case_id IN (SELECT case_id FROM claim_results WHERE run_id = $run_id AND bucket <> 'ok')
    UNION
    SELECT unnest(cited_chunks) FROM claim_results WHERE run_id = $run_id
)
