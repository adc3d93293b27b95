"""Support judgments for a run: asked once per distinct claim/evidence pair, cached in the store.

``judge_tables`` fills ``t_judged_gold`` (matched claims against their gold support
bundles, and quote fidelity against what they cite), ``t_judged_cited`` (unmatched
claims, gold or corpus basis, against what they cite: one judgment per claim and cited
chunk set) and ``t_judged_context`` (corpus basis: a claim its citation does not support,
against each other chunk of its context) for classify.sql; ``load_human_labels`` reads the
labels people gave, which override any judge. A judge that reads context (the llm
judge's prompt 2) is also given each claim's question and each evidence chunk's
gold corpus entry (``judges.Source``).
"""

from __future__ import annotations

import csv
import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import duckdb

from citeline.analyzer import steps
from citeline.analyzer.gold.goldset import GoldError, GoldSet
from citeline.analyzer.judges import LABELS, Judge, JudgeItem, Source, judge_all
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
            self.pending = []

    def counts(self) -> dict[str, int]:
        """Judgments asked of the judge, found in the cache, and failed (the run's summary)."""
        return {"asked": self.asked, "cached": self.hits, "failed": self.failures}


def _json_list(items: tuple[str, ...]) -> str:
    return json.dumps(list(items))


class _Sources:
    """Each gold chunk's corpus entry as a judge's ``Source``, made once per chunk."""

    def __init__(self, gold: GoldSet) -> None:
        self.gold = gold
        self.made: dict[str, Source] = {}

    def of(self, chunk_id: str) -> Source:
        if chunk_id not in self.made:
            c = self.gold.corpus.get(chunk_id)
            self.made[chunk_id] = (
                Source(chunk_id)
                if c is None
                else Source(
                    chunk_id,
                    c.doc_id,
                    c.version,
                    c.title,
                    c.effective_from.isoformat() if c.effective_from else "",
                    c.effective_to.isoformat() if c.effective_to else "",
                    c.status,
                )
            )
        return self.made[chunk_id]


def _item(
    claim: str,
    evidence: list[str],
    facts: list[str],
    quotes: list[str],
    question: str,
    sources: _Sources | None,
    chunk_ids: Sequence[str],
) -> JudgeItem | tuple[str, list[str], list[str], list[str]]:
    """A plain tuple for a judge that reads no context (most of a large run's items: nothing more is made);
    with ``sources``, an item carrying the question and each chunk's corpus entry."""
    if sources is None:
        return (claim, evidence, facts, quotes)
    return JudgeItem(claim, evidence, facts, quotes, question=question, sources=[sources.of(c) for c in chunk_ids])


def _questions(
    con: duckdb.DuckDBPyConnection, gold: GoldSet
) -> dict[tuple[str, tuple[str, ...], tuple[str, ...]], str]:
    """The question each unmatched claim (text, cited, quotes) answers, when every trace making it answers the
    same gold case: a claim made in answer to two questions is judged once, so it is given neither."""
    rows = con.execute(
        "SELECT g.text, list_sort(g.cited), g.quotes, list(DISTINCT t.case_id) FROM t_gen_claims g "
        "JOIN t_traces t ON t.trace_id = g.trace_id "
        "WHERE g.factual AND len(g.cited) > 0 GROUP BY g.text, list_sort(g.cited), g.quotes"
    ).fetchall()
    return {
        (text, tuple(cited), tuple(quotes)): gold.cases[cases[0]].question
        for text, cited, quotes, cases in rows
        if len(cases) == 1 and cases[0] in gold.cases
    }


#: the text each chunk the corpus does not hold was served with, as the run's traces recorded it
#: (record_content=True: a citeline retrieval span's chunk text, an OpenInference document's content)
_SERVED_TEXT = """
SELECT id, any_value(t ORDER BY t) FROM (
    SELECT unnest(chunk_id) AS id, unnest(coalesce(chunk_text, oi_doc_text)) AS t FROM spans
    WHERE stage IN ('retrieval', 'context') AND (chunk_text IS NOT NULL OR oi_doc_text IS NOT NULL)
      AND trace_id IN (SELECT trace_id FROM t_traces)
)
WHERE coalesce(t, '') <> '' AND id NOT IN (SELECT chunk_id FROM t_gold_chunks WHERE text <> '')
GROUP BY id
"""

