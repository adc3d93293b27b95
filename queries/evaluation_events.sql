-- Purpose: the verdicts of one run as OpenTelemetry GenAI evaluation events
--          (gen_ai.evaluation.result, docs/otel-export.md): one per claim verdict, on the span where
--          the chain broke, or on the trace's request span when no span broke it (an ok claim); and
--          one per trace (the trace's verdict) on its request span.
-- Grain:   one row per claim row of the run, then one row per judged trace (kind 'claim' | 'trace').
--          A trace with no request span gives its span-less rows a NULL span_id (the caller names them).
-- Params:  $run the run id.
WITH request_span AS (
    -- the request span of each trace (the lowest id if a trace file claims several)
    SELECT trace_id, min(span_id) AS span_id
    FROM spans
    WHERE stage = 'request'
    GROUP BY trace_id
),

claim_rows AS (
    SELECT
        'claim' AS kind,
        c.trace_id,
        coalesce(c.span_id, r.span_id) AS span_id,
        c.span_id IS NULL AS on_request_span,
        c.case_id,
        c.gold_claim_id,
        c.claim_text,
        c.bucket AS label,
        c.stage,
        c.reason,
        coalesce(c.flags, []) AS flags,
        c.basis
    FROM claim_results AS c
    LEFT JOIN request_span AS r USING (trace_id)
    WHERE c.run_id = $run
),

trace_rows AS (
    SELECT
        'trace' AS kind,
        c.trace_id,
        r.span_id,
        true AS on_request_span,
        c.case_id,
        NULL AS gold_claim_id,
        NULL AS claim_text,
        c.verdict AS label,
        NULL AS stage,
        'claims: ' || coalesce((
            SELECT string_agg(bucket || ' ' || n, ', ' ORDER BY bucket)
            FROM (
                SELECT bucket, count(*) AS n FROM claim_results AS k
                WHERE k.run_id = c.run_id AND k.trace_id = c.trace_id
                GROUP BY bucket
            )
        ), 'none') AS reason,
        []::VARCHAR[] AS flags,
        c.basis
    FROM case_results AS c
    LEFT JOIN request_span AS r USING (trace_id)
    WHERE c.run_id = $run
)

SELECT * FROM claim_rows
UNION ALL BY NAME
SELECT * FROM trace_rows
ORDER BY kind, trace_id, span_id, case_id, gold_claim_id, claim_text, label, reason
