-- ingest_spans.sql: OTLP/JSON lines files -> one row per span in `spans`.
-- Purpose: the only place trace JSON is parsed. Each line is parsed once into typed
--   structs (json_transform), spans are unnested, and the attributes citeline knows are
--   picked by key. Spans from OpenInference auto-instrumentation alone (no citeline.*
--   keys) get the stage their span kind implies: RETRIEVER -> retrieval (ids from
--   retrieval.documents.N.document.id), RERANKER -> context, LLM -> generation
--   (answer = output.value), a root span -> request (question = input.value).
--   Each attribute is only looked up on the spans of the stage that writes it.
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
staged_keys AS (   -- the stage first: each column is only picked on the spans of its stage
    SELECT *, a[list_position(k, 'citeline.stage')].value.stringValue AS k_stage
    FROM keyed
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
        CASE WHEN k_stage IN ('request') THEN a[list_position(k, 'citeline.request.question')].value.stringValue END AS question,
        CASE WHEN k_stage IN ('request') THEN a[list_position(k, 'citeline.request.case_id')].value.stringValue END AS case_id,
        CASE WHEN k_stage IN ('request') THEN a[list_position(k, 'citeline.request.principal.id')].value.stringValue END AS principal_id,
        CASE WHEN k_stage IN ('request') THEN list_transform(a[list_position(k, 'citeline.request.principal.groups')].value.arrayValue.values, lambda x: x.stringValue) END AS principal_groups,
        CASE WHEN k_stage IN ('request') THEN a[list_position(k, 'citeline.request.as_of')].value.stringValue END AS as_of,
        CASE WHEN k_stage IN ('retrieval', 'context') THEN list_transform(a[list_position(k, 'citeline.chunks.doc_id')].value.arrayValue.values, lambda x: x.stringValue) END AS chunk_doc_id,
        CASE WHEN k_stage IN ('retrieval', 'context') THEN list_transform(a[list_position(k, 'citeline.chunks.chunk_id')].value.arrayValue.values, lambda x: x.stringValue) END AS chunk_id,
        CASE WHEN k_stage IN ('retrieval', 'context') THEN list_transform(a[list_position(k, 'citeline.chunks.version')].value.arrayValue.values, lambda x: x.stringValue) END AS chunk_version,
        CASE WHEN k_stage IN ('retrieval', 'context') THEN list_transform(a[list_position(k, 'citeline.chunks.content_hash')].value.arrayValue.values, lambda x: x.stringValue) END AS chunk_hash,
        CASE WHEN k_stage IN ('retrieval', 'context') THEN list_transform(a[list_position(k, 'citeline.chunks.uri')].value.arrayValue.values, lambda x: x.stringValue) END AS chunk_uri,
        CASE WHEN k_stage IN ('retrieval', 'context') THEN list_transform(a[list_position(k, 'citeline.chunks.title')].value.arrayValue.values, lambda x: x.stringValue) END AS chunk_title,
        CASE WHEN k_stage IN ('retrieval', 'context') THEN list_transform(a[list_position(k, 'citeline.chunks.label')].value.arrayValue.values, lambda x: x.stringValue) END AS chunk_label,
        CASE WHEN k_stage IN ('generation') THEN a[list_position(k, 'citeline.generation.answer')].value.stringValue END AS answer,
        CASE WHEN k_stage IN ('generation') THEN a[list_position(k, 'citeline.generation.format')].value.stringValue END AS answer_format,
        CASE WHEN k_stage IN ('generation') THEN a[list_position(k, 'citeline.generation.abstained')].value.boolValue END AS abstained,
        CASE WHEN k_stage IN ('generation') THEN list_transform(a[list_position(k, 'citeline.generation.claims.text')].value.arrayValue.values, lambda x: x.stringValue) END AS claim_text,
        CASE WHEN k_stage IN ('generation') THEN list_transform(a[list_position(k, 'citeline.generation.evidence.claim_index')].value.arrayValue.values, lambda x: TRY_CAST(x.intValue AS BIGINT)) END AS evidence_claim,
        CASE WHEN k_stage IN ('generation') THEN list_transform(a[list_position(k, 'citeline.generation.evidence.chunk_id')].value.arrayValue.values, lambda x: x.stringValue) END AS evidence_chunk,
        CASE WHEN k_stage IN ('generation') THEN list_transform(a[list_position(k, 'citeline.generation.evidence.quote')].value.arrayValue.values, lambda x: x.stringValue) END AS evidence_quote,
        CASE WHEN k_stage IN ('generation') THEN list_transform(a[list_position(k, 'citeline.generation.context.label')].value.arrayValue.values, lambda x: x.stringValue) END AS map_label,
        CASE WHEN k_stage IN ('generation') THEN list_transform(a[list_position(k, 'citeline.generation.context.chunk_id')].value.arrayValue.values, lambda x: x.stringValue) END AS map_chunk_id,
        CASE WHEN k_stage IN ('generation') THEN list_transform(a[list_position(k, 'citeline.generation.context.doc_id')].value.arrayValue.values, lambda x: x.stringValue) END AS map_doc_id,
        CASE WHEN k_stage IN ('generation') THEN list_transform(a[list_position(k, 'citeline.generation.context.version')].value.arrayValue.values, lambda x: x.stringValue) END AS map_version,
        CASE WHEN k_stage IN ('resolution') THEN list_transform(a[list_position(k, 'citeline.resolution.marker')].value.arrayValue.values, lambda x: x.stringValue) END AS res_marker,
        CASE WHEN k_stage IN ('resolution') THEN list_transform(a[list_position(k, 'citeline.resolution.doc_id')].value.arrayValue.values, lambda x: x.stringValue) END AS res_doc_id,
        CASE WHEN k_stage IN ('resolution') THEN list_transform(a[list_position(k, 'citeline.resolution.chunk_id')].value.arrayValue.values, lambda x: x.stringValue) END AS res_chunk_id,
        CASE WHEN k_stage IN ('resolution') THEN list_transform(a[list_position(k, 'citeline.resolution.version')].value.arrayValue.values, lambda x: x.stringValue) END AS res_version,
        CASE WHEN k_stage IN ('resolution') THEN list_transform(a[list_position(k, 'citeline.resolution.uri')].value.arrayValue.values, lambda x: x.stringValue) END AS res_uri,
        CASE WHEN k_stage IN ('render') THEN list_transform(a[list_position(k, 'citeline.render.label')].value.arrayValue.values, lambda x: x.stringValue) END AS ren_label,
        CASE WHEN k_stage IN ('render') THEN list_transform(a[list_position(k, 'citeline.render.uri')].value.arrayValue.values, lambda x: x.stringValue) END AS ren_uri,
        CASE WHEN k_stage IN ('render') THEN list_transform(a[list_position(k, 'citeline.render.title')].value.arrayValue.values, lambda x: x.stringValue) END AS ren_title,
        CASE WHEN k_stage IN ('render') THEN list_transform(a[list_position(k, 'citeline.render.doc_id')].value.arrayValue.values, lambda x: x.stringValue) END AS ren_doc_id,
        CASE WHEN k_stage IN ('render') THEN list_transform(a[list_position(k, 'citeline.render.chunk_id')].value.arrayValue.values, lambda x: x.stringValue) END AS ren_chunk_id,
        CASE WHEN k_stage IN ('render') THEN list_transform(a[list_position(k, 'citeline.render.version')].value.arrayValue.values, lambda x: x.stringValue) END AS ren_version,
        a[list_position(k, 'citeline.adapter_error')].value.stringValue AS adapter_error,
        CASE WHEN k_stage IS NULL THEN a[list_position(k, 'input.value')].value.stringValue END AS input_value,
        CASE WHEN k_stage IS NULL THEN a[list_position(k, 'output.value')].value.stringValue END AS output_value,
        CASE WHEN k_stage IS NULL THEN list_transform(list_sort(list_transform(list_filter(a, lambda x: x.key LIKE 'retrieval.documents.%.document.id'), lambda x: {'n': TRY_CAST(split_part(x.key, '.', 3) AS INTEGER), 'id': x.value.stringValue})), lambda x: x.id) END AS oi_retrieved,
        CASE WHEN k_stage IS NULL THEN list_transform(list_sort(list_transform(list_filter(a, lambda x: x.key LIKE 'reranker.output_documents.%.document.id'), lambda x: {'n': TRY_CAST(split_part(x.key, '.', 3) AS INTEGER), 'id': x.value.stringValue})), lambda x: x.id) END AS oi_reranked,
        filename AS source_file
    FROM staged_keys
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
