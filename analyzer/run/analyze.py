"""One ``analyze`` run, as its named steps: ingest -> join -> split/match -> judge -> classify -> store.

Each step is a function with a docstring that says what it reads and writes, over SQL files in
``queries/`` whose headers declare the tables they make (``_steps``). Python does only text work
(splitting answers into claims, similarity, judging), and always over *distinct* texts. A large
run is classified a slice of traces at a time, so memory stays flat.

A run begins and ends the same way on either engine (this one, or partitions on Dask:
``scaleout/partitioned.py``): :func:`prepare` checks and reads what the run is (its
:class:`RunOptions`) into a :class:`Setup`, :class:`RunStamp` names it, and :func:`finish` stores its
``runs`` row and makes its :class:`AnalysisResult` from what it counted (a :class:`Tally`).
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb

from citeline.analyzer import judges, steps
from citeline.analyzer import workers as _workers
from citeline.analyzer.gold.corpus import load_corpus, merge
from citeline.analyzer.gold.goldset import GoldError, GoldSet, load_gold
from citeline.analyzer.judges import LABELS, Judge
from citeline.analyzer.run import joining, splitting, storing
from citeline.analyzer.run.judging import human_table, judge_tables
from citeline.analyzer.run.judgment_cache import CachedJudge
from citeline.analyzer.run.options import DEFAULT_ABSTAIN_PHRASES, RunOptions
from citeline.analyzer.run.result import AnalysisResult, Tally
from citeline.analyzer.sources.ingest import PATTERNS, IngestReport, ingest, trace_files
from citeline.analyzer.sources.lake import is_url
from citeline.analyzer.sources.sniffing import not_trace_file
from citeline.analyzer.store import DEFAULT_DB, connect
from citeline.analyzer.store import views as store_views

#: what a run's pool of workers imports as it starts, while DuckDB joins traces to cases (pyarrow: a worker
#: hands its splits back as Arrow tables)
PRELOAD = ("citeline.analyzer.run.splitting", "citeline.analyzer.judges._rules", "pyarrow")


class InputError(Exception):
    """The run cannot start on this input (no trace files, an unreadable gold set); nothing is stored."""


@dataclass(frozen=True)
class Evidence:
    """What a run is judged against, read once: the gold set (cases and corpus), its name as the runs row
    records it, and its files' content hash (:func:`evidence_hash`)."""

    gold: GoldSet
    source: str
    key: str


@dataclass(frozen=True)
class Setup:
    """A run as both engines begin it: what it is, what it is judged against (read once) and its judge
    (built once)."""

    options: RunOptions
    evidence: Evidence
    judge: Judge

    def abstain_phrases(self) -> list[str]:
        """The run's abstention phrases, and the gold file's own after them."""
        return [*self.options.abstain_phrases, *self.evidence.gold.abstain_phrases]

    def split_settings(self) -> dict[str, Any]:
        """The attachment policy and exempt kinds: the run's over the gold file's (``splitting.split``)."""
        gold = self.evidence.gold
        return {
            "attach": self.options.attach,
            "exempt": self.options.exempt,
            "file_attach": gold.attach,
            "file_exempt": gold.exempt,
        }


def prepare(options: RunOptions) -> Setup:
    """The run checked and read before anything is stored: its judge built, its gold set and corpus read,
    its trace paths found. Raises :class:`InputError` (or the judge's own error) on what cannot be used."""
    judge = options.build_judge()
    evidence = load_evidence(options.gold, options.corpus)
    check_traces(options.traces)
    return Setup(options, evidence, judge)


@dataclass(frozen=True)
class RunStamp:
    """A run's id (its start to the second, and six random hex digits) and its start, as the runs row keeps them."""

    run_id: str
    started: dt.datetime

    @classmethod
    def now(cls) -> RunStamp:
        at = dt.datetime.now(dt.UTC)
        return cls(at.strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:6], at.replace(tzinfo=None))


@dataclass(frozen=True)
class Watch:
    """Who is told how a run goes: each step as it starts (``on_phase``), counts as they grow (``on_progress``)."""

    on_phase: Callable[[str], None] | None = None
    on_progress: Callable[[str, int, int], None] | None = None

    def phase(self, name: str) -> None:
        if self.on_phase is not None:
            self.on_phase(name)

    def tick(self, name: str, done: int, total: int) -> None:
        if self.on_progress is not None:
            self.on_progress(name, done, total)


