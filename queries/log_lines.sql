-- log_lines.sql: the lines of trace files that hold OTLP log records (resourceLogs), as text.
-- Purpose: log records are read beside spans (analyzer/sources/logs.py parses these lines and keeps
--   the GenAI content records in `logs`). Lines are split as ingest_spans.sql splits them and kept
--   only when they name resourceLogs: a spans line costs one substring test, never a parse.
-- Grain: one row per line holding "resourceLogs" (a line read twice gives two rows).
-- Parameters: $files (VARCHAR[]: paths, plain or .gz), $max_line (BIGINT: longest line read, bytes).
SELECT filename AS source_file,
       hash(json) AS line_hash,
       strlen(json) AS line_bytes,
       json AS line
FROM read_csv($files, columns = {'json': 'VARCHAR'}, delim = chr(1), quote = '', escape = '',
              header = false, auto_detect = false, strict_mode = false, ignore_errors = true,
              max_line_size = $max_line, buffer_size = 2 * $max_line,
              filename = true, compression = 'auto')
WHERE contains(json, '"resourceLogs"')
