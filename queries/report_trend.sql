-- report_trend.sql: claims per bucket per day, across runs.
-- Purpose: the daily trend. A day is the UTC date a run started; when a day has
--   several runs, its last run stands for it (a nightly job re-run by hand counts once).
-- Grain: one row per (day, bucket) for every bucket that day's run produced.
-- Parameters: $since (DATE or NULL: days before it are left out), $basis (VARCHAR or NULL: 'gold' |
--   'corpus' rows only; NULL, every row).
WITH day_runs AS (
    SELECT CAST(started_at AS DATE) AS day, run_id
    FROM runs
    WHERE $since IS NULL OR CAST(started_at AS DATE) >= $since
    QUALIFY row_number() OVER (PARTITION BY CAST(started_at AS DATE) ORDER BY started_at DESC, run_id DESC) = 1
)
SELECT d.day, d.run_id, c.bucket, count(*) AS claims
FROM day_runs AS d
JOIN claim_results AS c USING (run_id)
WHERE ($basis IS NULL OR coalesce(c.basis, 'gold') = $basis)
GROUP BY d.day, d.run_id, c.bucket
ORDER BY d.day, c.bucket
