-- run_row.sql: the run's row in runs.
-- Purpose: traces is the traces that joined a gold case (case_results on the gold basis),
--   claims every classified claim, traces_read every trace the run read.
-- Grain: one row. Parameters: $run_id, $started_at, $finished_at (TIMESTAMP), $gold_source,
--   $judge, $gold_hash (VARCHAR), $skipped, $traces_read (BIGINT).
-- Reads: claim_results, case_results.
-- Writes: runs (append)
SELECT $run_id AS run_id, $started_at::TIMESTAMP AS started_at, $finished_at::TIMESTAMP AS finished_at,
       $gold_source AS gold_source, $judge AS judge,
       (SELECT count(*) FROM case_results WHERE run_id = $run_id AND basis = 'gold') AS traces,
       (SELECT count(*) FROM claim_results WHERE run_id = $run_id) AS claims,
       $skipped::BIGINT AS skipped, $traces_read::BIGINT AS traces_read, $gold_hash AS gold_hash
