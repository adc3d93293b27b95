"""One pool of worker processes for a run's text work (splitting answers, judging support).

A spawned worker costs about a second before it does anything (a fresh interpreter importing
DuckDB, Polars and the analyzer). Two pools per run paid that twice, after the SQL that came
before them had finished. ``analyze`` now calls :func:`start` as soon as it knows the run is
large, so the workers import while DuckDB joins traces to cases, and :func:`stop` when the run
ends; the splitter is handed it by the run, and the rules judge takes it from :func:`pool`.

Spawn, not fork: forking a host process copies its threads' locks mid-flight.

A partitioned run's worker (analyzer/scaleout/partitioned.py) is already one of many processes: inside
:func:`in_process` no pool is started and every ``pool()`` runs its work in the calling thread, so
a cluster's workers never start pools of their own.
"""

from __future__ import annotations

import atexit
import gc
import importlib
import multiprocessing
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Executor, Future, ProcessPoolExecutor
from contextlib import contextmanager
from typing import Any, TypeVar

T = TypeVar("T")


class _Run(threading.local):
    pool: ProcessPoolExecutor | None = None
    inline: bool = False  # a partitioned run's worker: the text work runs here, in this thread


_RUN = _Run()  # per thread: two runs in two threads of one host each have their own pool


def cores() -> int:
    """The processes a run's text work may use: every core, or one inside :func:`in_process`."""
    return 1 if _RUN.inline else os.cpu_count() or 1


class _Here(Executor):
    """An executor that runs each call where it is submitted (a partitioned worker's text work)."""

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        done: Future[T] = Future()
        try:
            done.set_result(fn(*args, **kwargs))
        except Exception as exc:  # noqa: BLE001 - handed back as a pool hands it back
            done.set_exception(exc)
        return done


@contextmanager
def in_process() -> Iterator[None]:
    """No pool while inside: a partitioned worker's text work runs in the worker (no nested pools)."""
    was, _RUN.inline = _RUN.inline, True
    try:
        yield
    finally:
        _RUN.inline = was


def start(preload: Sequence[str] = ()) -> Executor | None:
    """Start the run's pool (one worker per core), every worker importing the ``preload`` modules now
    (the run names the modules its text work needs: the pool knows nothing of the analyzer)."""
    if _RUN.pool is None and cores() > 1:
        pool = _RUN.pool = _spawned(cores())
        for _ in range(cores()):
            pool.submit(_warm, tuple(preload))
    return _RUN.pool


def shared() -> Executor | None:
    """The running pool, or None when no run started one (a small run, or a judge used on its own)."""
    return _RUN.pool


@contextmanager
def pool(workers: int) -> Iterator[Executor]:
    """The run's pool when one is up; otherwise ``workers`` processes of its own, shut down on leaving."""
    if _RUN.pool is not None:
        yield _RUN.pool
        return
    if _RUN.inline:
        yield _Here()
        return
    own = _spawned(workers)
    try:
        yield own
    finally:
        own.shutdown()


def stop() -> None:
    pool, _RUN.pool = _RUN.pool, None
    if pool is not None:
        pool.shutdown(wait=True, cancel_futures=True)


def _spawned(workers: int) -> ProcessPoolExecutor:
    return ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"), initializer=_exit_at_once)


def _exit_at_once() -> None:
    """A worker leaves without tearing its interpreter down: the readings its caches hold (hundreds of
    thousands of objects after a large run) were freed one by one at exit, CPU the run paid while it waited
    for its pool to stop. A worker's results are written to the pool's pipe as each task ends (no feeder
    thread), and it opens no files of its own, so nothing is lost. The first exit hook to run (registered last)."""
    atexit.register(os._exit, 0)


def _warm(modules: tuple[str, ...]) -> None:
    for name in modules:
        importlib.import_module(name)


@contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cycle collector paused over a stretch of a run's text work (a slice in the driver, a part of
    the splitting or a batch of judging in a worker), given back as the caller had it, also after an error.
    The text work makes no reference cycles, but it keeps many objects alive (the readings the judge and the
    splitter cache, the rows of a slice), and the collector re-scanned them again and again: in one process,
    20,000 judged pairs 8.9 -> 6.4-6.9 s of CPU; a 4,000-trace run's driver about 7% of its CPU. Cycles made
    meanwhile (a caught exception's traceback) are collected once it runs again."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
