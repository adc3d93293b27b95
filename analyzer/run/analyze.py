"""One ``analyze`` run, as its named steps: ingest -> join -> split/match -> judge -> classify -> store.

Each step is a function with a docstring that says what it reads and writes, over SQL files in
``queries/`` whose headers declare the tables they make (``_steps``). Python does only text work
(splitting answers into claims, similarity, judging), and always over *distinct* texts. A large
run is classified a slice of traces at a time, so memory stays flat.
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

import duckdb

from citeline.analyzer import judges, steps
from citeline.analyzer import workers as _workers
from citeline.analyzer.claims.policy import attach_policy, exempt_kinds
from citeline.analyzer.gold.corpus import load_corpus, merge
from citeline.analyzer.gold.goldset import GoldSet, load_gold
from citeline.analyzer.judges import LABELS, Judge
from citeline.analyzer.run import joining, splitting, storing
from citeline.analyzer.run.judging import CachedJudge, human_table, judge_tables
from citeline.analyzer.run.result import AnalysisResult
from citeline.analyzer.sources import structured
from citeline.analyzer.sources.ingest import PATTERNS, IngestReport, ingest, not_trace_file, trace_files
from citeline.analyzer.sources.lake import is_url
from citeline.analyzer.store import DEFAULT_DB, connect

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
#: what a run's pool of workers imports as it starts, while DuckDB joins traces to cases
PRELOAD = ("citeline.analyzer.run.splitting", "citeline.analyzer.judges._rules")


class InputError(Exception):
    """The run cannot start on this input (no trace files, an unreadable gold set); nothing is stored."""


def load_evidence(gold: str | Path | GoldSet | None, corpus: str | Path | None) -> tuple[GoldSet, str]:
    """The gold set a run reads (cases and corpus), from --gold, --corpus or both; and its source's name.
    A gold set already loaded (a partitioned run's worker reads it once for all its partitions) is used
    as it is."""
    if gold is None and corpus is None:
        raise InputError("give a gold set (--gold FILE) or a corpus (--corpus FILE), or both")
    if isinstance(gold, GoldSet):
        if corpus is not None:
            raise InputError("a loaded gold set takes no corpus file: merge it when it is loaded")
        return gold, gold.source
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


def run_settings(
    attach: str | None, exempt: Collection[str] | None, answer_keys: Mapping[str, str] | None
) -> tuple[str | None, Collection[str] | None, Mapping[str, tuple[str, ...]]]:
    """The run's attachment policy, exempt kinds and answer keys, checked before anything runs (a wrong one
    raises, naming the option)."""
    if attach is not None:
        attach = attach_policy(attach, "attach")
    if exempt is not None:
        exempt = exempt_kinds(exempt if isinstance(exempt, str) else list(exempt), "exempt")
    return attach, exempt, structured.keys_for(answer_keys)


def nothing_readable(problems: Sequence[object]) -> InputError:
    """The error for --traces in object storage of which nothing could be read, naming the first problems."""
    return InputError(
        "--traces: nothing readable in object storage: "
        + "; ".join(str(p) for p in problems[:5])
        + " (credentials come from the environment or profile: AWS_ACCESS_KEY_ID, AWS_PROFILE, ...)"
    )


def check_traces(traces: Sequence[str | Path] | None) -> None:
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
    gold: str | Path | GoldSet | None = None,
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
    on_progress: Callable[[str, int, int], None] | None = None,
    known: Mapping[str, tuple[str, str]] | None = None,
) -> AnalysisResult:
    """Classify every claim of every trace; store the run. A trace that answers a gold case is judged
    against it (basis ``gold``); every other trace against the corpus and itself alone (basis ``corpus``,
    docs/analyzer.md "Corpus basis"). ``gold`` is a gold set, ``corpus`` a corpus file (``_corpus``):
    either or both.

    ``attach`` (an attachment policy) and ``exempt`` (the kinds of text that need no citation) override
    the gold file's ``policy:`` for this run; a case's own ``attach:`` still wins (docs/analyzer.md, "How
    an answer becomes claims").

    ``progress`` sees the bytes ingested, ``on_phase`` each step of each slice as it starts and
    ``on_progress`` the traces classified after each slice (the CLI shows them on a terminal).

    ``known`` holds judgments made earlier in the same run elsewhere, by cache key (a partitioned run's
    worker passes those of its earlier partitions): they are read as cached and not stored again, since
    the run that made them stored them.

    Raises :class:`InputError` (and stores nothing) when a traces path does not exist or
    holds no trace file, the gold set or the corpus cannot be read at all, or neither is given.
    """
    attach, exempt, keys = run_settings(attach, exempt, answer_keys)
    support_judge = judges.load(judge, **(judge_options or {})) if isinstance(judge, str) else judge
    gold_set, gold_source = load_evidence(gold, corpus)
    check_traces(traces)
    phrases = [*abstain_phrases, *gold_set.abstain_phrases]  # the gold file may add its own
    split_settings = {"attach": attach, "exempt": exempt, "file_attach": gold_set.attach,
                      "file_exempt": gold_set.exempt}  # fmt: skip
    phase = on_phase or (lambda _name: None)
    tick = on_progress or (lambda _name, _done, _total: None)
    own = con is None
    con = con or connect(db)
    try:
        run_id = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:6]
        started = dt.datetime.now(dt.UTC).replace(tzinfo=None)
        # ingest: the trace files' spans into the store
        report = ingest(con, traces, progress=progress) if traces else IngestReport()
        if traces and all(is_url(t) for t in traces) and not report.paths:
            raise nothing_readable(report.problems)
        label_errors = human_table(con, labels)
        scope = joining.begin(con, gold_set, report.paths if traces else None)
        pool = _workers.start(PRELOAD) if scope.distinct_answers >= splitting.PARALLEL_ANSWERS else None
        cached_judge = CachedJudge(con, support_judge, known)
        tallies = joining.Tallies()
        parts, done = len(scope.slices), 0
        for part in range(parts):  # bounded memory: one slice of the traces at a time
            of = f" ({part + 1}/{parts})" if parts > 1 else ""
            phase("joining traces to cases" + of)
            joining.join(con, scope.params(part), tallies, run_id=run_id, answer_keys=keys)
            phase("splitting answers into claims" + of)
            splitting.split(con, phrases, split_settings, pool)
            splitting.match(con)
            phase("judging support" + of)
            judge_tables(con, gold_set, cached_judge)
            splitting.store_skipped(con, run_id)
            phase("classifying" + of)
            steps.run(con, "classify", {"run_id": run_id, "labels": list(LABELS), "judge": judges.ident(support_judge)})
            done += int(con.execute("SELECT count(*) FROM t_traces").fetchall()[0][0])
            tick("classified traces", done, scope.classified)
        phase("storing the run")
        storing.store_results(con, run_id, scope.files)
        errors = gold_set.errors + label_errors
        report.problems.extend(tallies.problems())
        counts = storing.store_run(
            con,
            run_id,
            started,
            problems=report.problems,
            errors=errors + gold_set.warnings,  # drafts: noted, not skipped
            gold_source=gold_source,
            judge=judges.ident(support_judge),
            skipped=report.skipped + len(errors),
            traces_read=scope.traces,
            gold_hash=evidence_hash(gold, corpus),
        )
        unmatched = storing.unmatched_count(con, run_id)
        result = AnalysisResult(
            run_id, counts, report, errors, unmatched, traces_read=scope.traces, db=str(db), con=con
        )
        result.warnings = [str(w) for w in gold_set.warnings]
        result.skipped_text = splitting.skipped_counts(con, run_id)
        result.tallies = {"joined_by_content": tallies.joined_by_content, "unjoined": tallies.unjoined,
                          "openinference": tallies.oi}  # fmt: skip
        result.judge = {"name": judges.ident(support_judge), **cached_judge.counts(), **usage(support_judge)}
        if own and str(db) == ":memory:":  # the store goes with this connection: read the rows now
            _ = result.claims, result.cases, result.coverage, result.by_basis
        if own:
            result.con = None
        return result
    finally:
        _workers.stop()
        if own:
            con.close()


def evidence_hash(gold: str | Path | GoldSet | None, corpus: str | Path | None) -> str:
    """What the run was judged against, as the runs row records it: the gold and corpus files' hashes
    ("+" between them); a gold set handed in already read adds none (its files were hashed by who read it)."""
    return "+".join(gold_hash(p) for p in (gold, corpus) if p is not None and not isinstance(p, GoldSet))


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


def usage(judge: Judge) -> dict[str, float]:
    """What the judge says it used (an LLM judge's requests and tokens); {} for one that keeps no count."""
    got = getattr(judge, "usage", None)
    return dict(got()) if callable(got) else {}


__all__ = ["AnalysisResult", "InputError", "analyze"]
