-- ingest_spans.sql: OTLP/JSON lines files -> one row per span read, in the temp table t_batch.
-- Purpose: the only place trace JSON is parsed. Lines are read as plain text (read_csv
--   with no delimiter or quote: the cheapest way DuckDB splits lines) and each is parsed
--   once by json_transform into spans whose attribute values stay JSON text; only the
--   values the analyzer reads are decoded, and each only on the spans of the stage that
--   writes it (otlp_* macros, schema.sql). A line that is not valid OTLP JSON yields no
--   span (TRY); each span keeps its line's hash and length, so _ingest.py can tell
--   whether every line of a file gave spans without reading the file again.
--   Spans from OpenInference auto-instrumentation alone (no citeline.* keys) get the
--   stage their span kind implies: RETRIEVER -> retrieval (retrieval.documents.N: id,
--   content, metadata), RERANKER -> context (reranker.output_documents.N), LLM ->
--   generation (answer = first output message, else output.value; the prompt it was given
--   kept in oi_prompt), a root span -> request (question = input.value). Which of those
--   spans count and what they mean is decided at analysis (analyzer/sources/openinference.py).
--   Spans of OpenTelemetry's GenAI conventions alone (no citeline.* or openinference.* keys) get the
--   stage their operation implies: gen_ai.operation.name chat / text_completion / generate_content
--   (or OpenLLMetry's older llm.request.type) -> generation, its prompt and answer read from the
--   flattened gen_ai.prompt.N / gen_ai.completion.N here, or from the message attributes
--   (gen_ai.system_instructions, gen_ai.input.messages, gen_ai.output.messages, kept raw in
--   genai_system / genai_input / genai_output for analyzer/sources/genai.py, which fills prompt and
--   answer before the spans are stored); retrieval (gen_ai.retrieval.documents) or a span with
--   db.query.result events (OpenLLMetry's vector stores) -> retrieval, whose documents are read
--   like OpenInference's (id, content, metadata).
--   A span's GenAI content captured as log records (the `logs` table, analyzer/sources/logs.py) is
--   added to its attributes here, only the keys the span lacks, so it decodes as if the content had
--   been captured on the span (log_records, log_keys say what joined).
--   store_spans.sql then stores each span once (however often its line was read) and
--   records which traces each file holds (file_traces).
-- Grain: one row per span per line read (a line read twice gives its spans twice). The genai_*
--   columns live in t_batch only (store_spans.sql leaves them out).
-- Parameters: $files (VARCHAR[]: paths, plain or .gz), $max_line (BIGINT: longest line read, bytes;
--   a longer one is skipped and named by _ingest.py).
CREATE OR REPLACE TEMP TABLE t_batch AS
WITH lines AS (
    SELECT filename,
           hash(json) AS line_hash,
           strlen(json) AS line_bytes,     -- bytes, not characters
           -- a line that holds a citeline context span (as citeline's exporter writes it) needs no chunk
           -- text: the context was traced. Cheap to test on the raw line, and it keeps content-heavy
           -- traffic from storing every chunk's text twice
           contains(json, '{"key":"citeline.stage","value":{"stringValue":"context"}}') AS traced_context,
           TRY(json_transform(json, '{"resourceSpans":[{"resource":{"attributes":[{"key":"VARCHAR","value":"JSON"}]},"scopeSpans":[{"spans":[{"traceId":"VARCHAR","spanId":"VARCHAR","parentSpanId":"VARCHAR","name":"VARCHAR","startTimeUnixNano":"VARCHAR","endTimeUnixNano":"VARCHAR","status":{"code":"INTEGER"},"attributes":[{"key":"VARCHAR","value":"JSON"}],"events":[{"name":"VARCHAR","attributes":[{"key":"VARCHAR","value":"JSON"}]}]}]}]}]}')) AS doc
    FROM read_csv($files, columns = {'json': 'VARCHAR'}, delim = chr(1), quote = '', escape = '',
                  header = false, auto_detect = false, strict_mode = false, ignore_errors = true,
                  max_line_size = $max_line, buffer_size = 2 * $max_line,
                  filename = true, compression = 'auto')
),
resource_spans AS (
    SELECT filename, line_hash, line_bytes, traced_context, unnest(doc.resourceSpans) AS rs FROM lines
),
scope_spans AS (
    SELECT filename, line_hash, line_bytes, traced_context,
           otlp_string(otlp_value(list_transform(rs.resource.attributes, lambda x: x.key),
                                  list_transform(rs.resource.attributes, lambda x: x.value), 'service.name')) AS service,
           unnest(rs.scopeSpans) AS ss
    FROM resource_spans
),
raw_spans AS (
    SELECT filename, line_hash, line_bytes, traced_context, service, unnest(ss.spans) AS s FROM scope_spans
),
log_entries AS (  -- GenAI content log records, one row per attribute each carries for its span
    SELECT trace_id, span_id, kind, time_ns, line_hash AS l_hash, seq, unnest(content) AS kv
    FROM logs WHERE trace_id IS NOT NULL AND span_id IS NOT NULL
),
log_values AS (   -- one value per (span, key): a details record's (the first), else the messages in time order
    SELECT trace_id, span_id, kv.key AS key,
           coalesce(arg_min(kv.value, (time_ns, l_hash, seq)) FILTER (WHERE kind = 'details'),
                    '{"stringValue":' || to_json('[' || string_agg(kv.value, ',' ORDER BY time_ns, l_hash, seq)
                                                            FILTER (WHERE kind <> 'details') || ']') || '}') AS value
    FROM log_entries GROUP BY ALL
),
log_content AS (
    SELECT v.trace_id, v.span_id, n.records,
           list({'key': v.key, 'value': v.value::JSON} ORDER BY v.key) AS attrs
    FROM log_values AS v
    JOIN (SELECT trace_id, span_id, count(*)::INTEGER AS records FROM logs GROUP BY ALL) AS n USING (trace_id, span_id)
    GROUP BY ALL
),
with_logs AS (    -- each span with the log content it lacks appended to its attributes
    SELECT r.* EXCLUDE (s),
           CASE WHEN c.attrs IS NULL THEN r.s ELSE struct_update(r.s, attributes := list_concat(r.s.attributes,
               list_filter(c.attrs, lambda a: NOT coalesce(list_contains(list_transform(r.s.attributes, lambda x: x.key), a.key), false))))
           END AS s,
           c.records AS log_records,
           CASE WHEN c.attrs IS NOT NULL THEN list_transform(list_filter(c.attrs,
               lambda a: NOT coalesce(list_contains(list_transform(r.s.attributes, lambda x: x.key), a.key), false)), lambda a: a.key)
           END AS log_keys
    FROM raw_spans AS r
    LEFT JOIN log_content AS c ON c.trace_id = lower(r.s.traceId) AND c.span_id = lower(r.s.spanId)
),
keyed AS (       -- attribute keys and values as two parallel lists; the stage first
    SELECT filename, line_hash, line_bytes, traced_context, service, s, log_records, log_keys,
           list_transform(s.attributes, lambda x: x.key) AS k,
           list_transform(s.attributes, lambda x: x.value) AS v,
           otlp_string(otlp_value(k, v, 'citeline.stage')) AS k_stage
    FROM with_logs
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
        otlp_string(otlp_value(k, v, 'citeline.schema_version')) AS schema_version,
        k_stage AS stage,
        CASE WHEN k_stage IS NULL THEN otlp_string(otlp_value(k, v, 'openinference.span.kind')) END AS oi_kind,
        CASE WHEN k_stage = 'request' THEN otlp_string(otlp_value(k, v, 'citeline.request.question')) END AS question,
        CASE WHEN k_stage = 'request' THEN otlp_string(otlp_value(k, v, 'citeline.request.case_id')) END AS case_id,
        CASE WHEN k_stage = 'request' THEN otlp_strings(otlp_value(k, v, 'citeline.request.principal.groups')) END AS principal_groups,
        CASE WHEN k_stage = 'request' THEN otlp_string(otlp_value(k, v, 'citeline.request.as_of')) END AS as_of,
        CASE WHEN k_stage IN ('retrieval', 'context') THEN otlp_strings(otlp_value(k, v, 'citeline.chunks.chunk_id')) END AS chunk_id,
        CASE WHEN k_stage = 'retrieval' THEN otlp_strings(otlp_value(k, v, 'citeline.chunks.content_hash')) END AS chunk_hash,
        -- (a context span's versions too: with its chunk ids and labels, the label map it gives)
        CASE WHEN k_stage IN ('retrieval', 'context') THEN otlp_strings(otlp_value(k, v, 'citeline.chunks.version')) END
            AS chunk_version,
        CASE WHEN k_stage = 'retrieval' THEN TRY_CAST(otlp_value(k, v, 'citeline.chunks.derived_ids') ->> '$.intValue' AS INTEGER) END AS derived_ids,
        -- the text of each retrieved chunk when the app records content: a context nobody traced
        -- is read off the generation's prompt with it (sources.py)
        CASE WHEN k_stage = 'retrieval' AND NOT traced_context THEN otlp_strings(otlp_value(k, v, 'citeline.chunks.text')) END AS chunk_text,
        -- how many retrieved chunks have no OpenInference document on the span (its attribute limit):
        -- Phoenix holds documents only for the others
        CASE WHEN k_stage = 'retrieval' THEN TRY_CAST(otlp_value(k, v, 'citeline.openinference.documents_omitted') ->> '$.intValue' AS INTEGER) END AS docs_omitted,
        -- the prompt a citeline generation span was given (input.value, only with content on), when the
        -- context was not traced
        CASE WHEN k_stage = 'generation' AND NOT traced_context THEN otlp_string(otlp_value(k, v, 'input.value')) END AS cl_prompt,
        CASE WHEN k_stage = 'generation' THEN otlp_string(otlp_value(k, v, 'citeline.generation.answer')) END AS answer,
        CASE WHEN k_stage = 'generation' THEN otlp_string(otlp_value(k, v, 'citeline.generation.format')) END AS answer_format,
        CASE WHEN k_stage = 'generation' THEN TRY_CAST(otlp_value(k, v, 'citeline.generation.abstained') ->> '$.boolValue' AS BOOLEAN) END AS abstained,
        CASE WHEN k_stage = 'generation' THEN otlp_strings(otlp_value(k, v, 'citeline.generation.claims.text')) END AS claim_text,
        CASE WHEN k_stage = 'generation' THEN otlp_ints(otlp_value(k, v, 'citeline.generation.evidence.claim_index')) END AS evidence_claim,
        CASE WHEN k_stage = 'generation' THEN otlp_strings(otlp_value(k, v, 'citeline.generation.evidence.chunk_id')) END AS evidence_chunk,
        CASE WHEN k_stage = 'generation' THEN otlp_strings(otlp_value(k, v, 'citeline.generation.evidence.quote')) END AS evidence_quote,
        -- the label map: as the generation span recorded it in force, and as the context span gave it
        -- (the map of a generation another source traced: an instrumentor's LLM span after @context_assembly).
        -- A context span's map is its labels beside its chunk_id and chunk_version, not a second copy of them
        -- (run_traces.sql pairs them; a store ingested before kept the copy in map_chunk_id / map_version)
        CASE WHEN k_stage = 'generation' THEN otlp_strings(otlp_value(k, v, 'citeline.generation.context.label'))
             WHEN k_stage = 'context' THEN otlp_strings(otlp_value(k, v, 'citeline.chunks.label')) END AS map_label,
        CASE WHEN k_stage = 'generation' THEN otlp_strings(otlp_value(k, v, 'citeline.generation.context.chunk_id'))
        END AS map_chunk_id,
        CASE WHEN k_stage = 'generation' THEN otlp_strings(otlp_value(k, v, 'citeline.generation.context.version'))
        END AS map_version,
        CASE WHEN k_stage = 'resolution' THEN otlp_strings(otlp_value(k, v, 'citeline.resolution.marker')) END AS res_marker,
        CASE WHEN k_stage = 'resolution' THEN otlp_strings(otlp_value(k, v, 'citeline.resolution.chunk_id')) END AS res_chunk_id,
        CASE WHEN k_stage = 'resolution' THEN otlp_strings(otlp_value(k, v, 'citeline.resolution.version')) END AS res_version,
        CASE WHEN k_stage = 'resolution' THEN otlp_strings(otlp_value(k, v, 'citeline.resolution.uri')) END AS res_uri,
        CASE WHEN k_stage = 'render' THEN otlp_strings(otlp_value(k, v, 'citeline.render.label')) END AS ren_label,
        CASE WHEN k_stage = 'render' THEN otlp_strings(otlp_value(k, v, 'citeline.render.uri')) END AS ren_uri,
        CASE WHEN k_stage = 'render' THEN otlp_strings(otlp_value(k, v, 'citeline.render.chunk_id')) END AS ren_chunk_id,
        -- what the page showed with each link: a title and a preview can leak a restricted document too
        CASE WHEN k_stage = 'render' THEN otlp_strings(otlp_value(k, v, 'citeline.render.title')) END AS ren_title,
        CASE WHEN k_stage = 'render' THEN otlp_strings(otlp_value(k, v, 'citeline.render.preview')) END AS ren_preview,
        -- who may see each retrieved chunk, as the app's index says (groups flattened, a count per chunk)
        CASE WHEN k_stage = 'retrieval' THEN otlp_strings(otlp_value(k, v, 'citeline.chunks.acl_group')) END AS acl_group,
        CASE WHEN k_stage = 'retrieval' THEN otlp_ints(otlp_value(k, v, 'citeline.chunks.acl_count')) END AS acl_count,
        -- each retrieved chunk's link and title: a URL or a title the answer names must come from a source
        CASE WHEN k_stage = 'retrieval' THEN otlp_strings(otlp_value(k, v, 'citeline.chunks.uri')) END AS chunk_uri,
        CASE WHEN k_stage = 'retrieval' THEN otlp_strings(otlp_value(k, v, 'citeline.chunks.title')) END AS chunk_title,
        otlp_string(otlp_value(k, v, 'citeline.adapter_error')) AS adapter_error,
        -- a user's report on the answer (citeline.feedback events, any span of the trace): text, claim, chunk
        CASE WHEN len(s.events) > 0 THEN list_filter(s.events, lambda e: e.name = 'citeline.feedback') END AS fb,
        CASE WHEN len(fb) > 0 THEN list_transform(fb, lambda e: coalesce(otlp_string(otlp_value(
            list_transform(e.attributes, lambda a: a.key), list_transform(e.attributes, lambda a: a.value),
            'citeline.feedback.text')), '')) END AS feedback_text,
        CASE WHEN len(fb) > 0 THEN list_transform(fb, lambda e: coalesce(otlp_string(otlp_value(
            list_transform(e.attributes, lambda a: a.key), list_transform(e.attributes, lambda a: a.value),
            'citeline.feedback.claim')), '')) END AS feedback_claim,
        CASE WHEN len(fb) > 0 THEN list_transform(fb, lambda e: coalesce(otlp_string(otlp_value(
            list_transform(e.attributes, lambda a: a.key), list_transform(e.attributes, lambda a: a.value),
            'citeline.feedback.chunk_id')), '')) END AS feedback_chunk,
        CASE WHEN k_stage IS NULL THEN otlp_string(otlp_value(k, v, 'input.value')) END AS input_value,
        CASE WHEN k_stage IS NULL THEN otlp_string(otlp_value(k, v, 'output.value')) END AS output_value,
        -- OpenInference documents, one entry per N in key order: id ('' when the instrumentor
        -- wrote none, as LangChain's does), content and metadata (JSON text) as parallel lists
        CASE WHEN oi_kind IN ('RETRIEVER', 'RERANKER') THEN
            CASE oi_kind WHEN 'RETRIEVER' THEN 'retrieval.documents.' ELSE 'reranker.output_documents.' END
        END AS oi_doc_key,
        CASE WHEN oi_doc_key IS NOT NULL THEN
            list_sort(list_distinct(list_transform(list_filter(k, lambda x: starts_with(x, oi_doc_key)),
                                                   lambda x: TRY_CAST(split_part(x, '.', 3) AS INTEGER))))
        END AS oi_doc_n,
        list_transform(oi_doc_n, lambda n: coalesce(otlp_string(otlp_value(k, v, oi_doc_key || n || '.document.id')), '')) AS oi_doc_id,
        list_transform(oi_doc_n, lambda n: coalesce(otlp_string(otlp_value(k, v, oi_doc_key || n || '.document.content')), '')) AS oi_doc_text,
        list_transform(oi_doc_n, lambda n: coalesce(otlp_string(otlp_value(k, v, oi_doc_key || n || '.document.metadata')), '')) AS oi_doc_meta,
        -- an OpenInference LLM span: what the model was given (its input messages in order, else
        -- its prompts, else input.value) and what it answered (its first output message, else output.value)
        CASE WHEN oi_kind = 'LLM' THEN coalesce(
            nullif(array_to_string(list_transform(list_sort(list_transform(
                list_filter(s.attributes, lambda x: x.key LIKE 'llm.input_messages.%.message.content'),
                lambda x: {'n': TRY_CAST(split_part(x.key, '.', 3) AS INTEGER), 't': otlp_string(x.value)})),
                lambda x: x.t), chr(10) || chr(10)), ''),
            nullif(array_to_string(otlp_strings(otlp_value(k, v, 'llm.prompts')), chr(10) || chr(10)), ''),
            otlp_string(otlp_value(k, v, 'input.value')))
        END AS oi_prompt,
        CASE WHEN oi_kind = 'LLM' THEN coalesce(
            list_transform(list_sort(list_transform(
                list_filter(s.attributes, lambda x: x.key LIKE 'llm.output_messages.%.message.content'),
                lambda x: {'n': TRY_CAST(split_part(x.key, '.', 3) AS INTEGER), 't': otlp_string(x.value)})),
                lambda x: x.t)[1],
            -- an answer given as a tool/function call: its arguments (JSON, read as a structured answer)
            otlp_string(otlp_value(k, v, 'llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments')))
        END AS oi_output,
        -- OpenTelemetry GenAI conventions (neither citeline's nor OpenInference's keys): what the span is
        CASE WHEN k_stage IS NULL AND oi_kind IS NULL THEN otlp_string(otlp_value(k, v, 'gen_ai.operation.name')) END
            AS genai_op,
        -- OpenLLMetry's vector-store hits, one db.query.result event each
        CASE WHEN k_stage IS NULL AND oi_kind IS NULL AND len(s.events) > 0 THEN
            list_filter(s.events, lambda e: e.name = 'db.query.result')
        END AS db_hits,
        CASE WHEN k_stage IS NOT NULL OR oi_kind IS NOT NULL THEN NULL
             WHEN genai_op IN ('chat', 'text_completion', 'generate_content') THEN 'inference'
             WHEN genai_op IS NULL AND otlp_string(otlp_value(k, v, 'llm.request.type')) IN ('chat', 'completion')
                 THEN 'inference'
             WHEN genai_op = 'retrieval' OR len(db_hits) > 0 THEN 'retrieval'
        END AS genai_kind,
        -- a GenAI retrieval span's documents (JSON: id, score, content when captured), else its hits
        CASE WHEN genai_kind = 'retrieval' THEN TRY(json_transform(
            otlp_string(otlp_value(k, v, 'gen_ai.retrieval.documents')),
            '[{"id":"VARCHAR","content":"VARCHAR","metadata":"JSON"}]'))
        END AS g_docs,
        CASE WHEN genai_kind = 'retrieval' THEN coalesce(
            list_transform(g_docs, lambda d: coalesce(d.id, '')),
            list_transform(db_hits, lambda e: coalesce(otlp_event_string(e, 'db.query.result.id'), '')))
        END AS g_doc_id,
        CASE WHEN genai_kind = 'retrieval' THEN coalesce(
            list_transform(g_docs, lambda d: coalesce(d.content, '')),
            list_transform(db_hits, lambda e: coalesce(otlp_event_string(e, 'db.query.result.document'), '')))
        END AS g_doc_text,
        CASE WHEN genai_kind = 'retrieval' THEN coalesce(
            list_transform(g_docs, lambda d: coalesce(CAST(d.metadata AS VARCHAR), '')),
            list_transform(db_hits, lambda e: coalesce(otlp_event_string(e, 'db.query.result.metadata'), '')))
        END AS g_doc_meta,
        -- a GenAI inference span: the message attributes as recorded (a JSON string, or the structured
        -- value a log record carries when its attributes were merged onto the span), read by genai.py
        CASE WHEN genai_kind = 'inference' THEN CAST(otlp_value(k, v, 'gen_ai.system_instructions') AS VARCHAR) END
            AS genai_system,
        CASE WHEN genai_kind = 'inference' THEN CAST(otlp_value(k, v, 'gen_ai.input.messages') AS VARCHAR) END
            AS genai_input,
        CASE WHEN genai_kind = 'inference' THEN CAST(otlp_value(k, v, 'gen_ai.output.messages') AS VARCHAR) END
            AS genai_output,
        -- ... or the older flattened form (OpenLLMetry): gen_ai.prompt.N.content in order, the first
        -- gen_ai.completion.N.content, else the first tool call's arguments (read as a structured answer)
        CASE WHEN genai_kind = 'inference' THEN nullif(array_to_string(list_transform(list_sort(list_transform(
            list_filter(s.attributes, lambda x: regexp_full_match(x.key, 'gen_ai\.prompt\.[0-9]+\.content')),
            lambda x: {'n': TRY_CAST(split_part(x.key, '.', 3) AS INTEGER), 't': otlp_string(x.value)})),
            lambda x: x.t), chr(10) || chr(10)), '')
        END AS genai_flat_prompt,
        CASE WHEN genai_kind = 'inference' THEN coalesce(
            list_transform(list_sort(list_transform(
                list_filter(s.attributes, lambda x: regexp_full_match(x.key, 'gen_ai\.completion\.[0-9]+\.content')),
                lambda x: {'n': TRY_CAST(split_part(x.key, '.', 3) AS INTEGER), 't': otlp_string(x.value)})),
                lambda x: x.t)[1],
            otlp_string(otlp_value(k, v, 'gen_ai.completion.0.tool_calls.0.arguments')),
            otlp_string(otlp_value(k, v, 'gen_ai.completion.0.function_call.arguments')))
        END AS genai_flat_answer,
        log_records,
        log_keys,
        filename AS source_file,
        line_hash,
        line_bytes
    FROM keyed
),
staged AS (
    SELECT
        *,
        coalesce(stage, CASE
            WHEN oi_kind = 'RETRIEVER' THEN 'retrieval'
            WHEN oi_kind = 'RERANKER' THEN 'context'
            WHEN oi_kind = 'LLM' THEN 'generation'
            WHEN genai_kind = 'inference' THEN 'generation'
            WHEN genai_kind = 'retrieval' THEN 'retrieval'
            WHEN parent_span_id IS NULL THEN 'request'
        END) AS stage_final
    FROM picked
)
SELECT
    trace_id, span_id, parent_span_id, name, service, start_ns, end_ns, status_code,
    schema_version,
    stage_final AS stage,
    CASE WHEN stage IS NULL AND stage_final = 'request' THEN input_value ELSE question END AS question,
    case_id, principal_groups, as_of,
    CASE WHEN stage IS NULL AND stage_final IN ('retrieval', 'context') THEN coalesce(oi_doc_id, g_doc_id)
         ELSE chunk_id END AS chunk_id,
    chunk_hash, chunk_version, derived_ids, chunk_text, docs_omitted,
    CASE WHEN stage IS NULL AND stage_final IN ('retrieval', 'context') THEN coalesce(oi_doc_text, g_doc_text) END
        AS oi_doc_text,
    CASE WHEN stage IS NULL AND stage_final IN ('retrieval', 'context') THEN coalesce(oi_doc_meta, g_doc_meta) END
        AS oi_doc_meta,
    -- the prompt of a generation span, whichever source wrote it
    CASE WHEN stage IS NULL AND stage_final = 'generation' THEN coalesce(oi_prompt, genai_flat_prompt)
         ELSE cl_prompt END AS oi_prompt,
    CASE WHEN stage IS NULL AND stage_final = 'generation' THEN coalesce(oi_output, genai_flat_answer, output_value)
         ELSE answer END AS answer,
    CASE WHEN stage IS NULL AND stage_final = 'generation' THEN 'prose' ELSE answer_format END AS answer_format,
    abstained, claim_text, evidence_claim, evidence_chunk, evidence_quote,
    map_label, map_chunk_id, map_version,
    res_marker, res_chunk_id, res_version, res_uri,
    ren_label, ren_uri, ren_chunk_id, ren_title, ren_preview, acl_group, acl_count, chunk_uri, chunk_title,
    adapter_error, feedback_text, feedback_claim, feedback_chunk, source_file, line_hash, line_bytes,
    genai_kind, genai_system, genai_input, genai_output, log_records, log_keys
FROM staged;
