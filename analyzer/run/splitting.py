"""The split/match step: answers into claims, and each generated claim matched to a gold claim.

An answer is split once per (answer, policy): the policy holds the attachment unit (the case's,
the run's or the gold file's), the kinds of text exempt from citation, and the shape of the label
map its generation was given (``[2026]`` is a year before a map of eight labels). Splitting is
text work over *distinct* answers, so a million traces asking the same hundred questions cost a
hundred splits; a large run's splits run on the executor the run hands in (its pool of worker
processes), a partitioned run's worker splits in its own process. The relational work is SQL:
split_keys.sql, abstain.sql, gen_claims.sql, similarity.sql, match_claims.sql, skipped_text.sql.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Mapping, Sequence
from concurrent.futures import Executor
from typing import Any

import duckdb

from citeline.analyzer import steps, workers
from citeline.analyzer.claims import locators
from citeline.analyzer.claims.policy import DEFAULT_POLICY, Policy, exempt_or_default, merge
from citeline.analyzer.claims.splitter import skipped_kinds, split_answer
from citeline.analyzer.store import sql
from citeline.analyzer.text import fold, numbers, stems
from citeline.instrumentation.labels import Shape

MIN_SIM = 0.3
MIN_SHARED_SIM = 0.1
#: a run with fewer distinct answers does its text work in one process, with no pool: a spawned worker costs
#: about 0.7 s of CPU to import what it needs, and splitting and judging an answer about 0.5 ms, so two
#: workers (their start overlapped with the join) shorten a run from about this size on
PARALLEL_ANSWERS = 5_000
#: a slice with fewer answers than this is split here even when the run has a pool (not worth the pickling)
POOL_MIN_ANSWERS = 1_000

# each split's answer and policy, by its number (split_keys.sql numbers them 0, 1, ...)
_SPLITS = "SELECT any_value(answer), any_value(policy) FROM t_split_keys GROUP BY split_id ORDER BY split_id"
_LABEL_MAPS = (
    "SELECT DISTINCT t.map_label, g.attach FROM t_traces AS t LEFT JOIN t_gold_cases AS g USING (case_id) "
    "WHERE t.answer IS NOT NULL"
)


def split_keys(
    con: duckdb.DuckDBPyConnection,
    *,
    attach: str | None,
    exempt: Collection[str] | None,
    file_attach: str | None,
    file_exempt: Collection[str] | None,
) -> tuple[list[str], list[Policy]]:
    """Writes t_policy_of and t_split_keys (split_keys.sql): which split of its answer each trace reads;
    returns each split's answer and policy, in split_id order. Distinct label maps and case settings are
    few, so the policies are made in Python once each and joined back by SQL; the rest joins on the
    split's number, not on answer text."""
    kinds = exempt_or_default(exempt, file_exempt)
    rows = con.execute(_LABEL_MAPS).fetchall()
    policies: dict[str, Policy] = {}
    keys: list[str] = []
    for labels, case_attach in rows:
        policy = Policy(merge(case_attach, attach, file_attach), kinds, Shape.of(labels or ()))
        policies[policy.key] = policy
        keys.append(policy.key)
    steps.fill(con, "t_policy_of", rows=[(*row, k) for row, k in zip(rows, keys, strict=True)])
    steps.run(con, "split_keys")
    splits = con.execute(_SPLITS).fetchall()
    return [a for a, _ in splits], [policies[k] for _, k in splits]


def abstentions(con: duckdb.DuckDBPyConnection, abstains: list[bool]) -> None:
    """Writes t_split_abstain (``abstains[split_id]``) and t_abstain (abstain.sql): whether each trace's
    prose answer abstains. Decided per trace: a structured answer says whether it abstained
    (``abstained``), so its split's phrases say nothing for it, nor for a prose answer of the same words."""
    steps.fill(con, "t_split_abstain", {"split_id": list(range(len(abstains))), "abstains": abstains})
    steps.run(con, "abstain")


def store_skipped(con: duckdb.DuckDBPyConnection, run_id: str) -> None:
    """Add this slice's text that is no claim, per kind, to the run's count (run_skipped_text)."""
    steps.run(con, "skipped_text", {"run_id": run_id})


