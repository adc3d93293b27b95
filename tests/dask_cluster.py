"""A real Dask LocalCluster for the partitioned-run tests (tests/test_partitioned*.py), and the demo's trace
lines they feed it.

One cluster per test session (per xdist worker), started as ``--engine dask`` starts one: two worker processes,
one thread each, on loopback, with the worker settings citeline runs partitions with; closed when the session
ends. Without ``distributed`` installed the tests that ask for it skip, naming the extra.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.extras import needs


@pytest.fixture(scope="session")
def dask_client() -> Iterator[Any]:
    """A client of the session's LocalCluster (a test that kills a worker waits for the nanny to start it again)."""
    distributed = needs("distributed", "a LocalCluster for --engine dask; also 'citeline[dask]'")
    from citeline.analyzer.scaleout.cluster import local_cluster

    cluster = local_cluster(2)
    client = distributed.Client(cluster)
    try:
        yield client
    finally:
        client.close()
        cluster.close()


@pytest.fixture(scope="session")
def demo_lines(tmp_path_factory: pytest.TempPathFactory) -> list[bytes]:
    """The demo's trace lines as the instrumentation wrote them (every bucket twice, with twins)."""
    from citeline.examples.demo import SCENARIOS
    from tests.analysis_helpers import run_and_analyze

    tmp = tmp_path_factory.mktemp("demo")
    run_and_analyze(tmp, SCENARIOS)
    return [line for f in sorted((tmp / "traces").glob("*.jsonl")) for line in f.read_bytes().splitlines() if line]
