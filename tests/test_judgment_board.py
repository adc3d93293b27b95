"""The shared judgment set of a partitioned run (analyzer/scaleout/board.py), on a real folder: claims taken by
several processes at once give each key exactly one owner; an owner's answers reach its waiters; a waiter whose
owner died asks for itself; a partition run again takes its lost attempt's keys back and answers their waiters."""

from __future__ import annotations

import hashlib
import multiprocessing
import random
from pathlib import Path

import pytest

from citeline.analyzer.scaleout import board
from citeline.analyzer.scaleout.board import Board


def _key(i: int) -> str:
    return hashlib.sha256(str(i).encode()).hexdigest()


def _row(k: str) -> tuple[str, str, str, str, str]:
    return (k, "rules", "4", "entailed", f"why {k[:6]}")


def _claimer(root: str, part: int, seed: int, out: multiprocessing.Queue[tuple[int, list[str], list[str]]]) -> None:
    """One worker process: claims a random half of 400 keys in four batches, answers its own, waits for the rest."""
    rng = random.Random(seed)
    keys = [_key(i) for i in rng.sample(range(400), 200)]
    b = Board(root, part)
    mine_all: list[str] = []
    got_all: list[str] = []
    for batch in (keys[:50], keys[50:100], keys[100:150], keys[150:]):
        todo = [k for k in batch if k not in b]
        mine, theirs = b.claim(todo)
        b.give([_row(k) for k in mine], [])
        got = b.wait(theirs)
        assert sorted(got) == sorted(theirs)  # every owner answered
        assert all(got[k] == _row(k)[3:] for k in got)
        mine_all += mine
        got_all += list(got)
    out.put((part, mine_all, got_all))


def test_claims_made_at_once_by_four_processes_give_each_key_one_owner(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("spawn")
    out: multiprocessing.Queue[tuple[int, list[str], list[str]]] = ctx.Queue()
    procs = [ctx.Process(target=_claimer, args=(str(tmp_path), p, p, out)) for p in range(4)]
    for p in procs:
        p.start()
    results = [out.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(timeout=30)
        assert p.exitcode == 0
    owned = [k for _p, mine, _got in results for k in mine]
    wanted = {_key(i) for p in range(4) for i in random.Random(p).sample(range(400), 200)}
    assert len(owned) == len(set(owned)) == len(wanted)  # each key asked once over the four processes
    assert set(owned) == wanted
    # the run's judgment files hold each judgment once: what the commit registers
    files = board.files(tmp_path)
    assert sum(n for _f, n in files) == len(wanted)


def test_an_owner_that_died_is_asked_around_and_its_retry_answers_the_waiters(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(board, "STALE", 0.5)
    keys = [_key(i) for i in range(6)]
    lost = Board(tmp_path, 1)  # partition 1's first attempt claims three keys, then its worker dies
    assert lost.claim(keys[:3]) == (keys[:3], [])
    lost._stop()  # no more heartbeats: what a killed process leaves
    waiter = Board(tmp_path, 2)
    mine, theirs = waiter.claim(keys)
    assert (mine, theirs) == (keys[3:], keys[:3])
    waiter.give([_row(k) for k in mine], [])
    assert waiter.wait(theirs) == {}  # no heartbeat for STALE seconds: these three are the waiter's to ask
    # partition 1 runs again: it takes its lost attempt's keys back, and a waiter on the lost claim gets them
    retry = Board(tmp_path, 1)
    other = Board(tmp_path, 3)
    _mine3, theirs3 = other.claim(keys[:2])
    assert theirs3 == keys[:2]
    assert retry.claim(keys[:3]) == (keys[:3], [])
    retry.give([_row(k) for k in keys[:3]], [])
    assert other.wait(theirs3) == {k: _row(k)[3:] for k in keys[:2]}
    assert other.cost["wait_s"] < 0.5  # found in the retry's answers, not after the lost claim went stale


def test_a_failed_answer_is_given_to_waiters_and_never_stored(tmp_path: Path) -> None:
    keys = [_key(i) for i in range(3)]
    owner, waiter = Board(tmp_path, 0), Board(tmp_path, 1)
    assert owner.claim(keys)[0] == keys
    _mine, theirs = waiter.claim(keys)
    owner.give([_row(k) for k in keys[:2]], [(keys[2], "not_applicable", "judge timed out")])
    assert waiter.wait(theirs) == {**{k: _row(k)[3:] for k in keys[:2]}, keys[2]: ("not_applicable", "judge timed out")}
    assert sum(n for _f, n in board.files(tmp_path)) == 2
