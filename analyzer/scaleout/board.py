"""A partitioned run's shared judgment set: a (claim, evidence) pair any worker judged in the run is not asked
again (docs/scale-out.md, "Judgments shared across workers").

It lives in the run's location, beside the run's rows, so every worker reaches it as it reaches them::

    judgments/claim-000012.parquet     what claim 12's process asked of the judge (the store's judgments
                                       columns), written whole once asked: the run's judgment set, which the
                                       commit registers in the store (run_files) as it registers result files
    judgments/own-<attempt>-3.parquet  judgments asked outside any claim (an owner that stopped answering)
    board/claim-000012.keys            the keys claim 12 took, each as its first 8 bytes (int64, Parquet)
    board/claim-000012.alive           touched every HEARTBEAT seconds while its process asks the judge
    board/claim-000012.failed.parquet  the answers that failed (not_applicable with the reason; never stored)

Claiming takes no lock. A process writes the keys it is about to ask that no claim holds yet to a file of its
own and hard-links it as the next free claim number: ``os.link`` fails when the name exists, so the numbers
form a prefix with no gap and a claim file is whole when it appears. A key belongs to the lowest-numbered
claim holding it; every process reads the same files and agrees. An owner asks the judge and writes its
answers before it waits on anyone else's, so no two processes wait on each other. A process waiting on an owner
whose heartbeat has not moved for STALE seconds (its worker died) asks the judge itself. A partition run again
takes back its earlier attempt's keys.
"""

from __future__ import annotations

import bisect
import itertools
import os
import threading
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

#: seconds between an owner's heartbeats, and without one before its waiters ask the judge themselves
HEARTBEAT, STALE = 1.0, 20.0
_COLUMNS = ("key", "judge", "version", "label", "rationale")


def prefix(key: str) -> int:
    """A judgment key's (sha256 hex) first 8 bytes as a signed 64-bit integer: what a claim holds."""
    v = int(key[:16], 16)
    return v - (1 << 64) if v >= 1 << 63 else v


class _Seen:
    """What this process has read of one run's board: every claim so far (its partition and its keys, in claim
    order) and the judgments it holds (its own and those it waited for)."""

    def __init__(self) -> None:
        self.parts: list[int] = []
        self.keys: list[Any] = []  # a pyarrow int64 array per claim
        self.answers: dict[str, tuple[str, str]] = {}
        self.joined: Any = None  # the keys of the first ``joined_n`` claims as one array
        self.joined_n = 0
        self.starts: list[int] = []  # where each claim's keys start in it


_RUNS: dict[str, _Seen] = {}  # per worker process: the newest run's board only


def _seen(root: str) -> _Seen:
    if root not in _RUNS:
        _RUNS.clear()
        _RUNS[root] = _Seen()
    return _RUNS[root]