def load_evidence(gold: str | Path | GoldSet | None, corpus: str | Path | None) -> Evidence:
    """The gold set a run reads (cases and corpus), from --gold, --corpus or both, with its source's name and
    hash. A gold set already loaded (a partitioned run's worker gets it as the driver read it) is used as it is."""
    if gold is None and corpus is None:
        raise InputError("give a gold set (--gold FILE) or a corpus (--corpus FILE), or both")
    if isinstance(gold, GoldSet):
        if corpus is not None:
            raise InputError("a loaded gold set takes no corpus file: merge it when it is loaded")
        return Evidence(gold, gold.source, evidence_hash(gold, corpus))
    gold_set = load_gold(gold) if gold is not None else GoldSet(source="")
    if gold is not None and gold_set.unreadable is not None:
        raise InputError(f"{gold}: cannot read the gold set: {gold_set.unreadable}")
    if corpus is not None:
        extra = load_corpus(corpus)
        if extra.unreadable is not None:
            raise InputError(f"{corpus}: cannot read the corpus: {extra.unreadable}")
        merge(gold_set, extra)
    source = str(gold) if gold is not None else ""
    if corpus is not None:
        source += ("; " if source else "") + f"corpus:{corpus}"
    return Evidence(gold_set, source, evidence_hash(gold, corpus))


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
    options: RunOptions | None = None,
    *,
    progress: Callable[[int, int], None] | None = None,
    con: duckdb.DuckDBPyConnection | None = None,
    on_phase: Callable[[str], None] | None = None,
    on_progress: Callable[[str, int, int], None] | None = None,
    known: Mapping[str, tuple[str, str]] | None = None,
    **settings: Any,
) -> AnalysisResult:
    """Classify every claim of every trace; store the run. A trace that answers a gold case is judged
    against it (basis ``gold``); every other trace against the corpus and itself alone (basis ``corpus``,
    docs/analyzer.md "Corpus basis").

    What the run is comes as ``options`` (a :class:`RunOptions`), as keywords, or both (the keywords
    over the options): ``analyze(db, gold="gold.yaml", traces=["traces/"])``. ``gold`` is a gold set,
    ``corpus`` a corpus file: either or both. ``attach`` (an attachment policy) and ``exempt`` (the
    kinds of text that need no citation) override the gold file's ``policy:`` for this run; a case's own
    ``attach:`` still wins (docs/analyzer.md, "How an answer becomes claims").

    ``progress`` sees the bytes ingested, ``on_phase`` each step of each slice as it starts and
    ``on_progress`` the traces classified after each slice (the CLI shows them on a terminal).

    ``known`` holds judgments made earlier in the same run elsewhere, by cache key (a partitioned run's
    worker passes those of its earlier partitions): they are read as cached and not stored again, since
    the run that made them stored them.

    Raises :class:`InputError` (and stores nothing) when a traces path does not exist or
    holds no trace file, the gold set or the corpus cannot be read at all, or neither is given.
    """
    setup = prepare(RunOptions.resolve(options, settings, "analyze"))
    traces = setup.options.traces
    watch = Watch(on_phase, on_progress)
    own = con is None
    con = con or connect(db)
    try:
        if own and str(db) != ":memory:":  # slices are ranges of span row ids: a partitioned run's spans get some
            store_views(con, rowids=True)
        stamp = RunStamp.now()
        # ingest: the trace files' spans into the store
        report = ingest(con, traces, progress=progress) if traces else IngestReport()
        if traces and all(is_url(t) for t in traces) and not report.paths:
            raise nothing_readable(report.problems)
        label_errors = human_table(con, setup.options.labels)
        scope = joining.begin(con, setup.evidence.gold, report.paths if traces else None)
        tally = _classify(con, setup, stamp, scope, watch, known)
        watch.phase("storing the run")
        storing.store_results(con, stamp.run_id, scope.files)
        report.problems.extend(tally.problems())
        result = finish(con, setup, stamp, report, tally, label_errors=label_errors, db=db)
        if own:
            let_go(result)
        return result
    finally:
        _workers.stop()
        if own:
            con.close()