#: corpus basis: each claim whose citation does not support it (or that cites nothing), with the other
#: chunks of its context (sorted: the key classify.sql joins on); judged to tell attribution (the rest of
#: the context supports it) from grounding (nothing there does)
_CONTEXT_SETS = """
SELECT DISTINCT g.text, list_sort(list_filter(t.context, lambda c: NOT list_contains(g.cited, c))) AS others
FROM t_gen_claims AS g
JOIN t_traces AS t USING (trace_id)
LEFT JOIN t_judged_cited AS jc ON jc.text = g.text AND jc.cited = list_sort(g.cited) AND jc.quotes = g.quotes
WHERE t.case_id IS NULL AND g.factual AND len(g.joins) = 0
  AND (len(g.cited) = 0 AND len(g.invalid) = 0 OR jc.label IN ('contradicted', 'insufficient'))
  AND len(list_filter(t.context, lambda c: NOT list_contains(g.cited, c))) > 0
ORDER BY ALL
"""


def judge_tables(con: duckdb.DuckDBPyConnection, gold: GoldSet, judge: CachedJudge) -> None:
    """t_judged_gold, t_judged_cited and (corpus basis) t_judged_context, asked in as few batches as the
    dependencies allow: a context judgment is asked only for a claim its citation does not support."""
    judge.rows = cells.rows_of(con)
    # a chunk's text: the corpus's, else the one the traces served it with (a corpus that is not complete)
    texts = {cid: c.text for cid, c in gold.corpus.items()}
    texts.update((cid, t) for cid, t in con.execute(_SERVED_TEXT).fetchall())
    claims = {(case.case_id, c.claim_id): c for case in gold.cases.values() for c in case.claims}
    # each gold claim's bundles as evidence texts, made once: thousands of generated claims meet each
    bundles = {k: [[texts.get(x, "") for x in b] for b in c.support or [[]]] for k, c in claims.items()}
    matched = con.execute(
        "SELECT DISTINCT m.case_id, m.claim_id, g.text, list_sort(g.cited), g.quotes "
        "FROM t_match m JOIN t_gen_claims g ON g.trace_id = m.trace_id AND g.claim_idx = m.claim_idx"
    ).fetchall()
    # a judge that reads context gets the case's question and each chunk's corpus entry; others plain tuples
    context = judge.context
    sources = _Sources(gold) if context else None
    # every judgment this run needs, asked of the (cached) judge in one batch
    requests: list[JudgeItem | tuple[str, list[str], list[str], list[str]]] = []
    plan: list[tuple[int | None, list[int]]] = []
    for case_id, claim_id, text, cited, quotes in matched:
        gc = claims[(case_id, claim_id)]
        question = gold.cases[case_id].question if context else ""
        q_at = None
        if quotes:  # quotes are checked against what the claim cites
            q_at = len(requests)
            requests.append(_item(text, [texts.get(c, "") for c in cited], [], list(quotes), question, sources, cited))
        at = []
        for b, evidence in enumerate(bundles[(case_id, claim_id)]):  # support against each gold bundle
            at.append(len(requests))
            ids = (gc.support or [[]])[b]
            requests.append(_item(text, evidence, gc.facts, [], question, sources, ids))
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
    steps.fill(con, "t_judged_gold", cols)
    unmatched = con.execute(
        "SELECT DISTINCT g.text, list_sort(g.cited), g.quotes FROM t_gen_claims g "
        "WHERE g.factual AND len(g.cited) > 0 AND NOT EXISTS "
        "(SELECT 1 FROM t_match m WHERE m.trace_id = g.trace_id AND m.claim_idx = g.claim_idx)"
    ).fetchall()
    asked = _questions(con, gold) if context else {}
    results = judge.many(
        [
            _item(
                t,
                [texts.get(c, "") for c in cited],
                [],
                list(q),
                asked.get((t, tuple(cited), tuple(q)), ""),
                sources,
                cited,
            )
            for t, cited, q in unmatched
        ]
    )
    steps.fill(
        con,
        "t_judged_cited",
        rows=[(t, list(c), list(q), r[0], r[1]) for (t, c, q), r in zip(unmatched, results, strict=True)],
    )
    _judge_context(con, judge, texts, sources)
    judge.flush()


