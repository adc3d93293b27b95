-- render_shown.sql: every chunk the page showed something of, and what it showed.
-- Purpose: a render span records, per link, its label, target uri, chunk id, title and (content
--   on only) preview text. Each row shows its own chunk (its chunk id, else the gold chunk
--   whose uri it links), and it shows a restricted chunk when it links that chunk's uri, carries
--   its title, or previews a text that chunk holds (16 characters or more of it; a gold chunk with
--   an ACL, or one the trace's index returned with an ACL, by the uri and title its span recorded):
--   a restricted document can leak through a title or a snippet in a source panel as much as
--   through a link. classify.sql checks access on each (the ACL the retrieval span recorded
--   for the chunk, and the gold corpus's).
-- Grain: one row per (trace, chunk shown on its render span).
-- Parameters: none. Reads: t_traces (render columns), t_gold_chunks (chunk_id, uri, title, text, acl),
--   t_recorded_acl (recorded_acl.sql), spans (retrieval: chunk_id, chunk_uri, chunk_title).
-- Writes: t_shown
-- Columns: trace_id VARCHAR, render_span VARCHAR, chunk_id VARCHAR, what VARCHAR[]
WITH rows AS (
    SELECT trace_id, render_span,
           unnest(ren_label) AS label, unnest(coalesce(ren_uri, [])) AS uri,
           unnest(coalesce(ren_chunk_id, [])) AS chunk_id, unnest(coalesce(ren_title, [])) AS title,
           unnest(coalesce(ren_preview, [])) AS preview
    FROM t_traces WHERE render_span IS NOT NULL
),
shown AS (
    SELECT trace_id, render_span, coalesce(uri, '') AS uri, nullif(chunk_id, '') AS chunk_id,
           lower(trim(coalesce(title, ''))) AS title, -- a preview is compared as text: case and runs of whitespace aside, a trailing ellipsis cut
           regexp_replace(lower(rtrim(trim(coalesce(preview, '')), '.… ')), '\s+', ' ', 'g') AS preview,
           list_filter([CASE WHEN coalesce(title, '') <> '' THEN 'title' END,
                        CASE WHEN coalesce(preview, '') <> '' THEN 'preview' END,
                        CASE WHEN coalesce(uri, '') <> '' THEN 'link' END], lambda w: w IS NOT NULL) AS what
    FROM rows
),
restricted AS (   -- (trace_id NULL: restricted in every trace, by the gold corpus)
    SELECT NULL::VARCHAR AS trace_id, chunk_id, uri, lower(trim(title)) AS title,
           regexp_replace(lower(text), '\s+', ' ', 'g') AS text
    FROM t_gold_chunks WHERE acl IS NOT NULL
    UNION ALL
    -- chunks the app's index returned with an ACL, with the uri and title their retrieval span recorded
    SELECT r.trace_id, r.chunk_id, coalesce(r.uri, ''), lower(trim(coalesce(r.title, ''))), ''
    FROM (SELECT trace_id, unnest(chunk_id) AS chunk_id, unnest(coalesce(chunk_uri, [])) AS uri,
                 unnest(coalesce(chunk_title, [])) AS title
          FROM spans
          WHERE stage = 'retrieval' AND acl_count IS NOT NULL AND trace_id IN (SELECT trace_id FROM t_recorded_acl)) AS r
    JOIN t_recorded_acl AS a ON a.trace_id = r.trace_id AND a.chunk_id = r.chunk_id
),
matched AS (
    -- the row's own chunk: its id, else the gold chunk its uri links
    SELECT s.trace_id, s.render_span, coalesce(s.chunk_id, c.chunk_id) AS chunk_id,
           CASE WHEN len(s.what) = 0 THEN ['link'] ELSE s.what END AS what
    FROM shown AS s
    LEFT JOIN t_gold_chunks AS c ON s.chunk_id IS NULL AND c.uri = s.uri AND c.uri <> ''
    UNION ALL
    -- a restricted chunk's link, title or text on a row that names another chunk (or none)
    SELECT s.trace_id, s.render_span, r.chunk_id,
           list_filter([CASE WHEN s.uri <> '' AND s.uri = r.uri THEN 'link' END,
                        CASE WHEN s.title <> '' AND s.title = r.title THEN 'title' END,
                        CASE WHEN length(s.preview) >= 16 AND contains(r.text, s.preview) THEN 'preview' END],
                       lambda w: w IS NOT NULL)
    FROM shown AS s
    JOIN restricted AS r
      ON r.chunk_id IS DISTINCT FROM s.chunk_id AND (r.trace_id IS NULL OR r.trace_id = s.trace_id)
     AND ((s.uri <> '' AND s.uri = r.uri) OR (s.title <> '' AND s.title = r.title)
          OR (length(s.preview) >= 16 AND contains(r.text, s.preview)))
)
SELECT trace_id, any_value(render_span) AS render_span, chunk_id,
       list_sort(list_distinct(flatten(list(what)))) AS what
FROM matched
WHERE chunk_id IS NOT NULL
GROUP BY trace_id, chunk_id;
