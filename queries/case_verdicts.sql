-- case_verdicts.sql: one verdict per trace of a run: its most urgent claim bucket.
-- Grain: one row per (run, trace).
-- Parameters: $run_id (VARCHAR).
SELECT run_id, trace_id, case_id,
       CASE min(CASE bucket
                    WHEN 'access_violation' THEN 1 WHEN 'invalid_citation' THEN 2 WHEN 'freshness' THEN 3
                    WHEN 'retrieval_miss' THEN 4 WHEN 'context_drop' THEN 5 WHEN 'grounding' THEN 6
                    WHEN 'uncited' THEN 7 WHEN 'attribution' THEN 8 WHEN 'resolution' THEN 9 ELSE 10 END)
           WHEN 1 THEN 'access_violation' WHEN 2 THEN 'invalid_citation' WHEN 3 THEN 'freshness'
           WHEN 4 THEN 'retrieval_miss' WHEN 5 THEN 'context_drop' WHEN 6 THEN 'grounding'
           WHEN 7 THEN 'uncited' WHEN 8 THEN 'attribution' WHEN 9 THEN 'resolution' ELSE 'ok'
       END AS verdict,
       any_value(expect) AS expect,
       bool_or(abstained) AS abstained
FROM claim_results
WHERE run_id = $run_id
GROUP BY run_id, trace_id, case_id
