"""The join step: the gold set as tables, and each slice's traces joined to their cases.

:func:`begin` lays out what every slice reads (the gold set, the run's scope, its questions
normalised, its slices); :func:`join` makes one slice's ``t_traces`` (one row per trace, its
evidence chain and the case it answers) and the tables the classification reads beside it
(chunk identity by content, content drift, access). ``analyze``, a partitioned run's reduce task
and ``citeline gold draft`` call these same two functions. The relational work is SQL in
``queries/`` (each file's header says what it reads and writes); Python reads texts only, once
per distinct text.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import duckdb

from citeline.analyzer import steps
from citeline.analyzer.gold.goldset import AUTHORITY, GoldSet, normalise_question
from citeline.analyzer.problems import Problem
from citeline.analyzer.sources import openinference, prompt_context, structured
from citeline.analyzer.store import SCHEMA_VERSIONS, sql
from citeline.instrumentation.schema import CL_DERIVED_IDS

PART_TRACES = 100_000  # traces classified at a time: keeps memory flat whatever the run's size


@dataclass
class Scope:
    """What a run reads: its trace files (None: the whole store), its size, and its slices."""

    files: list[str] | None
    classified: int = 0  # traces with a request span
    distinct_answers: int = 0  # about
    traces: int = 0  # every trace read
    slices: list[tuple[int, int]] = field(default_factory=lambda: [(0, 0)])  # rowid range of each

    def params(self, part: int) -> dict[str, Any]:
        lo, hi = self.slices[part]
        return {"part": part, "parts": len(self.slices), "lo": lo, "hi": hi, "files": self.files}


@dataclass
class Tallies:
    """What the join step counted over a run's slices, for the run's problems list."""

    oi: openinference.Stats = field(default_factory=openinference.Stats)
    joined_by_content: int = 0
    unjoined: set[str] = field(default_factory=set)

    def __add__(self, other: Tallies) -> Tallies:
        """Two runs' tallies as one: counts summed, ids that joined nothing united."""
        by_content = self.joined_by_content + other.joined_by_content
        return Tallies(self.oi + other.oi, by_content, self.unjoined | other.unjoined)

    def problems(self) -> list[Problem]:
        """What the run says of chunk identity: ids joined by content or not at all, OpenInference documents."""
        said = []
        if self.joined_by_content or self.unjoined:
            said.append(
                Problem(
                    "chunk identity",
                    "-",
                    CL_DERIVED_IDS,
                    f"{self.joined_by_content} chunk id(s) the app did not give joined the gold corpus by content "
                    f"hash; {len(self.unjoined)} joined nothing (their text is not in the gold corpus, or met two "
                    f"texts): {', '.join(sorted(self.unjoined)[:5])}",
                    skipped=False,
                )
            )
        return [*said, *openinference.problems(self.oi)]


def gold_tables(con: duckdb.DuckDBPyConnection, gold: GoldSet) -> None:
    """Writes t_gold_chunks, t_gold_cases and t_gold_claims (queries/text_tables.sql) from ``gold``."""
    from citeline.instrumentation import content_hash

    chunks = gold.corpus.values()
    steps.fill(
        con,
        "t_gold_chunks",
        rows=[
            (
                c.chunk_id,
                c.doc_id,
                c.version,
                c.uri,
                c.title,
                c.text,
                c.status,
                c.effective_from,
                c.effective_to,
                c.acl,
                content_hash(c.text) if c.text else "",
                AUTHORITY.index(c.authority) + 1 if c.authority else None,
                c.authority == AUTHORITY[-1],
            )
            for c in chunks
        ],
    )
    steps.fill(
        con,
        "t_gold_cases",
        rows=[
            (
                c.case_id,
                normalise_question(c.question),
                c.as_of,
                c.expect,
                c.principal_groups,
                c.attach,
                AUTHORITY.index(c.require_authority) + 1 if c.require_authority else None,
            )
            for c in gold.cases.values()
        ],
    )
    steps.fill(
        con,
        "t_gold_claims",
        rows=[
            (
                case.case_id,
                c.claim_id,
                c.text,
                c.facts,
                c.support,
                c.contradicts,
                sorted({x for b in c.support for x in b} | set(c.contradicts)),
            )
            for case in gold.cases.values()
            for c in case.claims
        ],
    )


