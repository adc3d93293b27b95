"""One ``analyze`` run: ingest, join to gold, split and judge claims, classify, store.

The relational work is SQL in ``queries/``; Python does only text work
(splitting answers into claims, similarity, judging), and always over
*distinct* texts, so a million traces asking the same hundred questions cost
a hundred splits, not a million.
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

import duckdb
import polars as pl

from . import _locators as locators
from . import _prompt_context as prompt_context
from . import _source_openinference as openinference
from . import _splitting as splitting
from . import _structured as structured
from . import _workers, judges
from ._claims import skipped_kinds, split_answer
from ._corpus import load_corpus, merge
from ._gold import AUTHORITY, GoldError, GoldSet, load_gold, normalise_question
from ._ingest import PATTERNS, IngestReport, Problem, ingest, not_trace_file, trace_files
from ._judging import CachedJudge, judge_tables, load_human_labels
from ._lake import is_url
from ._policy import DEFAULT_POLICY, Policy, attach_policy, exempt_kinds
from ._result import AnalysisResult
from ._store import BUCKETS, DEFAULT_DB, SCHEMA_VERSIONS, columns_table, connect, register_frame, sql
from .judges import LABELS, Judge
from .judges._text import fold, numbers, stems

DEFAULT_ABSTAIN_PHRASES = (
    "cannot verify",
    "can't verify",
    "do not specify",
    "does not specify",
    "not enough information",
    "unable to find",
    "could not find",
    "i don't know",
)
MIN_SIM = 0.3
MIN_SHARED_SIM = 0.1
PART_TRACES = 100_000  # traces classified at a time: keeps memory flat whatever the run's size
# the run's scope: every trace in the files it was given (t_scope, also traces whose spans were
# stored from another file before), or with no files the whole store
_SCOPE = (
    "CREATE OR REPLACE TEMP TABLE t_scope AS "
    "SELECT DISTINCT trace_id FROM file_traces WHERE list_contains(coalesce($files, []), source_file)"
)
_IN_SCOPE = "($files IS NULL OR trace_id IN (SELECT trace_id FROM t_scope))"
_TRACES_IN_SCOPE = f"SELECT count(DISTINCT trace_id) FROM spans WHERE stage = 'request' AND {_IN_SCOPE}"
# about how many distinct answers the run splits: enough to decide whether its text work needs every core
_DISTINCT_ANSWERS = (
    f"SELECT coalesce(approx_count_distinct(answer), 0) FROM spans WHERE answer IS NOT NULL AND {_IN_SCOPE}"
)
_ALL_TRACES_IN_SCOPE = f"SELECT count(DISTINCT trace_id) FROM spans WHERE {_IN_SCOPE}"
# traces in scope with no request span: read, but nothing to join to a case
_NO_REQUEST = (
    "INSERT INTO unmatched_traces "
    "SELECT $run_id, trace_id, 'no_request_span', []::VARCHAR[] FROM spans "
    f"WHERE {_IN_SCOPE} "
    "GROUP BY trace_id HAVING NOT coalesce(bool_or(stage = 'request'), false)"
)


def _gold_tables(con: duckdb.DuckDBPyConnection, gold: GoldSet) -> None:
    from citeline.instrumentation import content_hash

    chunks = pl.DataFrame(
        [
            {
                "chunk_id": c.chunk_id,
                "doc_id": c.doc_id,
                "version": c.version,
                "uri": c.uri,
                "title": c.title,
                "text": c.text,
                "status": c.status,
                "effective_from": c.effective_from,
                "effective_to": c.effective_to,
                "acl": c.acl,
                "content_hash": content_hash(c.text) if c.text else "",
                # 1 primary, 2 secondary, 3 untrusted (_gold.AUTHORITY); NULL: not rated
                "authority_rank": AUTHORITY.index(c.authority) + 1 if c.authority else None,
                "untrusted": c.authority == AUTHORITY[-1],
            }
            for c in gold.corpus.values()
        ],
        schema={
            "chunk_id": pl.Utf8,
            "doc_id": pl.Utf8,
            "version": pl.Utf8,
            "uri": pl.Utf8,
            "title": pl.Utf8,
            "text": pl.Utf8,
            "status": pl.Utf8,
            "effective_from": pl.Date,
            "effective_to": pl.Date,
            "acl": pl.List(pl.Utf8),
            "content_hash": pl.Utf8,
            "authority_rank": pl.Int32,
            "untrusted": pl.Boolean,
        },
    )
    cases = pl.DataFrame(
        [
            {
                "case_id": c.case_id,
                "question_norm": normalise_question(c.question),
                "as_of": c.as_of,
                "expect": c.expect,
                "principal_groups": c.principal_groups,
                "attach": c.attach,
                "require_rank": AUTHORITY.index(c.require_authority) + 1 if c.require_authority else None,
            }
            for c in gold.cases.values()
        ],
        schema={
            "case_id": pl.Utf8,
            "question_norm": pl.Utf8,
            "as_of": pl.Date,
            "expect": pl.Utf8,
            "principal_groups": pl.List(pl.Utf8),
            "attach": pl.Utf8,
            "require_rank": pl.Int32,
        },
    )
    claims = pl.DataFrame(
        [
            {
                "case_id": case.case_id,
                "claim_id": c.claim_id,
                "text": c.text,
                "facts": c.facts,
                "bundles": c.support,
                "contradicts": c.contradicts,
                "evidence_ids": sorted({x for b in c.support for x in b} | set(c.contradicts)),
            }
            for case in gold.cases.values()
            for c in case.claims
        ],
        schema={
            "case_id": pl.Utf8,
            "claim_id": pl.Utf8,
            "text": pl.Utf8,
            "facts": pl.List(pl.Utf8),
            "bundles": pl.List(pl.List(pl.Utf8)),
            "contradicts": pl.List(pl.Utf8),
            "evidence_ids": pl.List(pl.Utf8),
        },
    )
    register_frame(con, "t_gold_chunks", chunks)
    register_frame(con, "t_gold_cases", cases)
    register_frame(con, "t_gold_claims", claims)


def split_answers(
    answers: Sequence[str],
    phrases: Sequence[str],
    policies: Sequence[Policy] | None = None,
    ids: Sequence[int] | None = None,
) -> dict[str, list[Any]]:
    """Each answer's claims (text, labels, factual) and whether it abstains, as columns; ``policies[i]`` is
    the policy answer ``i`` is split by (the default when None), ``ids[i]`` the number its rows carry
    (``split``; its position when None). Text that is no claim is counted per answer and kind (the
    ``skipped_*`` columns).

    Pure and picklable: a large run splits its answers on every core (``_answer_tables``)."""
    claim_cols = ("split", "claim_idx", "text", "labels", "factual", "joins", "stems", "numbers")
    extra = ("skipped_split", "skipped_kind", "skipped_units", "ref_split", "ref_label", "ref_text")
    cols: dict[str, list[Any]] = {k: [] for k in (*claim_cols, *extra)}
    abstains: list[bool] = []
    folded_phrases = tuple(fold(p) for p in phrases)
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
        folded_answer = fold(answer)
        has_phrase = any(p in folded_answer for p in folded_phrases)
        abstains.append(has_phrase and not cited_factual)  # a structured answer's own say wins (per trace)
    cols["abstains"] = abstains
    return cols


#: below this many distinct answers one process splits them (a worker costs about a second to start)
PARALLEL_ANSWERS = 20_000


def _answer_tables(con: duckdb.DuckDBPyConnection, phrases: Sequence[str], settings: dict[str, Any]) -> None:
    """Split every distinct prose answer once per policy it is split by; decide abstention once per answer."""
    answers, policies = splitting.split_keys(con, **settings)  # t_split_keys: each trace's split of its answer
    cols = _split_everywhere(answers, phrases, policies)
    abstains = cols.pop("abstains")
    register_frame(
        con,
        "t_text_sets",
        columns_table(
            {"text": cols["text"], "stems": cols.pop("stems"), "numbers": cols.pop("numbers")},
            {"text": pl.Utf8, "stems": pl.List(pl.Utf8), "numbers": pl.List(pl.Utf8)},
        ),
    )
    skipped = {k.removeprefix("skipped_"): cols.pop(k) for k in list(cols) if k.startswith("skipped_")}
    register_frame(
        con, "t_answer_skipped", columns_table(skipped, {"split": pl.Int64, "kind": pl.Utf8, "units": pl.Int64})
    )
    refs = {k.removeprefix("ref_"): cols.pop(k) for k in list(cols) if k.startswith("ref_")}
    register_frame(  # the answer's reference list: its URLs and locators are checked (_locators.py)
        con, "t_answer_refs", columns_table(refs, {"split": pl.Int64, "label": pl.Utf8, "text": pl.Utf8})
    )
    register_frame(
        con,
        "t_answer_claims",
        columns_table(
            cols,
            {
                "split": pl.Int64,
                "claim_idx": pl.Int64,
                "text": pl.Utf8,
                "labels": pl.List(pl.Utf8),
                "factual": pl.Boolean,
                "joins": pl.List(pl.Int64),
            },
        ),
    )
    splitting.abstentions(con, abstains)


def _split_everywhere(
    answers: list[str], phrases: Sequence[str], policies: list[Policy] | None = None
) -> dict[str, list[Any]]:
    """split_answers over every core for a large run; the same columns, in the same order."""
    workers = _workers.cores()
    if len(answers) < PARALLEL_ANSWERS or workers < 2:
        return split_answers(answers, phrases, policies)
    size = -(-len(answers) // (workers * 4))
    starts = range(0, len(answers), size)
    parts = [answers[i : i + size] for i in starts]
    rules = [None if policies is None else policies[i : i + size] for i in starts]
    ids = [range(i, min(i + size, len(answers))) for i in starts]
    with _workers.pool(workers) as pool:
        n = len(parts)
        done = list(pool.map(split_answers, parts, [tuple(phrases)] * n, rules, ids))
    return {k: [x for d in done for x in d[k]] for k in done[0]}


def _similarity_table(con: duckdb.DuckDBPyConnection) -> None:
    """t_sim: lexical_similarity and number_agreement of every (case, generated claim text, gold claim).

    The word and number sets of split claims come from the splitting workers (t_text_sets); the few
    texts not split there (structured answers' claims, gold claims) get theirs here. The set
    arithmetic runs in SQL on every core: |a & b| / |a | b| and |a & b| / |b|, as ``overlap`` and
    ``shared_numbers`` compute them."""
    missing = [
        r[0]
        for r in con.execute(
            "SELECT DISTINCT text FROM t_gen_claims WHERE factual AND text NOT IN (SELECT text FROM t_text_sets) "
            "UNION SELECT DISTINCT text FROM t_gold_claims"
        ).fetchall()
    ]
    register_frame(
        con,
        "t_more_sets",
        columns_table(
            {
                "text": missing,
                "stems": [sorted(stems(t)) for t in missing],
                "numbers": [sorted(numbers(t)) for t in missing],
            },
            {"text": pl.Utf8, "stems": pl.List(pl.Utf8), "numbers": pl.List(pl.Utf8)},
        ),
    )
    con.execute("CREATE OR REPLACE TEMP TABLE t_sim AS " + _sql_text("similarity"))


class InputError(Exception):
    """The run cannot start on this input (no trace files, an unreadable gold set); nothing is stored."""


def _load_evidence(gold: str | Path | None, corpus: str | Path | None) -> tuple[GoldSet, str]:
    """The gold set a run reads (cases and corpus), from --gold, --corpus or both; and its source's name."""
    if gold is None and corpus is None:
        raise InputError("give a gold set (--gold FILE) or a corpus (--corpus FILE), or both")
    gold_set = load_gold(gold) if gold is not None else GoldSet(source="")
    if gold is not None and gold_set.unreadable is not None:
        raise InputError(f"{gold}: cannot read the gold set: {gold_set.unreadable}")
    if corpus is not None:
        extra = load_corpus(corpus)
        if extra.unreadable is not None:
            raise InputError(f"{corpus}: cannot read the corpus: {extra.unreadable}")
        merge(gold_set, extra)
    source = str(gold) if gold is not None else ""
    return gold_set, source + (("; " if source else "") + f"corpus:{corpus}" if corpus is not None else "")


def _check_traces(traces: Sequence[str | Path] | None) -> None:
    for p in map(Path, (t for t in traces or () if not is_url(t))):  # object storage: listed when read
        if not p.exists():
            raise InputError(f"--traces {p}: no such file or folder; give the folder your app writes traces to")
        found = trace_files([p])
        if not found:
            raise InputError(f"--traces {p}: no trace files in it ({', '.join(PATTERNS)})")
        if all((why := not_trace_file(f)) is not None for f in found):  # a gold file, a report, a CSV
            what = f"{p} is not a trace file ({why})" if p.is_file() else f"{p}: none of its files is a trace file"
            raise InputError(f"--traces {what}; give the folder your app writes traces to")


def analyze(
    db: str | Path = DEFAULT_DB,
    *,
    gold: str | Path | None = None,
    corpus: str | Path | None = None,
    traces: Sequence[str | Path] | None = None,
    judge: str | Judge = "rules",
    judge_options: Mapping[str, Any] | None = None,
    labels: str | Path | None = None,
    abstain_phrases: Sequence[str] = DEFAULT_ABSTAIN_PHRASES,
    answer_keys: Mapping[str, str] | None = None,
    attach: str | None = None,
    exempt: Collection[str] | None = None,
    progress: Callable[[int, int], None] | None = None,
    con: duckdb.DuckDBPyConnection | None = None,
    on_phase: Callable[[str], None] | None = None,
) -> AnalysisResult:
    """Classify every claim of every trace; store the run. A trace that answers a gold case is judged
    against it (basis ``gold``); every other trace against the corpus and itself alone (basis ``corpus``,
    docs/analyzer.md "Corpus basis"). ``gold`` is a gold set, ``corpus`` a corpus file (``_corpus``):
    either or both.

    ``attach`` (an attachment policy) and ``exempt`` (the kinds of text that need no citation) override
    the gold file's ``policy:`` for this run; a case's own ``attach:`` still wins (docs/analyzer.md, "How
    an answer becomes claims").

    Raises :class:`InputError` (and stores nothing) when a traces path does not exist or
    holds no trace file, the gold set or the corpus cannot be read at all, or neither is given.
    """
    if attach is not None:
        attach = attach_policy(attach, "attach")
    if exempt is not None:
        exempt = exempt_kinds(exempt if isinstance(exempt, str) else list(exempt), "exempt")
    support_judge = judges.load(judge, **(judge_options or {})) if isinstance(judge, str) else judge
    keys = structured.keys_for(answer_keys)  # raises on a role citeline does not read, before anything runs
    gold_set, gold_source = _load_evidence(gold, corpus)
    _check_traces(traces)
    phrases = [*abstain_phrases, *gold_set.abstain_phrases]  # the gold file may add its own
    own = con is None
    con = con or connect(db)
    try:
        run_id = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:6]
        started = dt.datetime.now(dt.UTC).replace(tzinfo=None)
        report = ingest(con, traces, progress=progress) if traces else IngestReport()
        if traces and all(is_url(t) for t in traces) and not report.paths:
            raise InputError(
                "--traces: nothing readable in object storage: "
                + "; ".join(str(p) for p in report.problems[:5])
                + " (credentials come from the environment or profile: AWS_ACCESS_KEY_ID, AWS_PROFILE, ...)"
            )
        phase = on_phase or (lambda _name: None)
        human, label_errors = load_human_labels(labels)
        _gold_tables(con, gold_set)
        register_frame(con, "t_human", human)
        files = report.paths if traces else None
        scope = {"files": files}
        con.execute(_SCOPE, scope)
        n_traces = int(con.execute(_TRACES_IN_SCOPE, scope).fetchall()[0][0])
        if int(con.execute(_DISTINCT_ANSWERS, scope).fetchall()[0][0]) >= PARALLEL_ANSWERS:
            _workers.start()  # the workers load while DuckDB joins traces to cases
        parts = max(1, -(-n_traces // PART_TRACES))
        bounds = _slices(con, parts, scope)
        cached_judge = CachedJudge(con, support_judge)
        _question_table(con, scope)
        split_settings = {"attach": attach, "exempt": exempt, "file_attach": gold_set.attach}
        split_settings["file_exempt"] = gold_set.exempt
        joined_by_content, unjoined = 0, set[str]()
        oi_stats = openinference.Stats()
        for part, (lo, hi) in enumerate(bounds):  # bounded memory: one slice of the traces at a time
            of = f" ({part + 1}/{parts})" if parts > 1 else ""
            phase("joining traces to cases" + of)
            join_traces(
                con,
                {"part": part, "parts": parts, "lo": lo, "hi": hi, **scope},
                oi_stats,
                # coverage: a trace that joined no case is recorded with its reason (it is judged on the
                # corpus basis)
                unmatched=lambda: con.execute(
                    "INSERT INTO unmatched_traces SELECT $r, trace_id, unmatched_reason, candidates "
                    "FROM t_traces WHERE case_id IS NULL",
                    {"r": run_id},
                ),
                answer_keys=keys,
                corpus_basis=True,
            )
            joined_by_content += _identity_by_content(con, unjoined)
            _span_chunks(con, run_id, oi_stats)
            _content_drift(con)
            con.execute(sql("restricted_by_content"))
            con.execute(sql("recorded_acl"))  # ACLs the app's index recorded, and what the page showed
            con.execute(sql("render_shown"))
            phase("splitting answers into claims" + of)
            _answer_tables(con, phrases, split_settings)
            con.execute("CREATE OR REPLACE TEMP TABLE t_gen_claims AS " + _sql_text("gen_claims"))
            locators.invented(con)  # URLs, sections, pages and titles no supplied source has
            _similarity_table(con)
            con.execute(
                "CREATE OR REPLACE TEMP TABLE t_match AS " + _sql_text("match_claims"),
                {"min_sim": MIN_SIM, "min_shared_sim": MIN_SHARED_SIM},
            )
            phase("judging support" + of)
            judge_tables(con, gold_set, cached_judge)
            splitting.store_skipped(con, run_id)
            phase("classifying" + of)
            con.execute(
                "INSERT INTO claim_results BY NAME " + _sql_text("classify"),
                {
                    "run_id": run_id,
                    "labels": list(LABELS),
                    "judge": judges.ident(support_judge),
                },
            )
        phase("storing the run")
        con.execute(_HUMAN_LABELLED, {"run_id": run_id})
        con.execute(
            "INSERT INTO run_support SELECT $run_id, case_id, "
            "list_sort(list_distinct(flatten(list(flatten(bundles))))) FROM t_gold_claims GROUP BY case_id",
            {"run_id": run_id},
        )
        con.execute(
            "INSERT INTO run_chunks BY NAME SELECT $run_id AS run_id, chunk_id, text, version FROM t_gold_chunks "
            "WHERE text <> '' AND chunk_id IN "
            "(SELECT unnest(chunk_ids) FROM run_support WHERE run_id = $run_id AND case_id IN "
            "(SELECT case_id FROM claim_results WHERE run_id = $run_id AND bucket <> 'ok') "
            "UNION SELECT unnest(cited_chunks) FROM claim_results WHERE run_id = $run_id)",
            {"run_id": run_id},
        )
        con.execute("INSERT INTO case_results BY NAME " + _sql_text("case_verdicts"), {"run_id": run_id})
        con.execute(sql("run_feedback"), {"run_id": run_id})  # users' reports: kept, their claims flagged
        con.execute(sql("flag_feedback"), {"run_id": run_id})
        con.execute(_NO_REQUEST, {**scope, "run_id": run_id})
        store_missing_cases(con, run_id)
        traces_read = int(con.execute(_ALL_TRACES_IN_SCOPE, scope).fetchall()[0][0])
        unmatched = int(
            con.execute("SELECT count(*) FROM unmatched_traces WHERE run_id = $r", {"r": run_id}).fetchall()[0][0]
        )
        errors = gold_set.errors + label_errors
        report.problems.extend(identity_problems(joined_by_content, unjoined, oi_stats))
        _store_problems(con, run_id, report.problems, errors + gold_set.warnings)  # drafts: noted, not skipped
        counts = store_run_row(
            con,
            run_id,
            started,
            gold_source=gold_source,
            judge=judges.ident(support_judge),
            skipped=report.skipped + len(errors),
            traces_read=traces_read,
            gold_hash="+".join(gold_hash(p) for p in (gold, corpus) if p is not None),
        )
        result = AnalysisResult(run_id, counts, report, errors, unmatched, traces_read=traces_read, db=str(db), con=con)
        result.warnings = [str(w) for w in gold_set.warnings]
        result.skipped_text = splitting.skipped_counts(con, run_id)
        result.tallies = {"joined_by_content": joined_by_content, "unjoined": unjoined, "openinference": oi_stats}
        result.judge = {
            "name": judges.ident(support_judge),
            "asked": cached_judge.asked,
            "cached": cached_judge.hits,
            "failed": cached_judge.failures,
            **_usage(support_judge),
        }
        if own and str(db) == ":memory:":  # the store goes with this connection: read the rows now
            _ = result.claims, result.cases, result.coverage, result.by_basis
        if own:
            result.con = None
        return result
    finally:
        _workers.stop()
        if own:
            con.close()


_HUMAN_LABELLED = """
INSERT INTO human_labelled BY NAME
SELECT c.run_id, c.trace_id, c.claim_text, c.cited_chunks,
       list_transform(c.cited_chunks, lambda x: coalesce(m.texts[x], '')) AS evidence, h.label AS human_label,
       -- a sample sheet's row: what the judge said and the bucket it gave in the run it was drawn from
       h.sampled_run, s.support_label AS judge_label, s.bucket AS judge_bucket
FROM claim_results AS c
JOIN t_human AS h ON h.trace_id = c.trace_id AND h.claim_key = coalesce(c.gold_claim_id, c.claim_text)
LEFT JOIN claim_results AS s ON s.run_id = h.sampled_run AND s.trace_id = h.trace_id
      AND coalesce(s.gold_claim_id, s.claim_text) = h.claim_key,
     (SELECT map_from_entries(list({'key': chunk_id, 'value': text})) AS texts FROM t_gold_chunks) AS m
WHERE c.run_id = $run_id AND c.claim_text IS NOT NULL
"""


def join_traces(
    con: duckdb.DuckDBPyConnection,
    params: Mapping[str, Any],
    stats: openinference.Stats,
    unmatched: Callable[[], object] | None = None,
    answer_keys: Mapping[str, tuple[str, ...]] | None = None,
    corpus_basis: bool = False,
) -> None:
    """t_traces: the slice's traces joined to their gold cases, each stage filled by the best source
    that observed it (docs/design.md, "Trace sources").

    1. each source's documents joined to gold chunks where that is text work (OpenInference:
       ``t_oi_docs``); 2. ``run_traces.sql`` picks each stage's span, citeline's before another
    source's, and joins the trace to at most one case; ``unmatched`` sees the traces that joined
    none; they stay with ``case_id`` NULL when ``corpus_basis`` (judged on the corpus basis), else
    they are left out; 3. a context no span traced is read off the generation's
    prompt, whichever source recorded prompt and chunks (``_prompt_context``); 4. an answer
    recorded as JSON becomes the structured generation it is (``_structured``).
    """
    openinference.join_documents(con, stats, params)
    con.execute(
        "CREATE OR REPLACE TEMP TABLE t_traces AS " + _sql_text("run_traces"),
        {"schema_versions": SCHEMA_VERSIONS, **params},
    )
    if unmatched is not None:
        unmatched()
    if not corpus_basis:
        con.execute("DELETE FROM t_traces WHERE case_id IS NULL")
    prompt_context.read(con, stats)
    _json_answers(con, answer_keys)


def _json_answers(con: duckdb.DuckDBPyConnection, answer_keys: Mapping[str, tuple[str, ...]] | None) -> None:
    """Answers recorded as JSON text: read once per distinct answer, applied in SQL."""
    answers = [a for (a,) in con.execute(sql("json_answers")).fetchall() if structured.looks_like_json(a)]
    cols = structured.tables(answers, dict(answer_keys or structured.KEYS))
    if not cols["answer"]:
        return
    register_frame(
        con,
        "t_json_answers",
        columns_table(
            cols,
            {
                "answer": pl.Utf8,
                "prose": pl.Utf8,
                "claims": pl.List(pl.Utf8),
                "ev_claim": pl.List(pl.Int64),
                "refs": pl.List(pl.Utf8),
                "norm_refs": pl.List(pl.Utf8),
                "quotes": pl.List(pl.Utf8),
                "abstained": pl.Boolean,
                "error": pl.Utf8,
            },
        ),
    )
    con.execute(sql("apply_json_answers"))


def gold_hash(path: str | Path) -> str:
    """The gold set's content hash (the files' bytes, a folder's files in name order): what a run was
    judged against, so a change of gold is told apart from a change of the app."""
    import hashlib

    p = Path(path)
    h = hashlib.sha256()
    for f in sorted(p.iterdir()) if p.is_dir() else [p]:
        if f.is_file():
            h.update(f.name.encode() + b"\0")
            with open(f, "rb") as fh:
                while chunk := fh.read(1 << 20):
                    h.update(chunk)
    return h.hexdigest()[:16]


def _usage(judge: Judge) -> dict[str, float]:
    usage = getattr(judge, "usage", None)
    return dict(usage()) if callable(usage) else {}


_REMAP = (  # every chunk id list of t_traces, through the derived-id map (content_identity.sql)
    "CREATE OR REPLACE TEMP TABLE t_traces AS SELECT * REPLACE ("
    + ", ".join(
        f"list_transform({col}, lambda x: coalesce(m.ids[x], x)) AS {col}"
        for col in ("retrieved", "context", "map_chunk_id", "evidence_chunk", "res_chunk_id", "ren_chunk_id")
    )
    + ") FROM t_traces, (SELECT map_from_entries(list({'key': from_id, 'value': to_id})) AS ids "
    "FROM t_id_map WHERE to_id IS NOT NULL) AS m"
)


def _identity_by_content(con: duckdb.DuckDBPyConnection, unjoined: set[str]) -> int:
    """Derived chunk ids in this slice -> gold ids by content hash; how many joined (unjoined collected)."""
    con.execute(sql("content_identity"))
    rows = con.execute("SELECT from_id, to_id FROM t_id_map").fetchall()
    joined = sum(1 for _f, to in rows if to is not None)
    unjoined.update(f for f, to in rows if to is None)
    if joined:
        con.execute(_REMAP)
    return joined


_DERIVED_SPAN_CHUNKS = """
INSERT INTO run_span_chunks
SELECT $run_id, s.span_id, list_transform(s.chunk_id, lambda x: coalesce(m.ids[x], x))
FROM spans AS s, (SELECT map_from_entries(list({'key': from_id, 'value': to_id})) AS ids
                  FROM t_id_map WHERE to_id IS NOT NULL) AS m
WHERE s.stage = 'retrieval' AND s.derived_ids > 0 AND s.trace_id IN (SELECT trace_id FROM t_traces)
"""


def _span_chunks(con: duckdb.DuckDBPyConnection, run_id: str, oi: openinference.Stats) -> None:
    """run_span_chunks: retrieval spans whose ids this slice read as other (gold) ids."""
    if oi.span_chunks:
        con.executemany(
            "INSERT INTO run_span_chunks VALUES (?, ?, ?)", [(run_id, span, ids) for span, ids in oi.span_chunks]
        )
        oi.span_chunks.clear()
    if con.execute("SELECT count(*) FROM t_id_map WHERE to_id IS NOT NULL").fetchall()[0][0]:
        con.execute(_DERIVED_SPAN_CHUNKS, {"run_id": run_id})


def _content_drift(con: duckdb.DuckDBPyConnection) -> None:
    """t_trace_drift: which traces of the slice served a chunk with other text than the gold's."""
    con.execute(sql("content_drift"))
    if con.execute("SELECT count(*) FROM t_drift").fetchall()[0][0]:
        con.execute(sql("content_drift_traces"))
    else:
        con.execute(
            "CREATE OR REPLACE TEMP TABLE t_trace_drift "
            "(trace_id VARCHAR, chunk_id VARCHAR, served_hash VARCHAR, gold_hash VARCHAR)"
        )


def _question_table(con: duckdb.DuckDBPyConnection, scope: dict[str, Any]) -> None:
    """t_question_norm: each distinct question of a request without a case id, normalised once."""
    questions = con.execute(
        "SELECT DISTINCT question FROM spans WHERE stage = 'request' AND case_id IS NULL AND question IS NOT NULL "
        f"AND {_IN_SCOPE}",
        scope,
    ).fetchall()
    asked = {n for (n,) in con.execute("SELECT DISTINCT question_norm FROM t_gold_cases").fetchall()}
    register_frame(
        con,
        "t_question_norm",
        pl.DataFrame(
            {"question": [q for (q,) in questions], "question_norm": [_question_norm(q, asked) for (q,) in questions]},
            schema={"question": pl.Utf8, "question_norm": pl.Utf8},
        ),
    )


def _question_norm(question: str, asked: set[str]) -> str:
    """The normalised question; a root span's JSON input (Haystack's pipeline data) -> the gold question in it."""
    norm = normalise_question(question)
    if norm in asked:
        return norm
    hits = {n for leaf in openinference.question_leaves(question) if (n := normalise_question(leaf)) in asked}
    return hits.pop() if len(hits) == 1 else norm


def _slices(con: duckdb.DuckDBPyConnection, parts: int, scope: dict[str, Any]) -> list[tuple[int, int]]:
    """Cut the run into ``parts`` slices of traces (t_slices); the rowid range of each."""
    if parts == 1:  # one slice: every trace, no table needed beyond an empty one for the query to bind
        con.execute("CREATE OR REPLACE TEMP TABLE t_slices (trace_id VARCHAR, slice BIGINT)")
        return [(0, 0)]
    con.execute("CREATE OR REPLACE TEMP TABLE t_slices AS " + _sql_text("run_slices"), {"parts": parts, **scope})
    rows = con.execute("SELECT slice, min(first_row), max(last_row) FROM t_slices GROUP BY slice ORDER BY slice")
    return [(int(lo), int(hi)) for _slice, lo, hi in rows.fetchall()]


def _sql_text(name: str) -> str:
    """A query file's text, ready to follow CREATE ... AS / INSERT INTO."""
    return sql(name).strip().rstrip(";")


def store_missing_cases(con: duckdb.DuckDBPyConnection, run_id: str) -> None:
    """The gold cases no trace of the run answered (corpus-basis rows have no case: they answer none)."""
    con.execute(
        "INSERT INTO missing_cases SELECT $r, case_id FROM t_gold_cases "
        "WHERE case_id NOT IN (SELECT case_id FROM case_results WHERE run_id = $r AND case_id IS NOT NULL)",
        {"r": run_id},
    )


def identity_problems(joined_by_content: int, unjoined: set[str], oi: openinference.Stats) -> list[Problem]:
    """What the run says of chunk identity: ids joined by content or not at all, OpenInference documents."""
    said = []
    if joined_by_content or unjoined:
        said.append(
            Problem(
                "chunk identity",
                "-",
                "citeline.chunks.derived_ids",
                f"{joined_by_content} chunk id(s) the app did not give joined the gold corpus by content hash; "
                f"{len(unjoined)} joined nothing (their text is not in the gold corpus, or met two texts): "
                f"{', '.join(sorted(unjoined)[:5])}",
                skipped=False,
            )
        )
    return [*said, *openinference.problems(oi)]


def store_run_row(
    con: duckdb.DuckDBPyConnection,
    run_id: str,
    started: dt.datetime,
    *,
    gold_source: str,
    judge: str,
    skipped: int,
    traces_read: int,
    gold_hash: str,
) -> dict[str, int]:
    """The run's row in ``runs`` (``traces``: the traces that joined a gold case); returns claims per bucket."""
    counts = dict.fromkeys(BUCKETS, 0)
    for bucket, n in con.execute(
        "SELECT bucket, count(*) FROM claim_results WHERE run_id = $r GROUP BY bucket", {"r": run_id}
    ).fetchall():
        counts[bucket] = int(n)
    (n_cases,) = con.execute(
        "SELECT count(*) FROM case_results WHERE run_id = $r AND basis = 'gold'", {"r": run_id}
    ).fetchall()[0]
    con.execute(
        "INSERT INTO runs (run_id, started_at, finished_at, gold_source, judge, traces, claims, skipped, "
        "traces_read, gold_hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [run_id, started, dt.datetime.now(dt.UTC).replace(tzinfo=None), gold_source, judge, int(n_cases),
         sum(counts.values()), skipped, traces_read, gold_hash],
    )  # fmt: skip
    return counts


def _store_problems(
    con: duckdb.DuckDBPyConnection, run_id: str, problems: list[Problem], errors: list[GoldError]
) -> None:
    now = dt.datetime.now(dt.UTC).replace(tzinfo=None)
    rows = [(run_id, p.source, p.place, p.field, p.message, now) for p in problems]
    rows += [(run_id, e.file, e.where, e.field, e.message, now) for e in errors]
    if rows:
        con.executemany("INSERT INTO input_problems VALUES (?, ?, ?, ?, ?, ?)", rows)


__all__ = ["AnalysisResult", "InputError", "analyze"]
