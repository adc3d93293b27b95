"""One run, two engines: what a run is (``RunOptions``) is declared once and reaches both engines whole.

An option added to ``RunOptions`` must need nothing else to reach the single run, the partitioned
driver and its workers, and the CLI must hand either engine the one value it built. These tests fail
when an option is threaded through one engine only: a parameter of its own on one engine, a field the
single run never reads, a field the driver does not pass on to its workers, or a setting the CLI hands
one engine on the side.
"""

from __future__ import annotations

import dataclasses
import inspect
import pickle
from pathlib import Path
from typing import Any

import pytest

from citeline.analyzer import RunOptions as PublicRunOptions
from citeline.analyzer.claims.policy import PolicyError
from citeline.analyzer.cli import run as cli_run
from citeline.analyzer.cli.main import main
from citeline.analyzer.judges import Judge
from citeline.analyzer.run import analyze as _analyze
from citeline.analyzer.run.analyze import InputError, Setup, analyze, load_evidence
from citeline.analyzer.run.joining import Tallies
from citeline.analyzer.run.options import RunOptions
from citeline.analyzer.run.result import Tally
from citeline.analyzer.scaleout import partitioned
from citeline.analyzer.scaleout import tasks as work
from citeline.analyzer.sources.openinference import Stats
from citeline.analyzer.sources.structured import AnswerKeysError
from citeline.analyzer.store import connect
from citeline.examples.demo import gold_path

FIELDS = [f.name for f in dataclasses.fields(RunOptions)]


def _sample(tmp_path: Path) -> dict[str, Any]:
    """A value other than the default for every option: a new option must be given one here."""
    labels = tmp_path / "labels.csv"
    labels.write_text("trace_id,claim,label\nt1,c1,supported\n")
    return {
        "gold": str(gold_path()),
        "corpus": str(gold_path()),
        "traces": [str(tmp_path / "traces")],
        "judge": "rules",
        "judge_options": {"coverage": "0.6"},
        "labels": str(labels),
        "abstain_phrases": ["outside my knowledge"],
        "answer_keys": {"claims": "statements"},
        "attach": "sentence",
        "exempt": ["greeting"],
    }


def test_every_option_has_a_sample_value(tmp_path: Path) -> None:
    sample = _sample(tmp_path)
    assert sorted(sample) == sorted(FIELDS)
    defaults = RunOptions()
    same = [f for f in FIELDS if getattr(RunOptions(**sample), f) == getattr(defaults, f)]
    assert same == ["judge"]  # the one judge that runs offline is the default; its options tell this run apart


def test_run_options_is_public() -> None:
    assert PublicRunOptions is RunOptions


