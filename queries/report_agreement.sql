-- report_agreement.sql: how often people agree with the judge, per bucket, from labelled samples.
-- Purpose: a `citeline sample` sheet, labelled by people and read back with `analyze --labels`,
--   holds for each row the judge's label and the bucket in the run it was drawn from
--   (human_labelled.judge_label, .judge_bucket). Agreement is the share of labelled rows where the
--   person's label is the judge's. A bucket with no labelled row is not listed.
-- Grain: one row per bucket of the sampled run (in repair order), for the labels read in $run_id.
-- Parameters: $run_id. Reads: human_labelled, bucket_order.
SELECT h.judge_bucket AS bucket,
       count(*) AS labelled,
       count(*) FILTER (WHERE h.human_label = h.judge_label) AS agreeing,
       count(*) FILTER (WHERE h.human_label = h.judge_label) / count(*) AS agreement,
       any_value(h.sampled_run) AS sampled_run
FROM human_labelled AS h
LEFT JOIN bucket_order AS o ON o.bucket = h.judge_bucket
WHERE h.run_id = $run_id AND h.sampled_run IS NOT NULL AND h.judge_bucket IS NOT NULL
GROUP BY h.judge_bucket
ORDER BY min(o.position), h.judge_bucket
