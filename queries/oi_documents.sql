-- oi_documents.sql: the documents of OpenInference retriever and reranker spans, for joining them
-- to gold chunks (analyzer/sources/openinference.py).
-- Purpose: an instrumentor records each document's own id (a node UUID, or none: LangChain), its
--   text and its metadata; which gold chunk it is can only be told from those (by id, metadata,
--   uri, content hash or containment), which is text work done once per document. The spans are
--   those run_traces.sql will read for this slice.
-- Grain: one row per OpenInference retrieval or context span of the slice's traces.
-- Parameters: $files, $parts, $part, $lo, $hi (as run_traces.sql). Reads: spans, t_scope, t_slices.
SELECT trace_id, span_id, chunk_id, oi_doc_text, oi_doc_meta
FROM spans
WHERE schema_version IS NULL AND stage IN ('retrieval', 'context') AND chunk_id IS NOT NULL
  AND ($files IS NULL OR trace_id IN (SELECT trace_id FROM t_scope))
  AND ($parts = 1 OR (rowid BETWEEN $lo AND $hi AND trace_id IN (SELECT trace_id FROM t_slices WHERE slice = $part)))
ORDER BY trace_id, span_id
