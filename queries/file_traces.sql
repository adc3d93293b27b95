-- file_traces.sql: which traces each file of the batch holds.
-- Purpose: a run covers the traces in the files it was given, also those whose spans were
--   stored from another file before (a renamed copy, the same file in two folders): the
--   run's scope is read from here, not from the file each span was first stored from.
-- Grain: one row per (file, trace) not recorded yet.
-- Parameters: none. Reads: t_batch, file_traces.
INSERT INTO file_traces
SELECT DISTINCT b.source_file, b.trace_id
FROM t_batch AS b
WHERE NOT EXISTS (
    SELECT 1 FROM file_traces AS f WHERE f.source_file = b.source_file AND f.trace_id = b.trace_id
);