def begin(con: duckdb.DuckDBPyConnection, gold: GoldSet, files: list[str] | None) -> Scope:
    """Lay out what every slice reads: the gold tables, the run's scope (t_scope: the traces of
    ``files``; None reads the whole store), its questions normalised (t_question_norm), its size and
    its slices (t_slices, one per ``PART_TRACES`` traces)."""
    gold_tables(con, gold)
    scope = Scope(files)
    steps.run(con, "run_scope", {"files": files})
    (scope.classified, scope.distinct_answers, scope.traces) = (
        int(x) for x in con.execute(sql("run_size"), {"files": files}).fetchall()[0]
    )
    question_table(con, files)
    parts = max(1, -(-scope.classified // PART_TRACES))
    if parts == 1:  # one slice: every trace, no table needed beyond an empty one for the query to bind
        steps.empty(con, "run_slices")
    else:
        steps.run(con, "run_slices", {"parts": parts, "files": files})
        rows = con.execute("SELECT slice, min(first_row), max(last_row) FROM t_slices GROUP BY slice ORDER BY slice")
        scope.slices = [(int(lo), int(hi)) for _slice, lo, hi in rows.fetchall()]
    return scope


def question_table(con: duckdb.DuckDBPyConnection, files: list[str] | None) -> None:
    """Reads the run's questions without a case id (asked_questions.sql); writes t_question_norm, each
    normalised once, a root span's JSON input (Haystack's pipeline data) read for the gold question in it."""
    asked = {n for (n,) in con.execute("SELECT DISTINCT question_norm FROM t_gold_cases").fetchall()}

    def norm(question: str) -> str:
        n = normalise_question(question)
        if n in asked:
            return n
        hits = {h for leaf in openinference.question_leaves(question) if (h := normalise_question(leaf)) in asked}
        return hits.pop() if len(hits) == 1 else n

    questions = [q for (q,) in con.execute(sql("asked_questions"), {"files": files}).fetchall()]
    steps.fill(con, "t_question_norm", {"question": questions, "question_norm": [norm(q) for q in questions]})


def join(
    con: duckdb.DuckDBPyConnection,
    params: Mapping[str, Any],
    tallies: Tallies,
    *,
    run_id: str | None = None,
    answer_keys: Mapping[str, tuple[str, ...]] | None = None,
) -> None:
    """One slice's traces joined to their cases (``params``: :meth:`Scope.params`); writes t_traces and
    the tables classify.sql reads beside it. With ``run_id`` the slice's coverage and span ids are
    stored with that run, and a trace that joins no case stays (``case_id`` NULL: judged on the corpus
    basis); without, such traces are left out (``gold draft``).

    1. each source's documents joined to gold chunks where that is text work (OpenInference:
       t_oi_docs); 2. run_traces.sql picks each stage's span, citeline's before another source's,
       and joins the trace to at most one case; 3. a context no span traced is read off the
       generation's prompt, whichever source recorded prompt and chunks (``_prompt_context``); 4. an
       answer recorded as JSON becomes the structured generation it is (``_structured``); 5. chunk ids
       the instrumentation derived join gold chunks by content (content_identity.sql, remap_ids.sql);
       6. content drift, restricted text under other ids, ACLs the index recorded, what the page showed.
    """
    openinference.join_documents(con, tallies.oi, params)
    steps.run(con, "run_traces", {"schema_versions": SCHEMA_VERSIONS, **params})
    if run_id is not None:
        steps.run(con, "unmatched_traces", {"run_id": run_id})
        steps.run(con, "oi_span_chunks", {"run_id": run_id})
    else:
        con.execute("DELETE FROM t_traces WHERE case_id IS NULL")
    prompt_context.read(con, tallies.oi)
    json_answers(con, answer_keys)
    _identity_by_content(con, tallies, run_id)
    steps.run(con, "content_drift")
    if con.execute("SELECT count(*) FROM t_drift").fetchall()[0][0]:
        steps.run(con, "content_drift_traces")
    else:
        steps.empty(con, "content_drift_traces")
    steps.run(con, "restricted_by_content")
    steps.run(con, "recorded_acl")  # ACLs the app's index recorded, and what the page showed
    steps.run(con, "render_shown")


def json_answers(con: duckdb.DuckDBPyConnection, answer_keys: Mapping[str, tuple[str, ...]] | None) -> None:
    """Reads the slice's answers (json_answers.sql); answers recorded as JSON text are read once per
    distinct answer (t_json_answers) and applied to t_traces (apply_json_answers.sql)."""
    answers = [a for (a,) in con.execute(sql("json_answers")).fetchall() if structured.looks_like_json(a)]
    cols = structured.tables(answers, dict(answer_keys or structured.KEYS))
    if cols["answer"]:
        steps.fill(con, "t_json_answers", cols)
        steps.run(con, "apply_json_answers")


def _identity_by_content(con: duckdb.DuckDBPyConnection, tallies: Tallies, run_id: str | None) -> None:
    """Derived chunk ids of the slice -> gold ids by content hash (t_id_map), applied to t_traces and,
    with ``run_id``, to the run's retrieval spans (run_span_chunks)."""
    steps.run(con, "content_identity")
    rows = con.execute("SELECT from_id, to_id FROM t_id_map").fetchall()
    joined = sum(1 for _f, to in rows if to is not None)
    tallies.joined_by_content += joined
    tallies.unjoined.update(f for f, to in rows if to is None)
    if joined:
        steps.run(con, "remap_ids")
        if run_id is not None:
            steps.run(con, "derived_span_chunks", {"run_id": run_id})
