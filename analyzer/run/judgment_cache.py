"""The run's judgment cache: each distinct (claim, evidence, facts, quotes) pair asked of the judge once, its
answer kept in the store's ``judgments`` table under a key of the pair and the judge (name, version,
settings), so the next run, and ``rejudge``, find it there. ``CachedJudge`` is what ``run/judging.py``'s
tables ask through; ``SharedJudgments`` is how the processes of one partitioned run share what each asked
(``scaleout/board.py``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Protocol, runtime_checkable

import duckdb

from citeline.analyzer import steps
from citeline.analyzer.judges import Judge, JudgeItem, Source, judge_all
from citeline.analyzer.judges._api import as_item, reads_context
from citeline.analyzer.run import cells
from citeline.analyzer.store import target


@runtime_checkable
class SharedJudgments(Protocol):
    """Judgments shared by the processes of one run (a partitioned run's workers: ``scaleout/board.py``), so a
    pair any of them judged is asked once. As a mapping (``known``), the judgments this process already holds."""

    def __contains__(self, key: object) -> bool: ...

    def __getitem__(self, key: str) -> tuple[str, str]: ...

    def claim(self, keys: list[str]) -> tuple[list[str], list[str]]:
        """Of ``keys``, the ones this process asks, and the ones another process asks (:meth:`wait`)."""
        ...

    def give(self, asked: list[tuple[str, str, str, str, str]], failed: list[tuple[str, str, str]]) -> None:
        """What this process asked (judgments rows) and what failed (key, label, rationale), for the others."""
        ...

    def wait(self, theirs: list[str]) -> dict[str, tuple[str, str]]:
        """The others' answers to ``theirs``; a key left out is this process's to ask (its owner stopped)."""
        ...


class CachedJudge:
    """Judgments cached in the store by (claim, evidence, facts, quotes, judge name, version, settings), and
    for a judge that reads context by the question and sources too.

    A judge's failure (an exception, a timeout, an unknown label) comes back as
    ``not_applicable`` with the reason and is not cached: the next run asks again.
    """

    def __init__(
        self, con: duckdb.DuckDBPyConnection, judge: Judge, known: Mapping[str, tuple[str, str]] | None = None
    ) -> None:
        self.con = con
        self.judge = judge
        # judgments made elsewhere in this run, read as cached and not stored again; a SharedJudgments also
        # says which pairs another process of the run is asking (a partitioned run's workers)
        self.known = known
        self.shared = known if isinstance(known, SharedJudgments) else None
        self.pending: list[tuple[str, str, str, str, str]] = []
        self.settings = json.dumps(dict(judge.settings), sort_keys=True, default=str)
        self.asked = self.hits = self.failures = 0
        # json.dumps of a list is "[" + ", ".join(json.dumps(x) for x in it) + "]"
        self._head = json.dumps([judge.name, judge.version, self.settings])[:-1] + ", "
        self._list = lru_cache(maxsize=65536)(_json_list)
        self.context = reads_context(judge)
        # the run's table row claims: one judged unsupported names its wrong cell (run/cells.py)
        self.rows: frozenset[str] = frozenset()

    def key(
        self,
        claim: str,
        evidence: Sequence[str],
        facts: Sequence[str],
        quotes: Sequence[str],
        question: str = "",
        sources: Sequence[Source] = (),
    ) -> str:
        """sha256 of ``json.dumps([name, version, settings, claim, evidence, facts, quotes])``: the form stored
        judgments are keyed by; for a judge that reads context, ``question`` and ``sources`` (each a list of
        its fields) follow ``quotes``. Built from parts: the judge's part is the same for every item, and an
        evidence list (a gold bundle) or a fact list is shared by thousands of claims."""
        tail = "]"
        if self.context:
            tail = ", " + json.dumps(question) + ", " + json.dumps([list(s) for s in sources]) + "]"
        return hashlib.sha256(
            (
                self._head
                + json.dumps(claim)
                + ", "
                + self._list(tuple(evidence))
                + ", "
                + self._list(tuple(facts))
                + ", "
                + self._list(tuple(quotes))
                + tail
            ).encode()
        ).hexdigest()

    def many(
        self, items: Sequence[JudgeItem | tuple[str, list[str], list[str], list[str]]], rows: bool = True
    ) -> list[tuple[str, str]]:
        """(label, rationale) per item; ``rows``: a table row judged unsupported names its wrong cell."""
        out = self._answers(items)
        return cells.named(items, out, self.rows, lambda parts: self.many(parts, False)) if rows and self.rows else out

    def _answers(
        self, items: Sequence[JudgeItem | tuple[str, list[str], list[str], list[str]]]
    ) -> list[tuple[str, str]]:
        """(label, rationale) per item: from this run, the store, another process of the run, or the judge."""
        if self.context:
            keys = [self.key(*it, question=it.question, sources=it.sources) for it in map(as_item, items)]
        else:  # plain tuples: no JudgeItem is made for an item the cache already holds
            keys = [self.key(*it) for it in items]
        known = self.known
        cached: dict[str, tuple[str, str]] = {k: known[k] for k in keys if k in known} if known else {}
        ask = [k for k in keys if k not in cached] if cached else keys
        if ask:
            import pyarrow as pa  # type: ignore[import-untyped]

            self.con.register("_keys", pa.table({"key": pa.array(ask, pa.string())}))
            for k, label, rationale in self.con.execute(
                "SELECT j.key, j.label, j.rationale FROM judgments j JOIN _keys USING (key)"
            ).fetchall():
                cached[k] = (label, rationale)
            self.con.unregister("_keys")
        self.hits += sum(1 for k in set(keys) if k in cached)
        todo: dict[str, JudgeItem] = {}
        for k, item in zip(keys, items, strict=True):
            if k not in cached and k not in todo:
                todo[k] = as_item(item)
        shared = self.shared
        if shared is None or not todo:
            self._ask(todo, cached)
            return [cached[k] for k in keys]
        mine, theirs = shared.claim(list(todo))
        given: tuple[list[tuple[str, str, str, str, str]], list[tuple[str, str, str]]] = ([], [])
        try:
            given = self._ask({k: todo[k] for k in mine}, cached)
        finally:  # given even when the judge raised: its waiters then ask for themselves
            shared.give(*given)
        got = shared.wait(theirs)
        cached.update(got)
        self.hits += len(got)
        rest = {k: todo[k] for k in theirs if k not in got}  # their owner stopped answering: asked here
        if rest:
            shared.give(*self._ask(rest, cached))
        return [cached[k] for k in keys]

    def _ask(
        self, todo: dict[str, JudgeItem], cached: dict[str, tuple[str, str]]
    ) -> tuple[list[tuple[str, str, str, str, str]], list[tuple[str, str, str]]]:
        """Ask the judge ``todo``'s items; their answers into ``cached``, the new judgments pending for the store.
        The new judgments and the failed answers (key, label, rationale)."""
        answers = judge_all(self.judge, list(todo.values()))
        self.asked += len(todo)
        new: list[tuple[str, str, str, str, str]] = []
        failed: list[tuple[str, str, str]] = []
        for k, j in zip(todo, answers, strict=True):
            cached[k] = (j.label, j.rationale)
            if j.error:
                self.failures += 1
                failed.append((k, j.label, j.rationale))
            else:
                new.append((k, self.judge.name, self.judge.version, j.label, j.rationale))
        self.pending.extend(new)
        return new, failed

    def flush(self) -> None:
        if self.pending:  # one set-based insert: executemany costs ~2 ms a row
            steps.fill(self.con, "t_new_judgments", rows=self.pending)
            self.con.execute(  # the store's own table: a view reads it with a partitioned run's judgment files
                f"INSERT OR IGNORE INTO {target(self.con, 'judgments')} BY NAME SELECT DISTINCT * FROM t_new_judgments"
            )
            steps.drop(self.con, "t_new_judgments")
            self.pending = []

    def counts(self) -> dict[str, int]:
        """Judgments asked of the judge, found in the cache, and failed (the run's summary)."""
        return {"asked": self.asked, "cached": self.hits, "failed": self.failures}


def _json_list(items: tuple[str, ...]) -> str:
    return json.dumps(list(items))
