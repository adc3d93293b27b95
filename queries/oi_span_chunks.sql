-- oi_span_chunks.sql: OpenInference retrieval spans of the slice with the gold id of each document.
-- Purpose: what _source_openinference joined each document to (t_oi_docs), kept with the run for
--   annotate (run_span_chunks).
-- Grain: one row per OpenInference retrieval or context span of the slice. Parameters: $run_id.
-- Reads: t_oi_docs (span_id, chunk_ids).
-- Writes: run_span_chunks (append)
SELECT $run_id AS run_id, span_id, chunk_ids FROM t_oi_docs
