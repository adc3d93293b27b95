-- ingest_spans.sql: OTLP/JSON lines files -> one row per span in `spans`.
-- Purpose: the only place trace JSON is parsed. Each line is parsed once into typed
--   structs (json_transform), spans are unnested, and the attributes citeline knows are
--   picked by key. Spans from OpenInference auto-instrumentation alone (no citeline.*
--   keys) get the stage their span kind implies: RETRIEVER -> retrieval (ids from
--   retrieval.documents.N.document.id), RERANKER -> context, LLM -> generation
--   (answer = output.value), a root span -> request (question = input.value).
-- Grain: one row per span not already in the store (re-ingesting adds nothing).
-- Parameters: $files (VARCHAR[]: paths, plain or .gz).
INSERT INTO spans
WITH lines AS (
    SELECT filename, json_transform(json, '{"resourceSpans":[{"resource":{"attributes":[{"key":"VARCHAR","value":{"stringValue":"VARCHAR","intValue":"VARCHAR","boolValue":"BOOLEAN","doubleValue":"DOUBLE","arrayValue":{"values":[{"stringValue":"VARCHAR","intValue":"VARCHAR","boolValue":"BOOLEAN","doubleValue":"DOUBLE"}]}}}]},"scopeSpans":[{"spans":[{"traceId":"VARCHAR","spanId":"VARCHAR","parentSpanId":"VARCHAR","name":"VARCHAR","startTimeUnixNano":"VARCHAR","endTimeUnixNano":"VARCHAR","status":{"code":"INTEGER"},"attributes":[{"key":"VARCHAR","value":{"stringValue":"VARCHAR","intValue":"VARCHAR","boolValue":"BOOLEAN","doubleValue":"DOUBLE","arrayValue":{"values":[{"stringValue":"VARCHAR","intValue":"VARCHAR","boolValue":"BOOLEAN","doubleValue":"DOUBLE"}]}}}]}]}]}]}') AS doc
    FROM read_ndjson_objects($files, filename = true, ignore_errors = true, compression = 'auto_detect')
),
resource_spans AS (
    SELECT filename, unnest(doc.resourceSpans) AS rs FROM lines
),
scope_spans AS (
    SELECT filename,
           rs.resource.attributes[list_position(list_transform(rs.resource.attributes, lambda x: x.key), 'service.name')].value.stringValue AS service,
           unnest(rs.scopeSpans) AS ss
    FROM resource_spans
),
raw_spans AS (
    SELECT filename, service, unnest(ss.spans) AS s FROM scope_spans
),
keyed AS (
    SELECT filename, service, s, s.attributes AS a, list_transform(s.attributes, lambda x: x.key) AS k
    FROM raw_spans
    WHERE s.traceId IS NOT NULL AND s.spanId IS NOT NULL
),
picked AS (
    SELECT
        lower(s.traceId) AS trace_id,
        lower(s.spanId) AS span_id,
        nullif(lower(s.parentSpanId), '') AS parent_span_id,
        s.name AS name,
        service,
        TRY_CAST(s.startTimeUnixNano AS BIGINT) AS start_ns,
        TRY_CAST(s.endTimeUnixNano AS BIGINT) AS end_ns,
        coalesce(s.status.code, 0) AS status_code,
        a[list_position(k, 'citeline.schema_version')].value.stringValue AS schema_version,
        a[list_position(k, 'citeline.stage')].value.stringValue AS stage,
        a[list_position(k, 'openinference.span.kind')].value.stringValue AS oi_kind,
        a[list_position(k, 'citeline.request.question')].value.stringValue AS question,
        a[list_position(k, 'citeline.request.case_id')].value.stringValue AS case_id,
        a[list_position(k, 'citeline.request.principal.id')].value.stringValue AS principal_id,
        list_transform(a[list_position(k, 'citeline.request.principal.groups')].value.arrayValue.values, lambda x: x.stringValue) AS principal_groups,
        a[list_position(k, 'citeline.request.as_of')].value.stringValue AS as_of,
        list_transform(a[list_position(k, 'citeline.chunks.doc_id')].value.arrayValue.values, lambda x: x.stringValue) AS chunk_doc_id,
        list_transform(a[list_position(k, 'citeline.chunks.chunk_id')].value.arrayValue.values, lambda x: x.stringValue) AS chunk_id,
        list_transform(a[list_position(k, 'citeline.chunks.version')].value.arrayValue.values, lambda x: x.stringValue) AS chunk_version,
        list_transform(a[list_position(k, 'citeline.chunks.content_hash')].value.arrayValue.values, lambda x: x.stringValue) AS chunk_hash,
        list_transform(a[list_position(k, 'citeline.chunks.uri')].value.arrayValue.values, lambda x: x.stringValue) AS chunk_uri,
        list_transform(a[list_position(k, 'citeline.chunks.title')].value.arrayValue.values, lambda x: x.stringValue) AS chunk_title,
        list_transform(a[list_position(k, 'citeline.chunks.label')].value.arrayValue.values, lambda x: x.stringValue) AS chunk_label,
        a[list_position(k, 'citeline.generation.answer')].value.stringValue AS answer,
        a[list_position(k, 'citeline.generation.format')].value.stringValue AS answer_format,
        a[list_position(k, 'citeline.generation.abstained')].value.boolValue AS abstained,
        list_transform(a[list_position(k, 'citeline.generation.claims.text')].value.arrayValue.values, lambda x: x.stringValue) AS claim_text,
        list_transform(a[list_position(k, 'citeline.generation.evidence.claim_index')].value.arrayValue.values, lambda x: TRY_CAST(x.intValue AS BIGINT)) AS evidence_claim,
        list_transform(a[list_position(k, 'citeline.generation.evidence.chunk_id')].value.arrayValue.values, lambda x: x.stringValue) AS evidence_chunk,
        list_transform(a[list_position(k, 'citeline.generation.evidence.quote')].value.arrayValue.values, lambda x: x.stringValue) AS evidence_quote,
        list_transform(a[list_position(k, 'citeline.generation.context.label')].value.arrayValue.values, lambda x: x.stringValue) AS map_label,
        list_transform(a[list_position(k, 'citeline.generation.context.chunk_id')].value.arrayValue.values, lambda x: x.stringValue) AS map_chunk_id,
        list_transform(a[list_position(k, 'citeline.generation.context.doc_id')].value.arrayValue.values, lambda x: x.stringValue) AS map_doc_id,
        list_transform(a[list_position(k, 'citeline.generation.context.version')].value.arrayValue.values, lambda x: x.stringValue) AS map_version,
        list_transform(a[list_position(k, 'citeline.resolution.marker')].value.arrayValue.values, lambda x: x.stringValue) AS res_marker,
        list_transform(a[list_position(k, 'citeline.resolution.doc_id')].value.arrayValue.values, lambda x: x.stringValue) AS res_doc_id,
        list_transform(a[list_position(k, 'citeline.resolution.chunk_id')].value.arrayValue.values, lambda x: x.stringValue) AS res_chunk_id,
        list_transform(a[list_position(k, 'citeline.resolution.version')].value.arrayValue.values, lambda x: x.stringValue) AS res_version,
        list_transform(a[list_position(k, 'citeline.resolution.uri')].value.arrayValue.values, lambda x: x.stringValue) AS res_uri,
        list_transform(a[list_position(k, 'citeline.render.label')].value.arrayValue.values, lambda x: x.stringValue) AS ren_label,
        list_transform(a[list_position(k, 'citeline.render.uri')].value.arrayValue.values, lambda x: x.stringValue) AS ren_uri,
        list_transform(a[list_position(k, 'citeline.render.title')].value.arrayValue.values, lambda x: x.stringValue) AS ren_title,
        list_transform(a[list_position(k, 'citeline.render.doc_id')].value.arrayValue.values, lambda x: x.stringValue) AS ren_doc_id,
        list_transform(a[list_position(k, 'citeline.render.chunk_id')].value.arrayValue.values, lambda x: x.stringValue) AS ren_chunk_id,
        list_transform(a[list_position(k, 'citeline.render.version')].value.arrayValue.values, lambda x: x.stringValue) AS ren_version,
        a[list_position(k, 'citeline.adapter_error')].value.stringValue AS adapter_error,
        a[list_position(k, 'input.value')].value.stringValue AS input_value,
        a[list_position(k, 'output.value')].value.stringValue AS output_value,
        list_transform(list_sort(list_transform(list_filter(a, lambda x: x.key LIKE 'retrieval.documents.%.document.id'), lambda x: {'n': TRY_CAST(split_part(x.key, '.', 3) AS INTEGER), 'id': x.value.stringValue})), lambda x: x.id) AS oi_retrieved,
        list_transform(list_sort(list_transform(list_filter(a, lambda x: x.key LIKE 'reranker.output_documents.%.document.id'), lambda x: {'n': TRY_CAST(split_part(x.key, '.', 3) AS INTEGER), 'id': x.value.stringValue})), lambda x: x.id) AS oi_reranked,
        filename AS source_file
    FROM keyed
),
staged AS (
    SELECT
        *,
        coalesce(stage, CASE
            WHEN oi_kind = 'RETRIEVER' THEN 'retrieval'
            WHEN oi_kind = 'RERANKER' THEN 'context'
            WHEN oi_kind = 'LLM' THEN 'generation'
            WHEN parent_span_id IS NULL THEN 'request'
        END) AS stage_final
    FROM picked
)
SELECT
    trace_id, span_id, parent_span_id, name, service, start_ns, end_ns, status_code,
    schema_version,
    stage_final AS stage,
    oi_kind,
    CASE WHEN stage IS NULL AND stage_final = 'request' THEN input_value ELSE question END AS question,
    case_id, principal_id, principal_groups, as_of,
    chunk_doc_id,
    CASE WHEN stage IS NULL AND stage_final = 'retrieval' THEN oi_retrieved
         WHEN stage IS NULL AND stage_final = 'context' THEN oi_reranked
         ELSE chunk_id END AS chunk_id,
    chunk_version, chunk_hash, chunk_uri, chunk_title, chunk_label,
    CASE WHEN stage IS NULL AND stage_final = 'generation' THEN output_value ELSE answer END AS answer,
    CASE WHEN stage IS NULL AND stage_final = 'generation' THEN 'prose' ELSE answer_format END AS answer_format,
    abstained, claim_text, evidence_claim, evidence_chunk, evidence_quote,
    map_label, map_chunk_id, map_doc_id, map_version,
    res_marker, res_doc_id, res_chunk_id, res_version, res_uri,
    ren_label, ren_uri, ren_title, ren_doc_id, ren_chunk_id, ren_version,
    adapter_error, source_file
FROM staged AS n
WHERE NOT EXISTS (
    SELECT 1 FROM spans AS old WHERE old.trace_id = n.trace_id AND old.span_id = n.span_id
);
