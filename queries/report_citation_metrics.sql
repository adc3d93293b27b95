-- report_citation_metrics.sql: citation quality figures of one run, each with its definition.
-- Purpose: the numbers a team tracks release to release.
--   validity            = citations that point into the context the model saw / all citations
--   completeness        = evidence-requiring claims (factual generated claims) with at least one
--                         citation / evidence-requiring claims
--   aligned_precision   = valid citations whose evidence supports the claim (a chunk of one of the
--                         matched gold claim's support bundles; for claims matching no gold claim,
--                         every citation of a claim the judge found entailed) / valid citations
--   unsupported_answers = answered traces with at least one claim flagged grounding (the bucket that
--                         is_unsupported raises: bucket_order) / answered traces
--   abstention_rate     = traces whose answer abstained / traces
--   answer_coverage     = traces of expect: answer cases that answered / traces of expect: answer cases
--   A metric with a zero denominator is 0.0.
-- Grain: one row per metric (always 6 rows).
-- Parameters: $run_id (VARCHAR).
WITH claims AS (
    SELECT * FROM claim_results WHERE run_id = $run_id
),
generated AS (       -- rows that stand for a generated factual claim
    SELECT * FROM claims WHERE claim_text IS NOT NULL
),
traces AS (
    SELECT trace_id,
           bool_or(abstained) AS abstained,
           any_value(expect) AS expect,
           bool_or(list_contains(flags, (SELECT bucket FROM bucket_order WHERE flag = 'is_unsupported'))) AS grounded_badly
    FROM claims
    GROUP BY trace_id
),
figures AS (
    SELECT 1 AS position, 'validity' AS metric,
           (SELECT coalesce(sum(n_citations - n_invalid), 0) FROM generated) AS numerator,
           (SELECT coalesce(sum(n_citations), 0) FROM generated) AS denominator,
           'citations that point into the context the model saw / all citations' AS definition
    UNION ALL
    SELECT 2, 'completeness',
           (SELECT count(*) FILTER (WHERE n_citations > 0) FROM generated),
           (SELECT count(*) FROM generated),
           'factual claims with at least one citation / factual claims'
    UNION ALL
    SELECT 3, 'aligned_precision',
           (SELECT coalesce(sum(n_aligned), 0) FROM generated),
           (SELECT coalesce(sum(n_citations - n_invalid), 0) FROM generated),
           'valid citations whose evidence supports the claim / valid citations'
    UNION ALL
    SELECT 4, 'unsupported_answers',
           (SELECT count(*) FILTER (WHERE grounded_badly) FROM traces WHERE NOT abstained),
           (SELECT count(*) FROM traces WHERE NOT abstained),
           'answered traces with a claim flagged grounding / answered traces'
    UNION ALL
    SELECT 5, 'abstention_rate',
           (SELECT count(*) FILTER (WHERE abstained) FROM traces),
           (SELECT count(*) FROM traces),
           'traces that abstained / traces'
    UNION ALL
    SELECT 6, 'answer_coverage',
           (SELECT count(*) FILTER (WHERE NOT abstained) FROM traces WHERE expect = 'answer'),
           (SELECT count(*) FROM traces WHERE expect = 'answer'),
           'traces of expect: answer cases that answered / such traces'
)
SELECT position, metric, numerator, denominator,
       CASE WHEN denominator = 0 THEN 0.0 ELSE round(numerator / denominator, 4) END AS value,
       definition
FROM figures
ORDER BY position
