-- report_evaluator_changes.sql: the steps of the run history where the evaluator changed.
-- Purpose: trends and regressions read runs in order; where the judge (name, version, settings)
--   or the gold set's content differs from the run before, labels may move with the app
--   unchanged. The report marks each such step on the trend and beside the regressions.
-- Grain: one row per run whose judge or gold hash differs from the run before it.
-- Parameters: none. Reads: runs.
WITH ordered AS (
    SELECT run_id, started_at, judge, gold_hash,
           lag(judge) OVER w AS judge_before, lag(gold_hash) OVER w AS gold_before, lag(run_id) OVER w AS run_before
    FROM runs
    WINDOW w AS (ORDER BY started_at, run_id)
)
SELECT run_id, CAST(started_at AS DATE) AS day, run_before, judge_before, judge, gold_before, gold_hash,
       judge IS DISTINCT FROM judge_before AS judge_changed,
       gold_hash IS DISTINCT FROM gold_before AND gold_hash IS NOT NULL AND gold_before IS NOT NULL AS gold_changed
FROM ordered
WHERE run_before IS NOT NULL
  AND (judge IS DISTINCT FROM judge_before
       OR (gold_hash IS DISTINCT FROM gold_before AND gold_hash IS NOT NULL AND gold_before IS NOT NULL))
ORDER BY started_at, run_id
