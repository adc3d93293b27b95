-- span_problems.sql: spans the analyzer cannot use, for the report of skipped input.
-- Purpose: an unknown schema version, a stage span missing the attribute its stage
--   needs (and not explained by an adapter error recorded at run time), or a stage span
--   whose output could not be read at run time (its adapter error: the trace's claims
--   that depend on it are not_evaluable).
-- Grain: one row per problem span.
-- Parameters: $files (VARCHAR[]: source files just ingested), $known (VARCHAR[]: schema versions read).
SELECT source_file, trace_id, span_id, stage, schema_version,
       CASE
           WHEN NOT list_contains($known, schema_version) THEN 'citeline.schema_version'
           WHEN adapter_error IS NOT NULL THEN 'citeline.adapter_error'
           WHEN stage IN ('retrieval', 'context') THEN 'citeline.chunks.chunk_id'
           WHEN stage = 'generation' THEN 'citeline.generation.answer'
           WHEN stage = 'request' THEN 'citeline.request.question'
           WHEN stage = 'resolution' THEN 'citeline.resolution.marker'
           ELSE 'citeline.render.label'
       END AS field,
       NOT list_contains($known, schema_version) AS unknown_version,
       adapter_error
FROM spans
WHERE list_contains($files, source_file)
  AND schema_version IS NOT NULL
  AND (
      NOT list_contains($known, schema_version)
      OR adapter_error IS NOT NULL
      OR (adapter_error IS NULL AND (
          (stage IN ('retrieval', 'context') AND chunk_id IS NULL)
          OR (stage = 'generation' AND answer IS NULL)
          OR (stage = 'request' AND question IS NULL)
          OR (stage = 'resolution' AND res_marker IS NULL)
          OR (stage = 'render' AND ren_label IS NULL)))
  )
ORDER BY source_file, trace_id, span_id
