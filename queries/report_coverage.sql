-- report_coverage.sql: how much of a run's input the buckets stand for.
-- Purpose: every trace read and every gold case accounted for. A run whose traces mostly
--   joined no case (unknown case ids, questions the gold set does not ask, ambiguous
--   questions) has buckets that describe little; gates read this (unmatched, coverage,
--   missing_cases).
-- Grain: one row for the run.
-- Parameters: $run_id (VARCHAR).
-- Columns: traces (read in the run), joined (to exactly one case), unmatched (traces that
--   joined none), coverage (joined / traces, 1.0 for a run of no traces), the unmatched
--   traces counted by reason, missing_cases (gold cases no trace answered) and up to 20 of
--   their ids. Runs stored before coverage was recorded show NULL traces. (runs.traces counts
--   the traces joined to a case.) corpus: traces judged on the corpus basis (no gold case: every
--   unmatched trace with a request span); gold_claims and corpus_claims: the run's rows on each basis.
WITH run AS (
    SELECT run_id, traces_read, traces AS traces_joined FROM runs WHERE run_id = $run_id
),
why AS (
    SELECT reason, count(*) AS n FROM unmatched_traces WHERE run_id = $run_id GROUP BY reason
),
missing AS (
    SELECT count(*) AS n, list(case_id ORDER BY case_id)[1:20] AS some FROM missing_cases WHERE run_id = $run_id
)
SELECT r.traces_read AS traces,
       r.traces_joined AS joined,
       (SELECT coalesce(sum(n), 0) FROM why)::BIGINT AS unmatched,
       CASE WHEN coalesce(r.traces_read, 0) = 0 THEN 1.0 ELSE round(r.traces_joined / r.traces_read, 4) END AS coverage,
       (SELECT coalesce(list({'reason': reason, 'traces': n} ORDER BY reason), []) FROM why) AS unmatched_by_reason,
       m.n AS missing_cases,
       coalesce(m.some, []) AS missing_case_ids,
       b.corpus_traces AS corpus,
       b.gold_claims,
       b.corpus_claims
FROM run AS r, missing AS m,
     (SELECT (SELECT count(*) FROM case_results WHERE run_id = $run_id AND basis = 'corpus') AS corpus_traces,
             count(*) FILTER (WHERE coalesce(basis, 'gold') = 'gold') AS gold_claims,
             count(*) FILTER (WHERE basis = 'corpus') AS corpus_claims
      FROM claim_results WHERE run_id = $run_id) AS b