@pytest.mark.parametrize(
    ("given", "error", "message"),
    [
        ({"attach": "word"}, PolicyError, r"^attach: 'word' is not an attachment policy"),
        ({"exempt": "nonsense"}, PolicyError, r"^exempt: 'nonsense' is no kind of text"),
        ({"exempt": 3}, PolicyError, r"^exempt: must be a list of kinds"),
        ({"answer_keys": {"bogus": "x"}}, AnswerKeysError, r"^answer key role 'bogus' is not one citeline reads"),
    ],
)
def test_a_wrong_setting_raises_when_the_options_are_made_naming_it(
    given: dict[str, Any], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        RunOptions(**given)
    with pytest.raises(error, match=message):  # and so before either engine runs anything
        analyze(":memory:", gold=gold_path(), **given)
    with pytest.raises(error, match=message):
        partitioned.analyze_partitioned(":memory:", gold=gold_path(), traces=["nowhere"], **given)


def test_options_are_normalised_once_and_checked_again_on_replace() -> None:
    opts = RunOptions(traces=["a", "b"], attach="Table_Cell", exempt="greeting, meta", abstain_phrases=["x"])
    assert (opts.traces, opts.attach, opts.exempt, opts.abstain_phrases) == (
        ("a", "b"),
        "table-cell",
        frozenset({"greeting", "meta"}),
        ("x",),
    )
    assert RunOptions(exempt="none").exempt == frozenset() and RunOptions().exempt is None
    assert dataclasses.replace(opts) == opts  # normalising twice changes nothing
    assert RunOptions(answer_keys={"claims": "statements"}).answer_roles()["claims"][0] == "statements"
    with pytest.raises(PolicyError, match=r"^attach: 'word'"):
        dataclasses.replace(opts, attach="word")


def test_keywords_go_over_the_options_and_a_stray_one_names_its_engine(tmp_path: Path) -> None:
    opts = RunOptions(gold=gold_path(), attach="sentence")
    assert RunOptions.resolve(opts, {}, "analyze") is opts
    assert RunOptions.resolve(opts, {"attach": "clause"}, "analyze") == RunOptions(gold=gold_path(), attach="clause")
    assert RunOptions.resolve(None, {"gold": "g.yaml"}, "analyze") == RunOptions(gold="g.yaml")
    with pytest.raises(TypeError, match=r"^analyze\(\) got an unexpected keyword argument 'golds'$"):
        analyze(tmp_path / "x.duckdb", golds=gold_path())
    with pytest.raises(TypeError, match=r"^analyze_partitioned\(\) got an unexpected keyword argument 'golds'$"):
        partitioned.analyze_partitioned(tmp_path / "x.duckdb", golds=gold_path(), traces=["t"])
    assert not (tmp_path / "x.duckdb").exists()


def test_neither_engine_takes_an_option_of_its_own() -> None:
    """What a run is goes in RunOptions, never in one engine's signature: each engine's own parameters are
    these (where it stores, how it is watched, how a partitioned run is cut), and the rest are options."""
    own = {
        _analyze.analyze: ["db", "options", "progress", "con", "on_phase", "on_progress", "known", "settings"],
        partitioned.analyze_partitioned: ["db", "options", "cluster", "client", "on_phase", "on_progress", "settings"],
    }
    for engine, names in own.items():
        params = inspect.signature(engine).parameters
        assert list(params) == names, engine.__name__
        assert params["settings"].kind is inspect.Parameter.VAR_KEYWORD  # RunOptions' fields, by name
    cluster = {f.name for f in dataclasses.fields(partitioned.Cluster)}
    assert cluster == {"scheduler", "workers", "partitions", "map_tasks", "out", "split_bytes"}
    assert not cluster & set(FIELDS)


class _Watched(RunOptions):
    """RunOptions that notes which of its fields are read."""

    def __getattribute__(self, name: str) -> Any:
        if name in FIELDS:
            object.__getattribute__(self, "__dict__").setdefault("read", set()).add(name)
        return object.__getattribute__(self, name)


def test_the_single_run_reads_every_option(tmp_path: Path) -> None:
    """An option declared and never read would be an option one engine (or none) honours."""
    sample = {**_sample(tmp_path), "traces": None}  # a run over the store as it is: no files to make
    opts = _Watched(**sample)
    read: set[str] = opts.__dict__["read"]
    read.clear()  # what making it read does not count
    analyze(":memory:", opts)
    assert sorted(set(FIELDS) - read) == []


def test_a_partitioned_runs_workers_get_the_drivers_options(tmp_path: Path) -> None:
    """Every option reaches the worker's ``analyze`` as the driver has it, but those a worker lays out
    itself (work.LAID_OUT): the gold set as the driver read it, the labels file's bytes, its own judge."""
    driver = RunOptions(**_sample(tmp_path))
    setup = Setup(driver, load_evidence(driver.gold, driver.corpus), driver.build_judge())
    con = connect(":memory:")
    try:
        ctx = pickle.loads(pickle.dumps(partitioned._context(con, setup)))  # as a worker gets it
    finally:
        con.close()
    worker = work._laid_out(ctx)
    assert type(worker) is RunOptions
    assert set(work.LAID_OUT) <= set(FIELDS)
    passed_on = [f for f in FIELDS if f not in work.LAID_OUT]
    assert {f: getattr(worker, f) for f in passed_on} == {f: getattr(driver, f) for f in passed_on}
    assert worker.gold == setup.evidence.gold and (worker.corpus, worker.traces) == (None, None)
    assert isinstance(worker.judge, Judge) and worker.judge.settings == setup.judge.settings
    assert worker.labels is not None and Path(worker.labels).read_bytes() == Path(str(driver.labels)).read_bytes()


def test_the_cli_hands_either_engine_the_one_options_it_built(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    got: dict[str, tuple[Any, ...]] = {}

    def engine(name: str) -> Any:
        def run(db: Any, options: Any, *args: Any, **kwargs: Any) -> Any:
            got[name] = (options, args, kwargs)
            raise InputError("stop here")

        return run

    monkeypatch.setattr(cli_run, "analyze", engine("local"))  # the CLI's analyze family calls them
    monkeypatch.setattr(cli_run, "analyze_partitioned", engine("dask"))
    sample = _sample(tmp_path)
    argv = ["analyze", "--gold", sample["gold"], "--corpus", sample["corpus"], "--traces", sample["traces"][0],
            "--judge", "rules", "--judge-option", "coverage=0.6", "--labels", sample["labels"], "--abstain-phrase",
            "outside my knowledge", "--answer-key", "claims=statements", "--attach", "sentence", "--exempt",
            "greeting", "--db", str(tmp_path / "x.duckdb"), "--quiet"]  # fmt: skip
    assert main(argv) == 2
    assert main([*argv, "--engine", "dask", "--scheduler", "tcp://127.0.0.1:1", "--partitions", "5"]) == 2
    (local, _, local_kw), (dask, cluster, dask_kw) = got["local"], got["dask"]
    settings = set(FIELDS)
    assert not settings & set(local_kw) and not settings & set(dask_kw)  # nothing on the side
    assert cluster == (partitioned.Cluster(scheduler="tcp://127.0.0.1:1", workers=2, partitions=5),)
    # the local engine gets the judge the CLI built to check it; Dask workers build theirs by name
    assert isinstance(local.judge, Judge) and local.judge.name == dask.judge == "rules"
    assert dataclasses.replace(local, judge="rules") == dask
    expect = dataclasses.replace(RunOptions(**sample), abstain_phrases=[*RunOptions().abstain_phrases,
                                                                         "outside my knowledge"])  # fmt: skip
    assert dask == expect


def test_tallies_add_up() -> None:
    """A partitioned run's partitions' tallies add up to what one run over all of them counts."""
    a = Tally(3, Tallies(Stats(2, {"id": 1}, {"x"}, 1), 1, {"d1"}), {"asked": 2, "cached": 1, "failed": 0})
    b = Tally(4, Tallies(Stats(1, {"id": 2, "uri": 1}, {"y"}, 0), 2, {"d2"}), {"asked": 1, "cached": 5, "failed": 1})
    total = sum([a, b], Tally())
    assert total == Tally(7, Tallies(Stats(3, {"id": 3, "uri": 1}, {"x", "y"}, 1), 3, {"d1", "d2"}),
                          {"asked": 3, "cached": 6, "failed": 1})  # fmt: skip
    assert list(total.judged) == ["asked", "cached", "failed"]  # the JSON's order
    assert (a.traces, a.joins.oi.joined) == (3, {"id": 1})  # adding makes a new tally
    assert Tally() + Tally() == Tally() and sum([], Tally()).judged == {"asked": 0, "cached": 0, "failed": 0}
