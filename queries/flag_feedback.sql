-- flag_feedback.sql: the claims a user's report is about carry the flag `user_feedback`.
-- Purpose: a report names a claim (its text, compared case-folded with spaces collapsed, or as a
--   part of the claim), or a chunk (every claim of the trace citing it), or neither (every claim
--   of the trace with text). The flag is added to the row's flags; the bucket is the analyzer's
--   own: a report is a reason to look, not a verdict.
-- Grain: rewrites claim_results rows of $run_id in place. Parameters: $run_id.
-- Reads: run_feedback, claim_results.
-- Writes: claim_results (update)
UPDATE claim_results AS c
SET flags = list_append(c.flags, 'user_feedback')
WHERE c.run_id = $run_id AND c.claim_text IS NOT NULL AND NOT list_contains(c.flags, 'user_feedback')
  AND EXISTS (
      SELECT 1 FROM run_feedback AS f
      WHERE f.run_id = $run_id AND f.trace_id = c.trace_id
        AND CASE
                WHEN f.claim <> '' THEN contains(lower(regexp_replace(c.claim_text, '\s+', ' ', 'g')),
                                                 lower(regexp_replace(trim(f.claim), '\s+', ' ', 'g')))
                WHEN f.chunk_id <> '' THEN list_contains(c.cited_chunks, f.chunk_id)
                ELSE true
            END
  )
