"""Support judgments for a run: asked once per distinct claim/evidence pair, cached in the store.

``judge_tables`` fills ``t_judged_gold`` (matched claims against their gold support
bundles, and quote fidelity against what they cite) and ``t_judged_cited`` (unmatched
claims against what they cite) for classify.sql; ``load_human_labels`` reads the
labels people gave, which override any judge.
"""

from __future__ import annotations

import csv
import hashlib
import json
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path
from typing import Any

import duckdb
import polars as pl

from ._gold import GoldError, GoldSet
from ._store import columns_table, register_frame
from .judges import LABELS, Judge, JudgeItem, judge_all


class CachedJudge:
    """Judgments cached in the store by (claim, evidence, facts, quotes, judge name, version, settings).

    A judge's failure (an exception, a timeout, an unknown label) comes back as
    ``not_applicable`` with the reason and is not cached: the next run asks again.
    """

    def __init__(self, con: duckdb.DuckDBPyConnection, judge: Judge) -> None:
        self.con = con
        self.judge = judge
        self.pending: list[tuple[str, str, str, str, str]] = []
        self.settings = json.dumps(dict(judge.settings), sort_keys=True, default=str)
        self.asked = self.hits = self.failures = 0
        # json.dumps of a list is "[" + ", ".join(json.dumps(x) for x in it) + "]"
        self._head = json.dumps([judge.name, judge.version, self.settings])[:-1] + ", "
        self._list = lru_cache(maxsize=65536)(_json_list)

    def key(self, claim: str, evidence: list[str], facts: list[str], quotes: list[str]) -> str:
        """sha256 of ``json.dumps([name, version, settings, claim, evidence, facts, quotes])``: the form stored
        judgments are keyed by. Built from parts: the judge's part is the same for every item, and an
        evidence list (a gold bundle) or a fact list is shared by thousands of claims."""
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
                + "]"
            ).encode()
        ).hexdigest()

    def many(self, items: list[tuple[str, list[str], list[str], list[str]]]) -> list[tuple[str, str]]:
        keys = [self.key(*it) for it in items]
        cached: dict[str, tuple[str, str]] = {}
        if keys:
            self.con.register("_keys", pl.DataFrame({"key": keys}).to_arrow())
            for k, label, rationale in self.con.execute(
                "SELECT j.key, j.label, j.rationale FROM judgments j JOIN _keys USING (key)"
            ).fetchall():
                cached[k] = (label, rationale)
            self.con.unregister("_keys")
        self.hits += sum(1 for k in set(keys) if k in cached)
        todo: dict[str, JudgeItem] = {}
        for k, item in zip(keys, items, strict=True):
            if k not in cached:
                todo.setdefault(k, JudgeItem(*item))
        answers = judge_all(self.judge, list(todo.values()))
        self.asked += len(todo)
        for k, j in zip(todo, answers, strict=True):
            cached[k] = (j.label, j.rationale)
            if j.error:
                self.failures += 1
            else:
                self.pending.append((k, self.judge.name, self.judge.version, j.label, j.rationale))
        return [cached[k] for k in keys]

    def flush(self) -> None:
        if self.pending:  # one set-based insert: executemany costs ~2 ms a row
            names = ("key", "judge", "version", "label", "rationale")
            frame = columns_table(
                {k: list(col) for k, col in zip(names, zip(*self.pending, strict=True), strict=True)},
                dict.fromkeys(names, pl.Utf8),
            )
            self.con.register("_new_judgments", frame)
            self.con.execute("INSERT OR IGNORE INTO judgments SELECT DISTINCT * FROM _new_judgments")
            self.con.unregister("_new_judgments")
            self.pending = []


def _json_list(items: tuple[str, ...]) -> str:
    return json.dumps(list(items))


