-- report_regressions.sql: what got worse, and what got fixed, since the run compared with.
-- Purpose: compare two runs claim by claim. A claim is identified across runs by its
--   case and gold claim id (or, for generated claims matching no gold claim, its text);
--   traces differ from run to run, so each claim's buckets are counted over the traces
--   of its case. A failing bucket whose count went up is a regression; down, a fix. When the
--   evaluator differs between the two runs (the judge with its settings, or the gold set's
--   content), the app cannot be told apart from the evaluator: every change is 'judge changed',
--   'gold changed' or 'judge and gold changed', never a regression (the seed articles: version
--   evaluator prompts and models and re-baseline before enforcing a threshold). Compare with a
--   run of the new evaluator (`report --baseline RUN`) to see the app's changes again.
--   A claim is compared on its basis: a corpus-basis claim (no gold case) by its text, apart
--   from the gold-basis rows.
-- Grain: one row per (basis, case, claim, failing bucket) whose count changed.
-- Parameters: $run_id (VARCHAR), $previous_run_id (VARCHAR or NULL: the latest run that
--   started before $run_id), $basis (VARCHAR or NULL: 'gold' | 'corpus' rows only; NULL, every row).
WITH previous AS (
    SELECT coalesce($previous_run_id, (
        SELECT r.run_id FROM runs AS r
        WHERE r.started_at < (SELECT started_at FROM runs WHERE run_id = $run_id)
        ORDER BY r.started_at DESC, r.run_id DESC LIMIT 1)) AS run_id
),
evaluator AS (
    SELECT bool_or(p.judge IS DISTINCT FROM c.judge) AS judge_changed,
           bool_or(p.gold_hash IS DISTINCT FROM c.gold_hash AND p.gold_hash IS NOT NULL AND c.gold_hash IS NOT NULL)
               AS gold_changed
    FROM runs AS c, runs AS p
    WHERE c.run_id = $run_id AND p.run_id = (SELECT run_id FROM previous)
),
counted AS (
    SELECT c.run_id = $run_id AS is_current, coalesce(c.basis, 'gold') AS basis, c.case_id,
           coalesce(c.gold_claim_id, c.claim_text) AS claim, c.bucket, count(*) AS n
    FROM claim_results AS c
    WHERE (c.run_id = $run_id OR c.run_id = (SELECT run_id FROM previous))
      AND ($basis IS NULL OR coalesce(c.basis, 'gold') = $basis)
    GROUP BY ALL
),
compared AS (
    SELECT basis, case_id, claim, bucket,
           coalesce(sum(n) FILTER (WHERE NOT is_current), 0) AS before,
           coalesce(sum(n) FILTER (WHERE is_current), 0) AS now
    FROM counted
    GROUP BY basis, case_id, claim, bucket
)
SELECT CASE
           WHEN coalesce(e.judge_changed, false) AND coalesce(e.gold_changed, false) THEN 'judge and gold changed'
           WHEN coalesce(e.judge_changed, false) THEN 'judge changed'
           WHEN coalesce(e.gold_changed, false) THEN 'gold changed'
           WHEN now > before THEN 'regressed'
           ELSE 'fixed'
       END AS change,
       case_id, claim, bucket, before, now,
       (SELECT run_id FROM previous) AS previous_run_id,
       basis
FROM compared
LEFT JOIN evaluator AS e ON true
WHERE bucket <> 'ok' AND now <> before AND (SELECT run_id FROM previous) IS NOT NULL
ORDER BY change DESC, basis DESC, case_id, claim, bucket
