"""Where a partitioned run runs (``citeline analyze --engine dask``): a client of the cluster at ``--scheduler``, or of
a LocalCluster started for the run, its workers given the settings citeline's partitions need
(:data:`WORKER_CONFIG`); and, when the run ends, how many of a cluster's workers run without them.
``partitioned.py`` drives the run on the client this gives it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["WORKER_CONFIG", "EngineError", "local_cluster", "open_client", "sampling_workers", "worker_settings"]


#: Dask settings a worker should run citeline's partitions with. Its sampling profiler (every 10 ms) and
#: its event loop's tick (every 20 ms) each take the GIL from the task thread; a partition's text work
#: holds it, and measured on a LocalCluster worker they cost it 35% (100k traces, 8 partitions: analyze
#: 92.8 CPU-s with Dask's defaults, 78.5 with no profiler, 68.6 with no profiler and a 1 s tick, the
#: same 68 as one plain process; docs/scale-out.md). A LocalCluster started here gets them; workers of
#: a cluster of your own get them from the environment (DASK_DISTRIBUTED__WORKER__PROFILE__ENABLED=False,
#: DASK_DISTRIBUTED__ADMIN__TICK__INTERVAL=1s), as docker-compose.yml sets.
WORKER_CONFIG: dict[str, Any] = {"distributed.worker.profile.enabled": False, "distributed.admin.tick.interval": "1s"}


class EngineError(Exception):
    """The cluster cannot be reached or started (a wrong --scheduler, dask not installed)."""


def open_client(scheduler: str | None, workers: int) -> tuple[Any, Callable[[], None]]:
    """A client of the cluster at ``scheduler``, or of a LocalCluster of ``workers`` one-thread processes."""
    try:
        import distributed
    except ImportError as exc:
        raise EngineError("--engine dask needs dask.distributed: pip install 'citeline[dask]'") from exc
    dist: Any = distributed  # its functions carry no annotations
    if scheduler:
        try:
            client = dist.Client(scheduler, timeout="10s")
        except (OSError, TimeoutError) as exc:
            raise EngineError(f"--scheduler {scheduler}: cannot reach a Dask scheduler there ({exc})") from exc
        return client, client.close
    cluster = local_cluster(workers)
    client = dist.Client(cluster)

    def close() -> None:
        client.close()
        cluster.close()

    return client, close


def local_cluster(workers: int) -> Any:
    """A LocalCluster of ``workers`` one-thread processes on loopback, each run with :data:`WORKER_CONFIG`."""
    import dask
    import distributed

    dist: Any = distributed
    # a task lost twice with its worker fails (the scheduler's setting, read as it starts). The worker settings go
    # to each nanny as its own config, which it hands every worker process it starts: set only around the start,
    # a worker the nanny restarts after a crash ran on Dask's defaults
    with dask.config.set({"distributed.scheduler.allowed-failures": 1}):
        return dist.LocalCluster(
            n_workers=workers,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            dashboard_address="127.0.0.1:0",
            config=dict(WORKER_CONFIG),
        )


def worker_settings() -> dict[str, Any]:
    """The settings of :data:`WORKER_CONFIG` as the process it runs in has them (``client.run`` asks each worker)."""
    import dask

    return {k: dask.config.get(k, None) for k in WORKER_CONFIG}


def sampling_workers(client: Any) -> int | None:
    """How many of the cluster's workers run without :data:`WORKER_CONFIG` (Dask's profiler or its 20 ms
    tick): the same rows, about a third slower. None (unknown, not "none") when they cannot be asked."""
    try:
        got = client.run(worker_settings)
    except Exception:  # noqa: BLE001 - advice only: a cluster that refuses client.run still ran the run
        return None
    return sum(1 for v in got.values() if v != WORKER_CONFIG)
