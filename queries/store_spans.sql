-- store_spans.sql: the spans of t_batch into `spans`, each span once.
-- Purpose: a span is stored once however often it was read: the same line twice in a file
--   (an exporter that retried), the same file in two folders, a file copied under a new
--   name. Spans read twice within the batch were already reduced to their first reading
--   (_ingest.py, only when a cheap check finds any); here a span already in the store is
--   not added again.
-- Grain: one row per span new to the store.
--   The raw GenAI message attributes (genai_*) were read into prompt and answer (genai.py) and are
--   not stored.
-- Parameters: none. Reads: t_batch (ingest_spans.sql), spans.
INSERT INTO spans BY NAME
SELECT * EXCLUDE (genai_kind, genai_system, genai_input, genai_output)
FROM t_batch AS n
WHERE NOT EXISTS (
    SELECT 1 FROM spans AS old WHERE old.trace_id = n.trace_id AND old.span_id = n.span_id
);
