-- schema.sql: the tables of a citeline store (DuckDB file).
-- Grain: see each table. Idempotent: safe to run on every open.
-- Parameters: none.

CREATE TABLE IF NOT EXISTS meta (key VARCHAR PRIMARY KEY, value VARCHAR);

-- The bucket table (analyzer/buckets.py, the one definition), written from there whenever a store
-- is opened (and kept up to date in older stores). bucket_order: the buckets in repair order, most
-- urgent first (verdicts and reports sort by it), each with the classify.sql flag that raises it and
-- its report colour; bucket_reasons: each reason a bucket gives, the stage it blames and its words
-- ({detail} filled by classify.sql).
CREATE TABLE IF NOT EXISTS bucket_order (bucket VARCHAR PRIMARY KEY, position INTEGER NOT NULL);
ALTER TABLE bucket_order ADD COLUMN IF NOT EXISTS flag VARCHAR;
ALTER TABLE bucket_order ADD COLUMN IF NOT EXISTS color VARCHAR;
CREATE TABLE IF NOT EXISTS bucket_reasons (bucket VARCHAR, variant VARCHAR, stage VARCHAR, template VARCHAR);

-- The OTLP attribute helpers ingest_spans.sql reads values with; stored in the file so the
-- query also runs in the duckdb CLI. `v` is an attribute value kept as JSON text.
CREATE OR REPLACE MACRO otlp_value(keys, vals, name) AS vals[list_position(keys, name)];
CREATE OR REPLACE MACRO otlp_string(v) AS v ->> '$.stringValue';
-- A string array as every OTLP/JSON writer encodes it: citeline's exporter writes an empty array
-- as {"arrayValue":{"values":[]}}, the Collector's protobuf JSON as {"arrayValue":{}} (empty fields
-- omitted) and an empty string element as {}. All of them are an empty array or '', never NULL:
-- NULL means the attribute is absent (unknown), which is not the same as empty (a guest's groups).
CREATE OR REPLACE MACRO otlp_array(v) AS
    json_transform(v, '{"arrayValue":{"values":[{"stringValue":"VARCHAR"}]}}').arrayValue;
-- (the lists read first: the empty-array test runs only on the rows where that gave NULL)
CREATE OR REPLACE MACRO otlp_strings(v) AS
    coalesce(list_transform(otlp_array(v).values, lambda x: coalesce(x.stringValue, '')),
             CASE WHEN otlp_array(v) IS NOT NULL THEN []::VARCHAR[] END);
-- one attribute of a span event (e: {name, attributes: [{key, value}]}) as a string
CREATE OR REPLACE MACRO otlp_event_string(e, name) AS
    otlp_string(otlp_value(list_transform(e.attributes, lambda a: a.key), list_transform(e.attributes, lambda a: a.value), name));
CREATE OR REPLACE MACRO otlp_int_array(v) AS
    json_transform(v, '{"arrayValue":{"values":[{"intValue":"VARCHAR"}]}}').arrayValue;
CREATE OR REPLACE MACRO otlp_ints(v) AS
    coalesce(list_transform(otlp_int_array(v).values,
                            lambda x: CASE WHEN x.intValue IS NULL THEN 0 ELSE TRY_CAST(x.intValue AS BIGINT) END),
             CASE WHEN otlp_int_array(v) IS NOT NULL THEN []::BIGINT[] END);

-- Set tests over small lists (a support bundle in what a stage saw, a citation among the
-- evidence). Written with list_contains: 5-8x faster than list_has_all / list_has_any,
-- which hash both lists on every call. A NULL list holds nothing.
CREATE OR REPLACE MACRO all_in(items, hay) AS
    coalesce(list_bool_and(list_transform(items, lambda x: coalesce(list_contains(hay, x), false))), true);
CREATE OR REPLACE MACRO any_in(items, hay) AS
    coalesce(list_bool_or(list_transform(items, lambda x: coalesce(list_contains(hay, x), false))), false);

-- one row per span, holding what the analyzer reads; lists are parallel arrays exactly
-- as the trace schema records them. The rest of each span (uris and titles of every
-- retrieved chunk, hashes, OpenInference documents) stays in the trace files and Phoenix.
CREATE TABLE IF NOT EXISTS spans (
    trace_id VARCHAR NOT NULL,
    span_id VARCHAR NOT NULL,
    parent_span_id VARCHAR,
    name VARCHAR,
    service VARCHAR,
    start_ns BIGINT,
    end_ns BIGINT,
    status_code INTEGER,
    schema_version VARCHAR,
    stage VARCHAR,
    question VARCHAR,
    case_id VARCHAR,
    principal_groups VARCHAR[],
    as_of VARCHAR,
    chunk_id VARCHAR[],
    answer VARCHAR,
    answer_format VARCHAR,
    abstained BOOLEAN,
    claim_text VARCHAR[],
    evidence_claim BIGINT[],
    evidence_chunk VARCHAR[],
    evidence_quote VARCHAR[],
    map_label VARCHAR[],
    map_chunk_id VARCHAR[],
    map_version VARCHAR[],
    res_marker VARCHAR[],
    res_chunk_id VARCHAR[],
    res_version VARCHAR[],
    res_uri VARCHAR[],
    ren_label VARCHAR[],
    ren_uri VARCHAR[],
    ren_chunk_id VARCHAR[],
    adapter_error VARCHAR,
    source_file VARCHAR,
    line_hash UBIGINT,    -- the line of source_file the span came from: its hash and length in bytes,
    line_bytes BIGINT     -- so ingest can check that every line of a file was read (see _ingest.py)
);
ALTER TABLE spans ADD COLUMN IF NOT EXISTS line_hash UBIGINT;
-- retrieval spans: what the index served under each id (content hash, version) and how many
-- ids the instrumentation derived because the app gave none (identity by content, drift); context spans
-- keep their versions in chunk_version too, and their label map as map_label beside chunk_id and
-- chunk_version (map_chunk_id and map_version are the generation span's; a store ingested before
-- copied a context span's ids and versions there as well)
ALTER TABLE spans ADD COLUMN IF NOT EXISTS chunk_hash VARCHAR[];
ALTER TABLE spans ADD COLUMN IF NOT EXISTS chunk_version VARCHAR[];
ALTER TABLE spans ADD COLUMN IF NOT EXISTS derived_ids INTEGER;
ALTER TABLE spans ADD COLUMN IF NOT EXISTS line_bytes BIGINT;
-- OpenInference spans without citeline keys (zero-code adoption, docs/openinference.md):
-- a retriever's or reranker's documents (content and metadata JSON, parallel to chunk_id)
-- and the prompt an LLM span was given; NULL on citeline's own spans
ALTER TABLE spans ADD COLUMN IF NOT EXISTS oi_doc_text VARCHAR[];
ALTER TABLE spans ADD COLUMN IF NOT EXISTS oi_doc_meta VARCHAR[];
ALTER TABLE spans ADD COLUMN IF NOT EXISTS oi_prompt VARCHAR;   -- (citeline generation spans too: input.value)
-- citeline retrieval spans: each chunk's text when the app records content, and how many chunks
-- have no OpenInference document on the span (Phoenix holds documents only for the rest)
ALTER TABLE spans ADD COLUMN IF NOT EXISTS chunk_text VARCHAR[];
ALTER TABLE spans ADD COLUMN IF NOT EXISTS docs_omitted INTEGER;
-- a user's reports on the answer (citeline.feedback span events): parallel lists, NULL without any
ALTER TABLE spans ADD COLUMN IF NOT EXISTS feedback_text VARCHAR[];
ALTER TABLE spans ADD COLUMN IF NOT EXISTS feedback_claim VARCHAR[];
ALTER TABLE spans ADD COLUMN IF NOT EXISTS feedback_chunk VARCHAR[];
-- render spans: the title and preview shown with each link; retrieval spans: each chunk's ACL as the
-- app's index gave it (acl_group flattened, acl_count per chunk, -1 for none)
ALTER TABLE spans ADD COLUMN IF NOT EXISTS ren_title VARCHAR[];
ALTER TABLE spans ADD COLUMN IF NOT EXISTS ren_preview VARCHAR[];
ALTER TABLE spans ADD COLUMN IF NOT EXISTS acl_group VARCHAR[];
ALTER TABLE spans ADD COLUMN IF NOT EXISTS acl_count BIGINT[];
-- retrieval spans: each chunk's uri and title (an answer's URLs, locators and titles are checked against them)
ALTER TABLE spans ADD COLUMN IF NOT EXISTS chunk_uri VARCHAR[];
ALTER TABLE spans ADD COLUMN IF NOT EXISTS chunk_title VARCHAR[];
-- spans whose GenAI content came as log records (analyzer/sources/logs.py): how many content records
-- joined the span when it was decoded, and the attribute keys they added (NULL: none joined)
ALTER TABLE spans ADD COLUMN IF NOT EXISTS log_records INTEGER;
ALTER TABLE spans ADD COLUMN IF NOT EXISTS log_keys VARCHAR[];

-- one row per GenAI content log record read (gen_ai.client.inference.operation.details, or the older
-- per-message gen_ai.*.message / gen_ai.choice events): what ingest_spans.sql adds to the attributes
-- of the span it names. kind: 'details' (content holds whole attributes), 'input' / 'output' (content
-- holds one message of gen_ai.input.messages / gen_ai.output.messages, in time order). Values are
-- OTLP AnyValue JSON exactly as a span attribute carries them. A record is stored once, however
-- often its line is read (line_hash, line_bytes, seq: its place in the line).
CREATE TABLE IF NOT EXISTS logs (
    trace_id VARCHAR,
    span_id VARCHAR,
    event_name VARCHAR,
    kind VARCHAR,
    time_ns BIGINT,
    seq INTEGER,
    content STRUCT("key" VARCHAR, "value" VARCHAR)[],
    source_file VARCHAR,
    line_hash UBIGINT,
    line_bytes BIGINT
);

-- one row per trace file read, with what was skipped
CREATE TABLE IF NOT EXISTS ingested_files (
    path VARCHAR,
    size BIGINT,
    lines BIGINT,
    spans_added BIGINT,
    skipped BIGINT,
    ingested_at TIMESTAMP
);

-- which traces each trace file holds (one row per (file, trace)): a run's scope
CREATE TABLE IF NOT EXISTS file_traces (
    source_file VARCHAR,
    trace_id VARCHAR
);
-- stores from before file_traces: each span's first file stands in for the files it was read from
INSERT INTO file_traces
SELECT DISTINCT source_file, trace_id FROM spans
WHERE NOT EXISTS (SELECT 1 FROM file_traces) AND NOT EXISTS (SELECT 1 FROM meta WHERE key = 'file_traces');
INSERT OR IGNORE INTO meta VALUES ('file_traces', 'filled');

-- one row per problem met while reading input (trace lines, spans, gold records)
CREATE TABLE IF NOT EXISTS input_problems (
    run_id VARCHAR,
    source VARCHAR,
    place VARCHAR,
    field VARCHAR,
    message VARCHAR,
    seen_at TIMESTAMP
);

-- one row per analyze run
CREATE TABLE IF NOT EXISTS runs (
    run_id VARCHAR PRIMARY KEY,
    started_at TIMESTAMP,
    finished_at TIMESTAMP,
    gold_source VARCHAR,
    judge VARCHAR,
    traces BIGINT,
    claims BIGINT,
    skipped BIGINT
);

-- coverage: one row per trace of a run that joined no gold case, and why
-- (unknown_case_id | question_not_in_gold | ambiguous (with its candidate cases) | no_request_span)
CREATE TABLE IF NOT EXISTS unmatched_traces (
    run_id VARCHAR,
    trace_id VARCHAR,
    reason VARCHAR,
    candidates VARCHAR[]
);

-- text of a run's answers that is no claim (a greeting, a heading, a list number, a reference list, ...:
-- analyzer/claims/policy.py names the kinds), counted per kind; a large run adds one row per kind and slice
CREATE TABLE IF NOT EXISTS run_skipped_text (
    run_id VARCHAR,
    kind VARCHAR,
    units BIGINT
);