def judge_tables(con: duckdb.DuckDBPyConnection, gold: GoldSet, judge: CachedJudge) -> None:
    texts = {cid: c.text for cid, c in gold.corpus.items()}
    claims = {(case.case_id, c.claim_id): c for case in gold.cases.values() for c in case.claims}
    # each gold claim's bundles as evidence texts, made once: thousands of generated claims meet each
    bundles = {k: [[texts.get(x, "") for x in b] for b in c.support or [[]]] for k, c in claims.items()}
    matched = con.execute(
        "SELECT DISTINCT m.case_id, m.claim_id, g.text, list_sort(g.cited), g.quotes "
        "FROM t_match m JOIN t_gen_claims g ON g.trace_id = m.trace_id AND g.claim_idx = m.claim_idx"
    ).fetchall()
    # every judgment this run needs, asked of the (cached) judge in one batch
    requests: list[tuple[str, list[str], list[str], list[str]]] = []
    plan: list[tuple[int | None, list[int]]] = []
    for case_id, claim_id, text, cited, quotes in matched:
        gc = claims[(case_id, claim_id)]
        q_at = None
        if quotes:  # quotes are checked against what the claim cites
            q_at = len(requests)
            requests.append((text, [texts.get(c, "") for c in cited], [], list(quotes)))
        at = []
        for evidence in bundles[(case_id, claim_id)]:  # support against each gold bundle
            at.append(len(requests))
            requests.append((text, evidence, gc.facts, []))
        plan.append((q_at, at))
    answers = judge.many(requests)
    names = ("case_id", "claim_id", "text", "cited", "quotes", "label", "rationale")
    cols: dict[str, list[Any]] = {k: [] for k in names}
    for (case_id, claim_id, text, cited, quotes), (q_at, at) in zip(matched, plan, strict=True):
        results = [answers[i] for i in at]
        # entailed by any bundle wins; a bundle the judge could not decide might have entailed it, so it
        # comes next (not_evaluable, never grounding); then a contradiction; then the first verdict
        pick = next(
            (r for want in ("entailed", "not_applicable", "contradicted") for r in results if r[0] == want),
            results[0],
        )
        if q_at is not None and answers[q_at][0] == "contradicted":
            pick = answers[q_at]
        for k, v in zip(cols, (case_id, claim_id, text, list(cited), list(quotes), pick[0], pick[1]), strict=True):
            cols[k].append(v)  # columns, not row dicts: polars builds a frame of dicts ~10x slower
    register_frame(
        con,
        "t_judged_gold",
        columns_table(
            cols,
            {
                "case_id": pl.Utf8,
                "claim_id": pl.Utf8,
                "text": pl.Utf8,
                "cited": pl.List(pl.Utf8),
                "quotes": pl.List(pl.Utf8),
                "label": pl.Utf8,
                "rationale": pl.Utf8,
            },
        ),
    )
    unmatched = con.execute(
        "SELECT DISTINCT g.text, list_sort(g.cited), g.quotes FROM t_gen_claims g "
        "WHERE g.factual AND len(g.cited) > 0 AND NOT EXISTS "
        "(SELECT 1 FROM t_match m WHERE m.trace_id = g.trace_id AND m.claim_idx = g.claim_idx)"
    ).fetchall()
    results = judge.many([(t, [texts.get(c, "") for c in cited], [], list(q)) for t, cited, q in unmatched])
    register_frame(
        con,
        "t_judged_cited",
        columns_table(
            {
                "text": [t for t, _c, _q in unmatched],
                "cited": [list(c) for _t, c, _q in unmatched],
                "quotes": [list(q) for _t, _c, q in unmatched],
                "label": [r[0] for r in results],
                "rationale": [r[1] for r in results],
            },
            {
                "text": pl.Utf8,
                "cited": pl.List(pl.Utf8),
                "quotes": pl.List(pl.Utf8),
                "label": pl.Utf8,
                "rationale": pl.Utf8,
            },
        ),
    )
    judge.flush()


def load_human_labels(path: str | Path | None) -> tuple[pl.DataFrame, list[GoldError]]:
    """Human labels (CSV or JSONL with trace_id, claim (gold claim id or claim text), label)."""
    schema = {"trace_id": pl.Utf8, "claim_key": pl.Utf8, "label": pl.Utf8}
    if path is None:
        return pl.DataFrame(schema=schema), []
    path = Path(path)
    errors: list[GoldError] = []
    rows: list[dict[str, str]] = []
    records: Iterable[tuple[str, Any]]
    if path.suffix == ".csv":
        with open(path, newline="", encoding="utf-8") as f:
            records = [(f"line {i + 2}", r) for i, r in enumerate(csv.DictReader(f))]
    else:
        records = []
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if line.strip():
                try:
                    records.append((f"line {n}", json.loads(line)))
                except ValueError:
                    errors.append(GoldError(str(path), f"line {n}", "-", "not valid JSON; line skipped"))
    for where, r in records:
        label = (r.get("label") or "").strip()
        if label not in LABELS:
            errors.append(GoldError(str(path), where, "label", f"{label!r} is not {'/'.join(LABELS)}"))
            continue
        if not r.get("trace_id") or not r.get("claim"):
            errors.append(GoldError(str(path), where, "trace_id/claim", "both are required"))
            continue
        rows.append({"trace_id": str(r["trace_id"]).lower(), "claim_key": str(r["claim"]), "label": label})
    return pl.DataFrame(rows, schema=schema), errors
