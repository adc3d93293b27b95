-- case_verdicts.sql: one verdict per trace of a run: its most urgent claim bucket.
-- Grain: one row per (run, trace), with the basis its claims were judged on ('gold' | 'corpus').
-- Parameters: $run_id (VARCHAR).
-- Writes: case_results (append)
SELECT c.run_id, c.trace_id, c.case_id,
       arg_min(c.bucket, o.position) AS verdict,
       any_value(c.expect) AS expect,
       bool_or(c.abstained) AS abstained,
       any_value(c.basis) AS basis
FROM claim_results AS c
JOIN bucket_order AS o USING (bucket)
WHERE c.run_id = $run_id
GROUP BY c.run_id, c.trace_id, c.case_id
