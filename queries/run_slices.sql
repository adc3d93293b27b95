-- run_slices.sql: which slice of a large run each trace is classified in.
-- Purpose: analyze classifies a run of many traces a slice at a time so memory stays
--   flat. Traces are cut into $parts slices of equal count in the order they were
--   stored (by their first span's rowid), so each slice's spans lie in one short rowid
--   range that DuckDB can read without scanning the whole table (run_traces.sql gets
--   the range as $lo .. $hi; a trace whose spans were stored far apart only widens it).
-- Grain: one row per trace in scope that has a request span.
-- Parameters: $files (VARCHAR[] or NULL: only traces in these trace files, listed in t_scope), $parts (INTEGER).
-- Writes: t_slices
-- Columns: trace_id VARCHAR, slice BIGINT, first_row BIGINT, last_row BIGINT
SELECT trace_id, ntile($parts) OVER (ORDER BY first_row) - 1 AS slice, first_row, last_row
FROM (
    SELECT trace_id, min(rowid) AS first_row, max(rowid) AS last_row
    FROM spans
    WHERE $files IS NULL OR trace_id IN (SELECT trace_id FROM t_scope)
    GROUP BY trace_id
    HAVING count(*) FILTER (WHERE stage = 'request') > 0
)
