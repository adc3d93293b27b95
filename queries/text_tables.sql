-- text_tables.sql: the tables the run's Python steps fill (text work), declared once.
-- Purpose: Python reads texts and hands back columns; DuckDB types them as declared here
--   (analyzer/steps.py fill()), so no Python module repeats a column list. Each table names the
--   function that fills it and the grain of its rows.

-- the gold set (_joining.gold_tables): one row per corpus chunk, per case, per gold claim.
-- authority_rank: 1 primary, 2 secondary, 3 untrusted (_gold.AUTHORITY); NULL: not rated
CREATE OR REPLACE TEMP TABLE t_gold_chunks (
    chunk_id VARCHAR, doc_id VARCHAR, version VARCHAR, uri VARCHAR, title VARCHAR, text VARCHAR,
    status VARCHAR, effective_from DATE, effective_to DATE, acl VARCHAR[], content_hash VARCHAR,
    authority_rank INTEGER, untrusted BOOLEAN
);
CREATE OR REPLACE TEMP TABLE t_gold_cases (
    case_id VARCHAR, question_norm VARCHAR, as_of DATE, expect VARCHAR, principal_groups VARCHAR[],
    attach VARCHAR, require_rank INTEGER
);
CREATE OR REPLACE TEMP TABLE t_gold_claims (
    case_id VARCHAR, claim_id VARCHAR, text VARCHAR, facts VARCHAR[], bundles VARCHAR[][],
    contradicts VARCHAR[], evidence_ids VARCHAR[]
);

-- people's labels (_judging.load_human_labels): one row per labelled claim
CREATE OR REPLACE TEMP TABLE t_human (trace_id VARCHAR, claim_key VARCHAR, label VARCHAR, sampled_run VARCHAR);

-- each distinct question of a request without a case id, normalised (_joining.question_table)
CREATE OR REPLACE TEMP TABLE t_question_norm (question VARCHAR, question_norm VARCHAR);

-- OpenInference documents joined to gold chunks (_source_openinference.join_documents): one row per span
CREATE OR REPLACE TEMP TABLE t_oi_docs (trace_id VARCHAR, span_id VARCHAR, chunk_ids VARCHAR[], texts VARCHAR[]);

-- a context read off the generation's prompt (_prompt_context.read): one row per trace read
CREATE OR REPLACE TEMP TABLE t_prompt_context (
    trace_id VARCHAR, span_id VARCHAR, answer VARCHAR, is_generation BOOLEAN, context VARCHAR[],
    labels VARCHAR[], error VARCHAR
);

-- JSON answers as read (_structured.tables via _joining.json_answers): one row per distinct answer
CREATE OR REPLACE TEMP TABLE t_json_answers (
    answer VARCHAR, prose VARCHAR, claims VARCHAR[], ev_claim BIGINT[], refs VARCHAR[], norm_refs VARCHAR[],
    quotes VARCHAR[], abstained BOOLEAN, error VARCHAR
);

-- the policy of each distinct (label map, case attach) (_splitting.split_keys)
CREATE OR REPLACE TEMP TABLE t_policy_of (map_label VARCHAR[], attach VARCHAR, policy VARCHAR);

-- the splitter's output (_splitting.answer_tables), by split number (split_keys.sql):
-- each split's claims, its text that is no claim (units per kind), its reference list's entries,
-- whether it abstains, and each claim text's word and number sets
CREATE OR REPLACE TEMP TABLE t_answer_claims (
    split BIGINT, claim_idx BIGINT, text VARCHAR, labels VARCHAR[], factual BOOLEAN, joins BIGINT[]
);
CREATE OR REPLACE TEMP TABLE t_answer_skipped (split BIGINT, kind VARCHAR, units BIGINT);
CREATE OR REPLACE TEMP TABLE t_answer_refs (split BIGINT, label VARCHAR, text VARCHAR);
CREATE OR REPLACE TEMP TABLE t_split_abstain (split_id BIGINT, abstains BOOLEAN);
CREATE OR REPLACE TEMP TABLE t_text_sets (text VARCHAR, stems VARCHAR[], numbers VARCHAR[]);
-- the same for texts no splitter made (unsplit_texts.sql: structured claims, gold claims)
CREATE OR REPLACE TEMP TABLE t_more_sets (text VARCHAR, stems VARCHAR[], numbers VARCHAR[]);