def skipped_counts(con: duckdb.DuckDBPyConnection, run_id: str) -> dict[str, int]:
    """The run's text that is no claim, per kind (every kind of ``_policy.SKIP_KINDS`` that occurred)."""
    from citeline.analyzer.claims.policy import SKIP_KINDS

    rows = con.execute(
        "SELECT kind, sum(units) FROM run_skipped_text WHERE run_id = $r GROUP BY kind", {"r": run_id}
    ).fetchall()
    found = {str(k): int(n) for k, n in rows}
    return {k: found[k] for k in SKIP_KINDS if k in found}


def split_columns(
    answers: Sequence[str],
    phrases: Sequence[str],
    policies: Sequence[Policy] | None = None,
    ids: Sequence[int] | None = None,
) -> dict[str, list[Any]]:
    """Each answer's claims (text, labels, factual, and the word and number sets matching compares) and
    whether it abstains, as columns; ``policies[i]`` is the policy answer ``i`` is split by (the default when
    None), ``ids[i]`` the number its rows carry (``split``; its position when None). Text that is no claim
    is counted per answer and kind (the ``skipped_*`` columns), a reference list's entries are the
    ``ref_*`` columns."""
    claim_cols = ("split", "claim_idx", "text", "labels", "factual", "joins", "stems", "numbers")
    extra = ("skipped_split", "skipped_kind", "skipped_units", "ref_split", "ref_label", "ref_text")
    cols: dict[str, list[Any]] = {k: [] for k in (*claim_cols, *extra)}
    abstains: list[bool] = []
    folded_phrases = tuple(fold(p) for p in phrases)
    with workers.collector_paused():
        _split_into(cols, abstains, answers, folded_phrases, policies, ids)
    cols["abstains"] = abstains
    return cols


#: the tables the splitter fills (queries/text_tables.sql): what :func:`split_answers` hands back
TABLES = ("t_answer_claims", "t_text_sets", "t_answer_skipped", "t_answer_refs")


def split_answers(
    answers: Sequence[str],
    phrases: Sequence[str],
    schemas: Mapping[str, Any],
    policies: Sequence[Policy] | None = None,
    ids: Sequence[int] | None = None,
) -> tuple[dict[str, Any], list[bool]]:
    """:func:`split_columns` as one Arrow table per table of :data:`TABLES` (``schemas``: each one's,
    :func:`steps.schema`), and whether each answer abstains.

    Pure and picklable: a large run splits its answers on every core (:func:`split`), and a worker hands
    back Arrow buffers, not the millions of Python strings the rows hold (each pickled in the worker and
    unpickled in the run's own process, which then made the same tables of them)."""
    cols = split_columns(answers, phrases, policies, ids)
    abstains = cols.pop("abstains")
    sets = {"text": cols["text"], "stems": cols.pop("stems"), "numbers": cols.pop("numbers")}
    with workers.collector_paused():
        tables = {"t_text_sets": steps.frame(schemas["t_text_sets"], sets)}
        for prefix, table in (("skipped_", "t_answer_skipped"), ("ref_", "t_answer_refs")):
            part = {k.removeprefix(prefix): cols.pop(k) for k in list(cols) if k.startswith(prefix)}
            tables[table] = steps.frame(schemas[table], part)
        tables["t_answer_claims"] = steps.frame(schemas["t_answer_claims"], cols)
    return tables, abstains


