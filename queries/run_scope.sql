-- run_scope.sql: the traces a run reads.
-- Purpose: a run given trace files covers every trace those files hold (file_traces), also a
--   trace whose other spans were stored from another file before; a run given no files covers
--   the whole store, and then this table is not read ($files IS NULL in the queries that use it).
-- Grain: one row per trace in scope.
-- Parameters: $files (VARCHAR[] or NULL). Reads: file_traces.
-- Writes: t_scope
-- Columns: trace_id VARCHAR
SELECT DISTINCT trace_id FROM file_traces WHERE list_contains(coalesce($files, []), source_file)