class Board(Mapping[str, tuple[str, str]]):
    """One partition attempt's view of the run's shared judgments (``run/judgment_cache.SharedJudgments``): as a
    mapping, the judgments this process holds; ``claim``, ``give`` and ``wait`` share the rest."""

    def __init__(self, run_dir: str | Path, part: int) -> None:
        self.root = Path(run_dir)
        self.part = part
        self.attempt = uuid.uuid4().hex[:12]
        self.seen = _seen(str(self.root))
        self.open: int | None = None  # the claim this process is answering
        self.owed: dict[str, int] = {}  # keys another claim owns -> that claim
        self.beat: tuple[threading.Thread, threading.Event] | None = None
        self.own_files = 0
        # what sharing cost this attempt: seconds claiming, giving and waiting; claims made; keys another claim held
        self.cost: dict[str, float] = {"claim_s": 0.0, "give_s": 0.0, "wait_s": 0.0, "claims": 0, "theirs": 0}
        (self.root / "board").mkdir(parents=True, exist_ok=True)
        (self.root / "judgments").mkdir(parents=True, exist_ok=True)

    # ---- a mapping of the judgments held here --------------------------------------------------------------
    def __getitem__(self, key: str) -> tuple[str, str]:
        return self.seen.answers[key]

    def __contains__(self, key: object) -> bool:
        return key in self.seen.answers

    def __iter__(self) -> Iterator[str]:
        return iter(self.seen.answers)

    def __len__(self) -> int:
        return len(self.seen.answers)

    # ---- sharing -------------------------------------------------------------------------------------------
    def claim(self, keys: list[str]) -> tuple[list[str], list[str]]:
        """Of ``keys`` (none judged in this process), those this process asks (``mine``) and those another
        claim of the run asks (``theirs``: :meth:`wait` gives their answers)."""
        t = time.perf_counter()
        self._read()
        free, theirs = self._split(keys, len(self.seen.parts))
        mine: list[str] = []
        if free:
            at = self._take(free)
            self._read(upto=at)  # the claims that came in while this one was written
            mine, late = self._split(free, at)
            theirs += late
            self.seen.parts.append(self.part)  # this claim, as every process reads it
            self.seen.keys.append(_keys_array(free))
            self.open = at
            self._heartbeat(at)
        self.cost["claim_s"] += time.perf_counter() - t
        self.cost["claims"] += 1
        self.cost["theirs"] += len(theirs)
        return mine, theirs

    def give(self, asked: list[tuple[str, str, str, str, str]], failed: list[tuple[str, str, str]]) -> None:
        """The judgments this process asked (the store's judgments columns) and those that failed (key, label,
        rationale): the open claim's answers (written even when empty: its waiters stop waiting), or, with no
        claim open, a file of this process's own."""
        t = time.perf_counter()
        if self.open is not None:
            if failed:
                _write(_table(failed, ("key", "label", "rationale")), self.root / "board" / _name(self.open, "failed"))
            _write(_table(asked, _COLUMNS), self.root / "judgments" / _name(self.open, "parquet"))
            self._stop()
            self.open = None
        elif asked:
            self.own_files += 1
            _write(_table(asked, _COLUMNS), self.root / "judgments" / f"own-{self.attempt}-{self.own_files}.parquet")
        self.seen.answers.update((k, (label, why)) for k, _j, _v, label, why in asked)
        self.cost["give_s"] += time.perf_counter() - t

    def wait(self, theirs: list[str]) -> dict[str, tuple[str, str]]:
        """The answers of ``theirs`` as their owners write them; a key missing from the result is this
        process's to ask (its owner stopped: no heartbeat for :data:`STALE` seconds, or it gave up)."""
        t = time.perf_counter()
        by_owner: dict[int, set[str]] = {}
        for k in theirs:
            by_owner.setdefault(self.owed.pop(k), set()).add(k)
        got: dict[str, tuple[str, str]] = {}
        beats: dict[int, tuple[float, float]] = {}  # claim -> (its heartbeat's mtime, when this process saw it)
        delay = 0.002
        while by_owner:
            for at in list(by_owner):
                answers = self.root / "judgments" / _name(at, "parquet")
                if answers.exists():
                    got.update(self._answers(answers, at, by_owner.pop(at)))
                elif self._stale(at, beats):
                    del by_owner[at]
            if by_owner:
                time.sleep(delay)
                delay = min(0.02, delay * 2)  # a stat per awaited claim: cheap, and the wait is idle time
                self._retried(by_owner)
        self.seen.answers.update(got)
        self.cost["wait_s"] += time.perf_counter() - t
        return got

    def _retried(self, by_owner: dict[int, set[str]]) -> None:
        """Keys awaited from a claim whose partition has claimed them again since (its attempt was lost and the
        partition runs again): awaited from the newer claim."""
        import pyarrow.compute as pc  # type: ignore[import-untyped]

        self._read()
        seen = self.seen
        for at in sorted(by_owner):
            for later in range(len(seen.parts) - 1, at, -1):
                if seen.parts[later] != seen.parts[at] or at not in by_owner:
                    continue
                keys = sorted(by_owner[at])
                held = pc.is_in(_keys_array(keys), value_set=seen.keys[later]).to_pylist()
                moved = {k for k, h in zip(keys, held, strict=True) if h}
                if moved:
                    by_owner.setdefault(later, set()).update(moved)
                    by_owner[at] -= moved
                    if not by_owner[at]:
                        del by_owner[at]

    # ---- the files ---------------------------------------------------------------------------------------
    def _take(self, free: list[str]) -> int:
        """Write ``free`` as the next free claim number; that number."""
        import pyarrow as pa  # type: ignore[import-untyped]

        tmp = self.root / "board" / f"tmp-{self.attempt}-{len(self.seen.parts)}.keys"
        schema = pa.schema([("k", pa.int64())], metadata={"part": str(self.part)})
        _write(pa.table({"k": _keys_array(free)}, schema=schema), tmp)
        at = len(self.seen.parts)
        try:
            while True:
                try:
                    os.link(tmp, self.root / "board" / _name(at, "keys"))
                    return at
                except FileExistsError:
                    at += 1
        finally:
            tmp.unlink()

    def _read(self, upto: int | None = None) -> None:
        """Every claim written since this process last looked (those below ``upto`` when given)."""
        import pyarrow.parquet as pq  # type: ignore[import-untyped]

        seen = self.seen
        while upto is None or len(seen.parts) < upto:
            path = self.root / "board" / _name(len(seen.parts), "keys")
            if not path.exists():
                if upto is None:
                    return
                raise RuntimeError(f"{path}: a claim below {upto} is missing from the run's judgment board")
            table = pq.read_table(path)
            seen.parts.append(int((table.schema.metadata or {}).get(b"part", b"-1")))
            seen.keys.append(table.column("k").combine_chunks())

    def _split(self, keys: list[str], below: int) -> tuple[list[str], list[str]]:
        """``keys`` no claim below ``below`` holds (or only this partition's: an earlier attempt, or a judgment
        that failed here), and the others (noted with their owner)."""
        if not below:
            return list(keys), []
        import pyarrow as pa
        import pyarrow.compute as pc  # type: ignore[import-untyped]

        seen = self.seen
        if seen.joined is None or seen.joined_n != below:
            seen.joined, seen.joined_n = pa.concat_arrays(seen.keys[:below]), below
            seen.starts = list(itertools.accumulate((len(a) for a in seen.keys[: below - 1]), initial=0))
        first = pc.index_in(_keys_array(keys), value_set=seen.joined).to_pylist()  # the lowest claim holding each
        free, theirs = [], []
        for k, i in zip(keys, first, strict=True):
            owner = None if i is None else bisect.bisect_right(seen.starts, i) - 1
            if owner is None or seen.parts[owner] == self.part:
                free.append(k)
            else:
                self.owed[k] = owner
                theirs.append(k)
        return free, theirs

    def _answers(self, path: Path, at: int, wanted: set[str]) -> dict[str, tuple[str, str]]:
        import pyarrow as pa
        import pyarrow.compute as pc
        import pyarrow.parquet as pq

        out: dict[str, tuple[str, str]] = {}
        want = pa.array(sorted(wanted), pa.string())
        failed = self.root / "board" / _name(at, "failed")
        for f in (path, failed) if failed.exists() else (path,):
            table = pq.read_table(f, columns=["key", "label", "rationale"])
            rows = table.filter(pc.is_in(table["key"], value_set=want)).to_pydict()
            out.update(zip(rows["key"], zip(rows["label"], rows["rationale"], strict=True), strict=True))
        return out

    def _stale(self, at: int, beats: dict[int, tuple[float, float]]) -> bool:
        alive = self.root / "board" / _name(at, "alive")
        try:
            mtime = alive.stat().st_mtime
        except FileNotFoundError:
            mtime = -1.0
        now = time.monotonic()
        if at not in beats or beats[at][0] != mtime:
            beats[at] = (mtime, now)
        return now - beats[at][1] > STALE

    def _heartbeat(self, at: int) -> None:
        alive = self.root / "board" / _name(at, "alive")
        alive.touch()
        stop = threading.Event()

        def beat() -> None:
            while not stop.wait(HEARTBEAT):
                try:
                    os.utime(alive)
                except OSError:
                    return  # the run's folder went away: the owner is done with it

        thread = threading.Thread(target=beat, name=f"citeline-claim-{at}", daemon=True)
        thread.start()
        self.beat = (thread, stop)

    def _stop(self) -> None:
        if self.beat is not None:
            self.beat[1].set()
            self.beat = None


