-- run_buckets.sql: the run's claims per bucket (the summary analyze prints).
-- Grain: one row per bucket that occurred. Parameters: $run_id. Reads: claim_results.
SELECT bucket, count(*) AS claims FROM claim_results WHERE run_id = $run_id GROUP BY bucket
