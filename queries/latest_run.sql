-- latest_run.sql: the most recent analyze run in the store.
-- Grain: zero or one row.
-- Parameters: none.
SELECT run_id, started_at
FROM runs
ORDER BY started_at DESC, run_id DESC
LIMIT 1
