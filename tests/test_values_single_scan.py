"""The value reader scans a text once; it reads what the per-pattern reader read (tests/values_oracle.py),
except "26 Oct 18", which it reads as 26 October (the per-pattern one read October 18)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from citeline.analyzer.text import values
from tests.values_oracle import values_by_pattern

DATA = Path(__file__).resolve().parent / "data"
DAY_MONTH_NUMBER = re.compile(r"\d{1,2}(?:st|nd|rd|th)?\s+[a-z]+\.?,?\s+\d", re.IGNORECASE)


def _agree(text: str) -> bool:
    new, old = values(text), values_by_pattern(text)
    if new == old:
        return True
    # the one known difference: "<day> <month> <number>" is a day-month date now
    return bool(DAY_MONTH_NUMBER.search(text)) and any(v[0] == "date" for v in new) and len(new) == len(old)


def test_the_single_scan_reads_the_repository_prose_as_the_per_pattern_reader() -> None:
    texts: list[str] = []
    for line in (DATA / "wice" / "claim_test.jsonl").read_text().splitlines():
        rec = json.loads(line)
        texts += [rec["claim"], *rec["evidence"]]
    for line in (DATA / "rgb" / "en_fact.jsonl").read_text().splitlines():
        rec = json.loads(line)
        texts += [*rec["positive"], *rec["positive_wrong"], *rec["negative"]]
    assert len(texts) > 40_000
    differ = [t for t in texts if not _agree(t)]
    assert differ == []


# the alphabet the texts are drawn from, read across (ruff would set one piece a line)
PIECES = ["$", "€", "5", "30", "4.99", "1,000", "2026-01-05", "july", "jul.", "4", "1776", "days", "business days",
          "%", "percent", "usd", "try", "two", "weeks", " ", " ", ", ", "-", ".", "kg", "the", "in"]  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=12))
def test_every_number_is_read_once(pieces: list[str]) -> None:
    """Left to right, one reading per number: never more values than numbers (and word numbers)."""
    text = "".join(pieces)
    found = values(text)
    assert values(text) == found
    numbers = len(re.findall(r"\d+", text)) + text.count("two")
    assert len(found) <= numbers


def test_a_month_opening_a_dated_day_is_not_read_as_the_day_before_it() -> None:
    assert values("20:15 April 17, 2016") == [("num", "", 20.0), ("num", "", 15.0), ("date", "2016", 417.0)]
    assert values("26 Oct 18") == [("date", "", 1026.0), ("num", "", 18.0)]