-- coverage: one row per gold case no trace of the run answered
CREATE TABLE IF NOT EXISTS missing_cases (
    run_id VARCHAR,
    case_id VARCHAR
);

-- one row per (run, trace, gold claim) and per unmatched generated claim
CREATE TABLE IF NOT EXISTS claim_results (
    run_id VARCHAR,
    trace_id VARCHAR,
    case_id VARCHAR,
    gold_claim_id VARCHAR,
    claim_text VARCHAR,
    bucket VARCHAR,
    stage VARCHAR,
    span_id VARCHAR,
    flags VARCHAR[],
    reason VARCHAR,
    support_label VARCHAR,
    cited_chunks VARCHAR[],
    trace_started_at TIMESTAMP,
    evidence_needed BOOLEAN,
    evidence_retrieved BOOLEAN,
    evidence_in_context BOOLEAN,
    evidence_cited BOOLEAN,
    evidence_resolved BOOLEAN,
    evidence_rendered BOOLEAN,
    n_citations INTEGER,
    n_invalid INTEGER,
    n_aligned INTEGER,
    expect VARCHAR,
    abstained BOOLEAN
);

-- one row per (run, trace): the case verdict, the first bucket of its claims
CREATE TABLE IF NOT EXISTS case_results (
    run_id VARCHAR,
    trace_id VARCHAR,
    case_id VARCHAR,
    verdict VARCHAR,
    expect VARCHAR,
    abstained BOOLEAN
);