def _split_into(
    cols: dict[str, list[Any]],
    abstains: list[bool],
    answers: Sequence[str],
    folded_phrases: tuple[str, ...],
    policies: Sequence[Policy] | None,
    ids: Sequence[int] | None,
) -> None:
    for n, answer in enumerate(answers):
        policy = policies[n] if policies is not None else DEFAULT_POLICY
        at = ids[n] if ids is not None else n
        split = split_answer(answer, policy, folded_phrases)
        cited_factual = False
        for i, c in enumerate(split.claims):
            cited_factual = cited_factual or (c.factual and bool(c.labels) and not c.joins)
            cols["split"].append(at)
            cols["claim_idx"].append(i)
            cols["text"].append(c.text)
            cols["labels"].append(list(c.labels))
            cols["factual"].append(c.factual)
            cols["joins"].append(list(c.joins))
            # what matching compares (word overlap, shared numbers), made here on every core
            cols["stems"].append(sorted(stems(c.text)))
            cols["numbers"].append(sorted(numbers(c.text)))
        for kind, units in skipped_kinds(split).items():
            cols["skipped_split"].append(at)
            cols["skipped_kind"].append(kind)
            cols["skipped_units"].append(units)
        for label, source in split.references.items():  # a reference list's entries: label -> source line
            cols["ref_split"].append(at)
            cols["ref_label"].append(label)
            cols["ref_text"].append(source)
        # an answer that cites a factual claim does not abstain whatever it says: its text is folded and read
        # for the phrases only when it does not (a structured answer's own say wins, per trace)
        if cited_factual or not folded_phrases:
            abstains.append(False)
        else:
            folded_answer = fold(answer)
            abstains.append(any(p in folded_answer for p in folded_phrases))


def split(
    con: duckdb.DuckDBPyConnection,
    phrases: Sequence[str],
    settings: dict[str, Any],
    executor: Executor | None = None,
) -> None:
    """The split step. Reads t_traces and t_gold_cases; splits every distinct prose answer once per policy
    it is split by (on ``executor`` when the run is large; here when None) and writes the splitter's
    tables (t_answer_claims, t_answer_skipped, t_answer_refs, t_text_sets: queries/text_tables.sql),
    t_split_keys, t_abstain and t_gen_claims (gen_claims.sql), then t_invented (the locators a claim
    names that no supplied source has: ``_locators``)."""
    answers, policies = split_keys(con, **settings)
    tables, abstains = _split_on(executor, answers, phrases, {t: steps.schema(con, t) for t in TABLES}, policies)
    abstentions(con, abstains)
    for table in TABLES:
        steps.fill(con, table, arrow=tables[table])
    steps.run(con, "gen_claims")
    steps.drop(con, "t_answer_claims")  # its rows are t_gen_claims' now
    locators.invented(con)  # URLs, sections, pages and titles no supplied source has


def _split_on(
    executor: Executor | None,
    answers: list[str],
    phrases: Sequence[str],
    schemas: Mapping[str, Any],
    policies: list[Policy] | None = None,
) -> tuple[dict[str, Any], list[bool]]:
    """split_answers over ``executor`` when the run has a pool (in parts of about a quarter of a worker's
    share); the same tables, their rows in the same order, as one call here."""
    if executor is None or len(answers) < POOL_MIN_ANSWERS:
        return split_answers(answers, phrases, schemas, policies)
    import pyarrow as pa  # type: ignore[import-untyped]

    size = -(-len(answers) // ((os.cpu_count() or 1) * 4))
    starts = range(0, len(answers), size)
    parts = [answers[i : i + size] for i in starts]
    rules = [None if policies is None else policies[i : i + size] for i in starts]
    ids = [range(i, min(i + size, len(answers))) for i in starts]
    n = len(parts)
    done = list(executor.map(split_answers, parts, [tuple(phrases)] * n, [schemas] * n, rules, ids))
    tables = {t: pa.concat_tables([part[t] for part, _ in done]) for t in TABLES}  # the parts' buffers, not copied
    return tables, [a for _, part in done for a in part]


def match(con: duckdb.DuckDBPyConnection) -> None:
    """The match step. Writes t_more_sets (the word and number sets of the texts no splitter made:
    unsplit_texts.sql), t_sim (similarity.sql: every case's generated claim text against each of its
    gold claims) and t_match (match_claims.sql: which generated claim answers which gold claim)."""
    missing = [t for (t,) in con.execute(sql("unsplit_texts")).fetchall()]
    steps.fill(
        con,
        "t_more_sets",
        {
            "text": missing,
            "stems": [sorted(stems(t)) for t in missing],
            "numbers": [sorted(numbers(t)) for t in missing],
        },
    )
    steps.run(con, "similarity")
    steps.run(con, "match_claims", {"min_sim": MIN_SIM, "min_shared_sim": MIN_SHARED_SIM})
    steps.drop(con, "t_sim", "t_text_sets", "t_more_sets")  # read by the match alone