def _name(at: int, kind: str) -> str:
    return f"claim-{at:06d}.{kind}" if kind != "failed" else f"claim-{at:06d}.failed.parquet"


def _keys_array(keys: list[str]) -> Any:
    import pyarrow as pa

    return pa.array([prefix(k) for k in keys], pa.int64())


def _table(rows: Sequence[tuple[str, ...]], names: tuple[str, ...]) -> Any:
    import pyarrow as pa

    cols = list(zip(*rows, strict=True)) if rows else [() for _ in names]
    return pa.table({n: pa.array(list(c), pa.string()) for n, c in zip(names, cols, strict=True)})


def _write(table: Any, path: Path) -> None:
    """``table`` as Parquet (zstd) at ``path``, whole or not at all."""
    import pyarrow.parquet as pq

    part = path.with_name(path.name + f".{os.getpid()}.tmp")
    pq.write_table(table, part, compression="zstd")
    os.replace(part, path)


def files(run_dir: str | Path) -> list[tuple[str, int]]:
    """The run's judgment files (path, rows): what the commit registers as the run's judgments."""
    import pyarrow.parquet as pq

    out = []
    for f in sorted((Path(run_dir) / "judgments").glob("*.parquet")):
        rows = pq.read_metadata(f).num_rows
        if rows:
            out.append((str(f), int(rows)))
    return out