-- the locators the slice's claims name, and those its sources have (_locators.tables)
CREATE OR REPLACE TEMP TABLE t_claim_locators (text VARCHAR, kind VARCHAR, value VARCHAR, shown VARCHAR);
CREATE OR REPLACE TEMP TABLE t_source_locators (text VARCHAR, kind VARCHAR, value VARCHAR);

-- the judge's verdicts (_judging.judge_tables): per matched gold claim, per cited unmatched claim,
-- and per corpus-basis claim against the rest of its context (joint: only with what it cites; named: the
-- source a report names, judged alone)
CREATE OR REPLACE TEMP TABLE t_judged_gold (
    case_id VARCHAR, claim_id VARCHAR, text VARCHAR, cited VARCHAR[], quotes VARCHAR[], label VARCHAR,
    rationale VARCHAR
);
CREATE OR REPLACE TEMP TABLE t_judged_cited (
    text VARCHAR, cited VARCHAR[], quotes VARCHAR[], label VARCHAR, rationale VARCHAR
);
CREATE OR REPLACE TEMP TABLE t_judged_context (
    text VARCHAR, cited VARCHAR[], others VARCHAR[], label VARCHAR, rationale VARCHAR, supporting VARCHAR[],
    joint BOOLEAN, named VARCHAR[]
);
-- calls to action resting only on sources rated below primary (_judging._untrusted_actions): one row per
-- (claim, cited, quotes) no gold claim took; low: each such chunk with its rating, "web#1 (secondary)"
CREATE OR REPLACE TEMP TABLE t_untrusted_action (
    text VARCHAR, cited VARCHAR[], quotes VARCHAR[], action VARCHAR, low VARCHAR[]
);
-- reports of one source that another source in the same answer contradicts (_judging._source_conflicts):
-- one row per claim, with the chunks of the other sources
CREATE OR REPLACE TEMP TABLE t_source_conflicts (trace_id VARCHAR, claim_idx BIGINT, sources VARCHAR[]);
-- judgments new to the cache, before they join it (_judging.CachedJudge.flush)
CREATE OR REPLACE TEMP TABLE t_new_judgments (
    key VARCHAR, judge VARCHAR, version VARCHAR, label VARCHAR, rationale VARCHAR
);

-- what the run met that it names (analyze: trace files, gold set, labels): run_problems.sql
CREATE OR REPLACE TEMP TABLE t_problems (source VARCHAR, place VARCHAR, field VARCHAR, message VARCHAR);

-- GenAI inference spans' message attributes as read (sources/genai.py at ingest): one row per
-- distinct (system instructions, input messages, output messages), each the value's OTLP/JSON text
CREATE OR REPLACE TEMP TABLE t_genai_read (
    system VARCHAR, inputs VARCHAR, outputs VARCHAR, prompt VARCHAR, answer VARCHAR, error VARCHAR
);

-- the log lines one ingest read (sources/logs.py): a file whose lines all gave spans or log records was
-- read whole (coverage); one row per line read
CREATE OR REPLACE TEMP TABLE t_log_lines (
    source_file VARCHAR, line_hash UBIGINT, line_bytes BIGINT, records INTEGER, content INTEGER
);

-- the GenAI inference spans one ingest could not read so far (sources/genai.py note/problems): dropped
-- when the ingest names them
CREATE OR REPLACE TEMP TABLE t_genai_unread (
    source_file VARCHAR, trace_id VARCHAR, span_id VARCHAR, adapter_error VARCHAR
);
