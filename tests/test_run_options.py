"""One run, two engines: what a partitioned run's partitions count adds up to what one run counts."""

from __future__ import annotations

from citeline.analyzer.run.joining import Tallies
from citeline.analyzer.sources.openinference import Stats


def test_tallies_add_up() -> None:
    """A partitioned run's partitions' tallies add up to what one run over all of them counts."""
    a = Tallies(Stats(2, {"id": 1}, {"x"}, 1), 1, {"d1"})
    b = Tallies(Stats(1, {"id": 2, "uri": 1}, {"y"}, 0), 2, {"d2"})
    total = sum([a, b], Tallies())
    assert total == Tallies(Stats(3, {"id": 3, "uri": 1}, {"x", "y"}, 1), 3, {"d1", "d2"})
    assert (a.joined_by_content, a.oi.joined) == (1, {"id": 1})  # adding makes a new tally
    assert Tallies() + Tallies() == Tallies()
