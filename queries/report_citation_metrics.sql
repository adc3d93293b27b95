-- report_citation_metrics.sql: citation quality figures of one run, each with its definition.
-- Purpose: the numbers a team tracks release to release.
--   validity            = citations that point into the context the model saw / all citations
--   completeness        = evidence-requiring claims (factual generated claims) with at least one
--                         citation / evidence-requiring claims
--   aligned_precision   = citations whose evidence the judge finds entailing the claim / all emitted
--                         citations, invalid ones included (the seed articles' definition). A citation
--                         of a gold claim counts when it is a chunk of one of the claim's support
--                         bundles and the claim was judged entailed; of a claim matching no gold claim,
--                         when the judge found the claim entailed by what it cites. A contradicted
--                         claim's citations are not aligned, whatever chunk they name
--   unsupported_answers = answered traces with at least one claim flagged grounding (the bucket that
--                         is_unsupported raises: bucket_order) / answered traces
--   abstention_rate     = traces whose answer abstained / traces
--   answer_coverage     = traces of expect: answer cases that answered / traces of expect: answer cases
--   low_authority       = cited claims flagged low_authority (only support below what the case requires) / cited claims
-- Grain: one row per metric (always 7 rows; a metric with a zero denominator is 0.0).
-- Parameters: $run_id (VARCHAR), $basis (VARCHAR or NULL: 'gold' | 'corpus' rows only; NULL, every row).
WITH claims AS (
    SELECT * FROM claim_results WHERE run_id = $run_id AND ($basis IS NULL OR coalesce(basis, 'gold') = $basis)
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
           (SELECT coalesce(sum(CASE WHEN support_label = 'entailed' THEN n_aligned ELSE 0 END), 0) FROM generated),
           (SELECT coalesce(sum(n_citations), 0) FROM generated),
           'citations whose evidence the judge finds entailing the claim / all citations'
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
    UNION ALL
    SELECT 7, 'low_authority',
           (SELECT count(*) FILTER (WHERE list_contains(flags, 'low_authority')) FROM generated WHERE n_citations > 0),
           (SELECT count(*) FROM generated WHERE n_citations > 0),
           'cited claims resting only on sources below the authority their case requires / cited claims'
)
SELECT position, metric, numerator, denominator,
       CASE WHEN denominator = 0 THEN 0.0 ELSE round(numerator / denominator, 4) END AS value,
       definition
FROM figures
ORDER BY position