-- the gold support chunks of each case, as a run read them: annotate marks each retrieved
-- document as support or not (Phoenix's retrieval metrics)
CREATE TABLE IF NOT EXISTS run_support (
    run_id VARCHAR,
    case_id VARCHAR,
    chunk_ids VARCHAR[]
);

-- retrieval spans whose chunk ids a run read as other gold ids (OpenInference documents joined
-- by content, ids the instrumentation derived): the gold id of each document, in span order.
-- annotate writes each document's gold relevance by these, not by the id the span recorded
CREATE TABLE IF NOT EXISTS run_span_chunks (
    run_id VARCHAR,
    span_id VARCHAR,
    chunk_ids VARCHAR[]
);

-- users' reports on the answers of a run's traces (citeline.feedback span events): run_feedback.sql
CREATE TABLE IF NOT EXISTS run_feedback (
    run_id VARCHAR,
    trace_id VARCHAR,
    span_id VARCHAR,
    text VARCHAR,
    claim VARCHAR,
    chunk_id VARCHAR
);

-- the gold text of the chunks a run's failing claims cite or need: the report's drill-down shows it
CREATE TABLE IF NOT EXISTS run_chunks (
    run_id VARCHAR,
    chunk_id VARCHAR,
    text VARCHAR
);
-- (and every cited chunk's, with its version: what `citeline sample` shows a reviewer)
ALTER TABLE run_chunks ADD COLUMN IF NOT EXISTS version VARCHAR;

-- the claims people labelled in a run (analyze --labels), with the text of what each cites: what
-- `citeline calibrate --against-gold` measures a judge on
CREATE TABLE IF NOT EXISTS human_labelled (
    run_id VARCHAR,
    trace_id VARCHAR,
    claim_text VARCHAR,
    cited_chunks VARCHAR[],
    evidence VARCHAR[],
    human_label VARCHAR
);
-- labels read back from a `citeline sample` sheet: the run it was drawn from, and the judge's label
-- and bucket there (the report's agreement per bucket)
ALTER TABLE human_labelled ADD COLUMN IF NOT EXISTS sampled_run VARCHAR;
ALTER TABLE human_labelled ADD COLUMN IF NOT EXISTS judge_label VARCHAR;
ALTER TABLE human_labelled ADD COLUMN IF NOT EXISTS judge_bucket VARCHAR;

-- cached support judgments: (claim, evidence, judge, version) -> label
CREATE TABLE IF NOT EXISTS judgments (
    key VARCHAR PRIMARY KEY,
    judge VARCHAR,
    version VARCHAR,
    label VARCHAR,
    rationale VARCHAR
);

-- stores made before the funnel and citation metrics existed gain their columns (old rows keep NULL)
ALTER TABLE claim_results ADD COLUMN IF NOT EXISTS evidence_needed BOOLEAN;
ALTER TABLE claim_results ADD COLUMN IF NOT EXISTS evidence_retrieved BOOLEAN;
ALTER TABLE claim_results ADD COLUMN IF NOT EXISTS evidence_in_context BOOLEAN;
ALTER TABLE claim_results ADD COLUMN IF NOT EXISTS evidence_cited BOOLEAN;
ALTER TABLE claim_results ADD COLUMN IF NOT EXISTS evidence_resolved BOOLEAN;
ALTER TABLE claim_results ADD COLUMN IF NOT EXISTS evidence_rendered BOOLEAN;
ALTER TABLE claim_results ADD COLUMN IF NOT EXISTS n_citations INTEGER;
ALTER TABLE claim_results ADD COLUMN IF NOT EXISTS n_invalid INTEGER;
ALTER TABLE claim_results ADD COLUMN IF NOT EXISTS n_aligned INTEGER;
ALTER TABLE claim_results ADD COLUMN IF NOT EXISTS expect VARCHAR;
ALTER TABLE claim_results ADD COLUMN IF NOT EXISTS abstained BOOLEAN;
-- the judge's rationale for the claim's support label, and the span the answer was read from
-- (the drill-down shows both)
ALTER TABLE claim_results ADD COLUMN IF NOT EXISTS support_rationale VARCHAR;
ALTER TABLE claim_results ADD COLUMN IF NOT EXISTS generation_span VARCHAR;
ALTER TABLE case_results ADD COLUMN IF NOT EXISTS expect VARCHAR;
ALTER TABLE case_results ADD COLUMN IF NOT EXISTS abstained BOOLEAN;
-- coverage per run: traces read (NULL for older runs); runs.traces counts those joined to a case
ALTER TABLE runs ADD COLUMN IF NOT EXISTS traces_read BIGINT;
-- the evaluator of a run beside its judge: the gold set's content hash (another gold set, or the
-- same file edited, can change labels as the app does not); trends and regressions mark the change
ALTER TABLE runs ADD COLUMN IF NOT EXISTS gold_hash VARCHAR;
-- the basis a row was judged on: 'gold' (the trace joined a gold case: its claims, bundles and
-- expectation) or 'corpus' (no gold case: the corpus and the trace alone, docs/analyzer.md "Corpus
-- basis"). Rows of stores from before it were all judged against gold cases.
ALTER TABLE claim_results ADD COLUMN IF NOT EXISTS basis VARCHAR DEFAULT 'gold';
ALTER TABLE case_results ADD COLUMN IF NOT EXISTS basis VARCHAR DEFAULT 'gold';
-- what `citeline export` has sent (docs/otel-export.md): one row per (run, target, verdict), so a second
-- export of the same run to the same target sends nothing new. target is the OTLP logs endpoint with its
-- credentials shown as *** (or file:<absolute path>); verdict is the record's key (kind/case/claim/trace).
CREATE TABLE IF NOT EXISTS exported (
    run_id VARCHAR NOT NULL,
    target VARCHAR NOT NULL,
    verdict VARCHAR NOT NULL,
    trace_id VARCHAR,
    span_id VARCHAR,
    exported_at TIMESTAMP,
    PRIMARY KEY (run_id, target, verdict)
);
-- a partitioned run's rows live in Parquet files under the run's location (docs/scale-out.md, "Where a
-- run's rows live"): one row per file, registered by the driver once the run's manifest is written. Every
-- connection citeline opens reads each of the tables below as its own rows plus these files (a temp view
-- of the same name, citeline.analyzer.store.views).
CREATE TABLE IF NOT EXISTS run_files (
    run_id VARCHAR NOT NULL,
    tbl VARCHAR NOT NULL,
    path VARCHAR NOT NULL,
    row_count BIGINT,
    PRIMARY KEY (run_id, tbl, path)
);
