-- store_spans.sql: the spans of t_batch into `spans`, each span once.
-- Purpose: a span is stored once however often it was read: the same line twice in a file
--   (an exporter that retried), the same file in two folders, a file copied under a new
--   name. Spans read twice within the batch were already reduced to their first reading
--   (_ingest.py, only when a cheap check finds any); here a span already in the store is
--   not added again.
-- Grain: one row per span new to the store.
-- Parameters: none. Reads: t_batch (ingest_spans.sql), spans.
INSERT INTO spans BY NAME
SELECT *
FROM t_batch AS n
WHERE NOT EXISTS (
    SELECT 1 FROM spans AS old WHERE old.trace_id = n.trace_id AND old.span_id = n.span_id
);
