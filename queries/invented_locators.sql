-- invented_locators.sql: URLs, sections, pages, paragraphs and titles a claim names that no supplied source has.
-- Purpose: an answer must not send its reader to an ID, URL, title or locator absent from what it was
--   given. A locator a claim names (t_claim_locators, read by analyzer/claims/locators.py) is supplied
--   when a source has it: a retrieved chunk's uri or title as the trace's retrieval spans recorded
--   them, or any gold corpus entry's uri, title, chunk id or text (a quoted title also when a gold
--   text holds it: it is then a quote). A locator no source has is invented; a URL that only
--   sources the gold corpus marks untrusted give (a poisoned snippet adding a link) is an untrusted
--   link. classify.sql makes both invalid_citation at generation.
-- Grain: one row per (trace, claim_idx) naming at least one invented locator or untrusted link.
-- Parameters: none. Reads: t_gen_claims (trace_id, claim_idx, text, labels), t_split_keys (trace_id,
--   split_id), t_answer_refs (split, label, text: reference-list entries), t_claim_locators (text, kind,
--   value, shown; none a gold entry supplies, a URL a trusted one: those flag nothing; _locators.tables),
--   t_source_locators (text, kind, value), t_gold_chunks (chunk_id, uri, title, text,
--   untrusted), spans (retrieval: chunk_id, chunk_uri, chunk_title).
-- Writes: t_invented
-- Columns: trace_id VARCHAR, claim_idx BIGINT, invented VARCHAR[], untrusted_links VARCHAR[],
--   link_sources VARCHAR[]
WITH named AS (
    SELECT g.trace_id, g.claim_idx, l.kind, l.value, l.shown
    FROM t_gen_claims AS g JOIN t_claim_locators AS l ON l.text = g.text
    UNION ALL
    -- the answer's reference list: an entry's locators count for every claim citing its label
    SELECT g.trace_id, g.claim_idx, l.kind, l.value, l.shown || ' (reference [' || r.label || '])'
    FROM t_gen_claims AS g
    JOIN t_split_keys AS k ON k.trace_id = g.trace_id
    JOIN t_answer_refs AS r ON r.split = k.split_id AND list_contains(g.labels, r.label)
    JOIN t_claim_locators AS l ON l.text = r.text
),
wanted AS (
    SELECT DISTINCT kind, value FROM named
),
gold_texts AS (  -- every text of a gold entry a locator may be in
    SELECT chunk_id, untrusted, unnest([uri, title, chunk_id, text]) AS x FROM t_gold_chunks
),
gold_has AS (    -- gold entries that have each wanted locator
    SELECT w.kind, w.value, g.chunk_id, g.untrusted
    FROM wanted AS w
    JOIN t_source_locators AS s ON s.kind = w.kind AND s.value = w.value
    JOIN gold_texts AS g ON g.x = s.text
    UNION ALL
    SELECT w.kind, w.value, c.chunk_id, c.untrusted
    FROM wanted AS w
    JOIN t_gold_chunks AS c ON w.kind = 'title' AND contains(regexp_replace(lower(c.text), '\s+', ' ', 'g'), w.value)
),
span_texts AS (  -- what each trace's retrieval spans recorded of their chunks: uri and title
    SELECT trace_id, chunk_id, unnest([uri, title]) AS x
    FROM (SELECT trace_id, unnest(chunk_id) AS chunk_id, unnest(coalesce(chunk_uri, [])) AS uri,
                 unnest(coalesce(chunk_title, [])) AS title
          FROM spans
          WHERE stage = 'retrieval' AND (chunk_uri IS NOT NULL OR chunk_title IS NOT NULL)
            AND trace_id IN (SELECT trace_id FROM named))
),
span_has AS (    -- ... that have each wanted locator (a chunk the gold corpus does not rate is trusted)
    SELECT t.trace_id, w.kind, w.value, t.chunk_id, coalesce(c.untrusted, false) AS untrusted
    FROM wanted AS w
    JOIN t_source_locators AS s ON s.kind = w.kind AND s.value = w.value
    JOIN span_texts AS t ON t.x = s.text
    LEFT JOIN t_gold_chunks AS c ON c.chunk_id = t.chunk_id
),
gold_by AS (     -- per locator: how many gold entries have it, whether all are untrusted, which (a
                 -- locator many entries share, "section 2", is counted once, never joined per claim)
    SELECT kind, value, count(*) AS n, bool_and(coalesce(untrusted, false)) AS only_untrusted,
           -- which entries: only for a link every source of which is untrusted (the reason names them)
           CASE WHEN kind = 'url' AND only_untrusted
                THEN list_sort(list_distinct(list(chunk_id) FILTER (WHERE chunk_id IS NOT NULL))) END AS chunks
    FROM gold_has GROUP BY kind, value
),
span_by AS (     -- the same per trace, from what its retrieval spans recorded
    SELECT trace_id, kind, value, count(*) AS n, bool_and(untrusted) AS only_untrusted,
           CASE WHEN kind = 'url' AND only_untrusted
                THEN list_sort(list_distinct(list(chunk_id) FILTER (WHERE chunk_id IS NOT NULL))) END AS chunks
    FROM span_has GROUP BY trace_id, kind, value
),
sourced AS (     -- each named locator with the sources that have it
    SELECT n.trace_id, n.claim_idx, n.kind, n.shown,
           coalesce(g.n, 0) + coalesce(s.n, 0) AS n_sources,
           n_sources > 0 AND coalesce(g.only_untrusted, true) AND coalesce(s.only_untrusted, true) AS all_untrusted,
           CASE WHEN n.kind = 'url' AND all_untrusted
                THEN list_sort(list_distinct(coalesce(g.chunks, []) || coalesce(s.chunks, []))) END AS from_chunks,
           all_untrusted AS only_untrusted
    FROM (SELECT DISTINCT trace_id, claim_idx, kind, value, shown FROM named) AS n
    LEFT JOIN gold_by AS g ON g.kind = n.kind AND g.value = n.value
    LEFT JOIN span_by AS s ON s.trace_id = n.trace_id AND s.kind = n.kind AND s.value = n.value
)
SELECT trace_id, claim_idx,
       coalesce(list(shown ORDER BY shown) FILTER (WHERE n_sources = 0), []) AS invented,
       coalesce(list(shown ORDER BY shown) FILTER (WHERE kind = 'url' AND n_sources > 0 AND only_untrusted), [])
           AS untrusted_links,
       list_sort(list_distinct(flatten(coalesce(
           list(from_chunks) FILTER (WHERE kind = 'url' AND n_sources > 0 AND only_untrusted), [])))) AS link_sources
FROM sourced
GROUP BY trace_id, claim_idx
HAVING len(invented) > 0 OR len(untrusted_links) > 0;