def _judge_context(
    con: duckdb.DuckDBPyConnection, judge: CachedJudge, texts: dict[str, str], sources: _Sources | None
) -> None:
    """t_judged_context (text, others, label, rationale, supporting): each corpus-basis claim its citation does
    not support, against the other chunks of its context as one evidence set: one judgment per (claim, set),
    cached like every other. Most such claims are supported by nothing there (grounding) and cost that one
    judgment; only a claim the set supports is judged against each of its chunks, to name the ones that
    support it (``supporting``; all of them when only the set together does)."""
    sets = con.execute(_CONTEXT_SETS).fetchall()
    results = judge.many([_item(t, [texts.get(c, "") for c in ids], [], [], "", sources, ids) for t, ids in sets])
    for i, (_t, ids) in enumerate(sets):  # a chunk with no text might have supported it: undecided, not grounding
        unread = [c for c in ids if not texts.get(c)]
        if unread and results[i][0] != "entailed":
            results[i] = (
                "not_applicable",
                f"no evidence text for {', '.join(unread)} (neither the corpus nor the trace has it)",
            )
    supported = [i for i, r in enumerate(results) if r[0] == "entailed"]
    singles = [(i, c) for i in supported for c in sets[i][1]]
    each = judge.many([_item(sets[i][0], [texts.get(c, "")], [], [], "", sources, [c]) for i, c in singles])
    supporting: list[list[str]] = [[] for _ in sets]
    for (i, c), r in zip(singles, each, strict=True):
        if r[0] == "entailed":
            supporting[i].append(c)
    for i in supported:
        supporting[i] = supporting[i] or list(sets[i][1])  # only the set together supports it
    steps.fill(
        con,
        "t_judged_context",
        rows=[(t, list(ids), r[0], r[1], sup) for (t, ids), r, sup in zip(sets, results, supporting, strict=True)],
    )


def human_table(con: duckdb.DuckDBPyConnection, path: str | Path | None) -> list[GoldError]:
    """Writes t_human (queries/text_tables.sql) from the labels file at ``path`` (none: empty); returns
    the file's problems."""
    rows, errors = load_human_labels(path)
    steps.fill(con, "t_human", records=rows)
    return errors


def load_human_labels(path: str | Path | None) -> tuple[list[dict[str, str | None]], list[GoldError]]:
    """Human labels (CSV or JSONL with trace_id, claim (gold claim id or claim text), label; a
    ``citeline sample`` sheet also names the run it was drawn from, ``run_id``). A row whose label is
    left blank is not labelled yet: not a label, not a problem."""
    if path is None:
        return [], []
    path = Path(path)
    errors: list[GoldError] = []
    rows: list[dict[str, str | None]] = []
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
        if not label and "label" in r:  # a sheet row the person left for later
            continue
        if label not in LABELS:
            errors.append(GoldError(str(path), where, "label", f"{label!r} is not {'/'.join(LABELS)}"))
            continue
        if not r.get("trace_id") or not r.get("claim"):
            errors.append(GoldError(str(path), where, "trace_id/claim", "both are required"))
            continue
        claim = str(r["claim"])
        if claim[:1] == "'" and claim[1:2] in ("=", "+", "-", "@"):  # a sheet's guard against formulas
            claim = claim[1:]
        rows.append(
            {
                "trace_id": str(r["trace_id"]).lower(),
                "claim_key": claim,
                "label": label,
                "sampled_run": str(r.get("run_id") or "") or None,
            }
        )
    return rows, errors