def _classify(
    con: duckdb.DuckDBPyConnection,
    setup: Setup,
    stamp: RunStamp,
    scope: joining.Scope,
    watch: Watch,
    known: Mapping[str, tuple[str, str]] | None,
) -> Tally:
    """Join, split/match, judge and classify the run's traces, a slice at a time (bounded memory); what it counted.

    The pool is sized to the work: a run with enough distinct answers to pay for workers starts them now, so
    they import while DuckDB joins, and both its splitting and its judging use them; a smaller run does all its
    text work here, in this process (no judge starts a pool of its own for one batch of it)."""
    if scope.distinct_answers >= splitting.PARALLEL_ANSWERS:
        return _classify_slices(con, setup, stamp, scope, watch, known, _workers.start(PRELOAD))
    with _workers.in_process():
        return _classify_slices(con, setup, stamp, scope, watch, known, None)


def _classify_slices(
    con: duckdb.DuckDBPyConnection,
    setup: Setup,
    stamp: RunStamp,
    scope: joining.Scope,
    watch: Watch,
    known: Mapping[str, tuple[str, str]] | None,
    pool: Executor | None,
) -> Tally:
    run_id, ident = stamp.run_id, judges.ident(setup.judge)
    phrases, split_settings, keys = setup.abstain_phrases(), setup.split_settings(), setup.options.answer_roles()
    cached_judge = CachedJudge(con, setup.judge, known)
    tally = Tally(traces=scope.traces)  # every trace read, a request span or not
    parts, done = len(scope.slices), 0
    for part in range(parts):
        of = f" ({part + 1}/{parts})" if parts > 1 else ""
        with _workers.collector_paused():  # a slice's rows and the text caches: nothing for it to collect
            watch.phase("joining traces to cases" + of)
            joining.join(con, scope.params(part), tally.joins, run_id=run_id, answer_keys=keys)
            watch.phase("splitting answers into claims" + of)
            splitting.split(con, phrases, split_settings, pool)
            splitting.match(con)
            watch.phase("judging support" + of)
            judge_tables(con, setup.evidence.gold, cached_judge)
            if pool is not None and part == parts - 1:  # the run's text work is done: its workers' memory
                _workers.stop()  # is not held through the classification (at 100k, 2 x 200 MiB idle beside it)
            splitting.store_skipped(con, run_id)
            watch.phase("classifying" + of)
            steps.run(con, "classify", {"run_id": run_id, "labels": list(LABELS), "judge": ident})
        done += int(con.execute("SELECT count(*) FROM t_traces").fetchall()[0][0])
        watch.tick("classified traces", done, scope.classified)
    tally.judged = cached_judge.counts()
    return tally


def finish(
    con: duckdb.DuckDBPyConnection,
    setup: Setup,
    stamp: RunStamp,
    report: IngestReport,
    tally: Tally,
    *,
    label_errors: list[GoldError],
    db: str | Path,
) -> AnalysisResult:
    """The run's runs row (storing.store_run) and what it found, as both engines end: ``report`` holds
    every problem by now, ``tally`` what the run (or all its partitions) counted."""
    gold, ident = setup.evidence.gold, judges.ident(setup.judge)
    errors = gold.errors + label_errors
    counts = storing.store_run(
        con,
        stamp.run_id,
        stamp.started,
        problems=report.problems,
        errors=errors + gold.warnings,  # drafts: noted, not skipped
        gold_source=setup.evidence.source,
        judge=ident,
        skipped=report.skipped + len(errors),
        traces_read=tally.traces,
        gold_hash=setup.evidence.key,
    )
    unmatched = storing.unmatched_count(con, stamp.run_id)
    result = AnalysisResult(
        stamp.run_id, counts, report, errors, unmatched, traces_read=tally.traces, db=str(db), con=con
    )
    result.warnings = [str(w) for w in gold.warnings]
    result.skipped_text = splitting.skipped_counts(con, stamp.run_id)
    result.tally = tally
    result.judge = {"name": ident, **tally.judged, **usage(setup.judge)}
    return result


def let_go(result: AnalysisResult) -> None:
    """The result without the connection its engine is about to close: a store in memory goes with it, so
    its rows are read now; a file is opened again when they are asked for."""
    if result.db == ":memory:":
        _ = result.claims, result.cases, result.coverage, result.by_basis
    result.con = None


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


__all__ = ["DEFAULT_ABSTAIN_PHRASES", "AnalysisResult", "InputError", "RunOptions", "analyze"]
