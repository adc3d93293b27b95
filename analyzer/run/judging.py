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
import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import duckdb

from citeline.analyzer import steps
from citeline.analyzer.claims.actions import call_to_action
from citeline.analyzer.gold.goldset import GoldError, GoldSet
from citeline.analyzer.judges import LABELS, JudgeItem, Source
from citeline.analyzer.run import cells
from citeline.analyzer.run.evidence import Evidence, Said
from citeline.analyzer.run.judgment_cache import CachedJudge


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

#: corpus basis: each claim whose citation does not support it (or that cites nothing), with what it cites and the
#: other chunks of its context (sorted: the key classify.sql joins on), and whether what it cites supports it in
#: part (insufficient, not contradicted: the rest of the context may complete it) with that judgment; judged to
#: tell attribution (the rest of the context supports it, or completes what it cites) from grounding
_CONTEXT_SETS = """
SELECT g.text, list_sort(g.cited) AS cited,
       list_sort(list_filter(t.context, lambda c: NOT list_contains(g.cited, c))) AS others,
       coalesce(bool_or(jc.label = 'insufficient'), false) AS partial, min(jc.label), min(jc.rationale)
FROM t_gen_claims AS g
JOIN t_traces AS t USING (trace_id)
LEFT JOIN t_judged_cited AS jc ON jc.text = g.text AND jc.cited = list_sort(g.cited) AND jc.quotes = g.quotes
WHERE t.case_id IS NULL AND g.factual AND len(g.joins) = 0
  AND (len(g.cited) = 0 AND len(g.invalid) = 0 OR jc.label IN ('contradicted', 'insufficient'))
  AND len(list_filter(t.context, lambda c: NOT list_contains(g.cited, c))) > 0
GROUP BY ALL
ORDER BY ALL
"""

#: the claims a trace makes that report what a named source says, with what they cite and their context
_REPORTS = """
SELECT g.trace_id, g.claim_idx, g.text, g.cited, t.context FROM t_gen_claims AS g
JOIN t_traces AS t USING (trace_id)
WHERE g.factual AND g.text IN (SELECT text FROM _reports)
ORDER BY g.trace_id, g.claim_idx
"""


def judge_tables(con: duckdb.DuckDBPyConnection, gold: GoldSet, judge: CachedJudge) -> None:
    """t_judged_gold, t_judged_cited, (corpus basis) t_judged_context, t_untrusted_action and t_source_conflicts,
    asked in as few batches as the dependencies allow: a context judgment is asked only for a claim its citation
    does not support. A claim that reports what a named source says is judged on what it says that source says,
    against that source alone (``Evidence.said``). A table row judged unsupported names its wrong cell."""
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
    evidence = Evidence(gold, con)
    reports: set[str] = set()  # claims that report a named source (t_source_conflicts reads them)
    # every judgment this run needs, asked of the (cached) judge in one batch
    requests: list[JudgeItem | tuple[str, list[str], list[str], list[str]]] = []
    plan: list[tuple[int | None, list[int], Said | None]] = []
    for case_id, claim_id, text, cited, quotes in matched:
        gc = claims[(case_id, claim_id)]
        question = gold.cases[case_id].question if context else ""
        q_at = None
        if quotes:  # quotes are checked against what the claim cites
            q_at = len(requests)
            requests.append(_item(text, [texts.get(c, "") for c in cited], [], list(quotes), question, sources, cited))
        support = gc.support or [[]]
        said = evidence.said(text, (c for part in (cited, *support) for c in part), cited)
        at = []
        for b, texts_b in enumerate(bundles[(case_id, claim_id)]):  # support against each gold bundle
            ids = support[b]
            if said is None:
                at.append(len(requests))
                requests.append(_item(text, texts_b, gc.facts, [], question, sources, ids))
            elif own := [c for c in ids if c in said.ids]:  # a report: its content against its source alone
                at.append(len(requests))
                requests.append(
                    _item(said.content, [texts.get(c, "") for c in own], gc.facts, [], question, sources, own)
                )
        if said is not None:
            reports.add(text)
            if not at:  # the source it names is in no bundle: judged against that source
                at.append(len(requests))
                ids = said.ids
                requests.append(
                    _item(said.content, [texts.get(c, "") for c in ids], gc.facts, [], question, sources, ids)
                )
        plan.append((q_at, at, said))
    answers = judge.many(requests)
    rows: list[tuple[Any, ...]] = []  # rows, transposed to columns by fill (a frame of dicts is ~10x slower)
    for (case_id, claim_id, text, cited, quotes), (q_at, at, said) in zip(matched, plan, strict=True):
        if len(at) == 1:  # one bundle (most claims): its verdict
            pick = answers[at[0]]
        else:  # entailed by any bundle wins; a bundle the judge could not decide might have entailed it, so
            # it comes next (not_evaluable, never grounding); then a contradiction; then the first verdict
            results = [answers[i] for i in at]
            pick = next(
                (r for want in ("entailed", "not_applicable", "contradicted") for r in results if r[0] == want),
                results[0],
            )
        if said is not None:
            pick = (pick[0], said.prefix(pick[1]))
        if q_at is not None and answers[q_at][0] == "contradicted":
            pick = answers[q_at]
        rows.append((case_id, claim_id, text, cited, quotes, pick[0], pick[1]))
    steps.fill(con, "t_judged_gold", rows=rows)
    unmatched = con.execute(
        "SELECT DISTINCT g.text, list_sort(g.cited), g.quotes FROM t_gen_claims g "
        "WHERE g.factual AND len(g.cited) > 0 AND NOT EXISTS "
        "(SELECT 1 FROM t_match m WHERE m.trace_id = g.trace_id AND m.claim_idx = g.claim_idx)"
    ).fetchall()
    asked = _questions(con, gold) if context else {}
    saids = [evidence.said(t, cited, cited) for t, cited, _q in unmatched]
    reports.update(t for (t, _c, _q), said in zip(unmatched, saids, strict=True) if said is not None)
    results = judge.many(
        [
            _item(
                t if said is None else said.content,
                [texts.get(c, "") for c in (cited if said is None else said.ids)],
                [],
                list(q),
                asked.get((t, tuple(cited), tuple(q)), ""),
                sources,
                cited if said is None else said.ids,
            )
            for (t, cited, q), said in zip(unmatched, saids, strict=True)
        ]
    )
    results = [r if said is None else (r[0], said.prefix(r[1])) for r, said in zip(results, saids, strict=True)]
    steps.fill(
        con,
        "t_judged_cited",
        rows=[(t, list(c), list(q), r[0], r[1]) for (t, c, q), r in zip(unmatched, results, strict=True)],
    )
    _judge_context(con, judge, texts, sources, evidence)
    _untrusted_actions(con, judge, texts, sources, evidence, unmatched, results)
    _source_conflicts(con, judge, texts, sources, evidence, reports)
    judge.flush()


def _judge_context(
    con: duckdb.DuckDBPyConnection,
    judge: CachedJudge,
    texts: dict[str, str],
    sources: _Sources | None,
    evidence: Evidence,
) -> None:
    """t_judged_context (text, cited, others, label, rationale, supporting, joint, named): each corpus-basis claim
    its citation does not support, against the rest of its context: one judgment per (claim, cited, others),
    cached like every other. The evidence is, in this order: the source the claim names among the others, alone
    (a report of that source); what it cites together with the others, when what it cites supports it in part
    (joint support); else the others as one set. A report of a source it cites, which that source does not
    support, is not judged again: the context cannot make a source say what it does not.

    Most such claims are supported by nothing there (grounding) and cost that one judgment; only a claim the
    set supports is judged against each of the others alone, to name the ones that support it (``supporting``),
    and, when none does alone and it cites something, against what it cites with each of them (``joint``: the
    ones that complete it; all of them when only the whole set does)."""
    sets = con.execute(_CONTEXT_SETS).fetchall()
    plan: list[tuple[list[str], Said | None]] = []  # per set: the ids judged, the source it names
    items: list[JudgeItem | tuple[str, list[str], list[str], list[str]]] = []
    reused: dict[int, tuple[str, str]] = {}
    named: list[list[str]] = []  # per set: the source a report names, its judgment's evidence
    for i, (t, cited, others, partial, label, rationale) in enumerate(sets):
        if cited and (own := evidence.said(t, cited, cited)) is not None:
            reused[i] = (label or "not_applicable", rationale or "")
            plan.append(([], None))
            named.append(own.ids)
            continue
        said = evidence.said(t, others)
        named.append([] if said is None else said.ids)
        ids = said.ids if said is not None else [*cited, *others] if cited and partial else list(others)
        plan.append((ids, said))
        items.append(
            _item(t if said is None else said.content, [texts.get(c, "") for c in ids], [], [], "", sources, ids)
        )
    asked = iter(judge.many(items))
    results = [reused[i] if i in reused else next(asked) for i in range(len(sets))]
    for i, (ids, said) in enumerate(plan):  # a chunk with no text might have supported it: undecided, not grounding
        unread = [c for c in ids if not texts.get(c)]
        if unread and results[i][0] != "entailed":
            results[i] = (
                "not_applicable",
                f"no evidence text for {', '.join(unread)} (neither the corpus nor the trace has it)",
            )
        elif said is not None:
            results[i] = (results[i][0], said.prefix(results[i][1]))
    supported = [i for i, r in enumerate(results) if r[0] == "entailed"]
    supporting: list[list[str]] = [[] for _ in sets]
    for i in supported:
        if plan[i][1] is not None:  # a report: the source it names is what supports it
            supporting[i] = list(plan[i][0])
    singles = [(i, c) for i in supported if plan[i][1] is None for c in sets[i][2]]
    each = judge.many([_item(sets[i][0], [texts.get(c, "")], [], [], "", sources, [c]) for i, c in singles])
    for (i, c), r in zip(singles, each, strict=True):
        if r[0] == "entailed":
            supporting[i].append(c)
    # no other chunk supports it alone: which of them complete what it cites
    joint = [i for i in supported if not supporting[i] and sets[i][1] and plan[i][0][: len(sets[i][1])] == sets[i][1]]
    pairs = [(i, c) for i in joint for c in sets[i][2]]
    both = judge.many(
        [
            _item(sets[i][0], [texts.get(x, "") for x in [*sets[i][1], c]], [], [], "", sources, [*sets[i][1], c])
            for i, c in pairs
        ]
    )
    for (i, c), r in zip(pairs, both, strict=True):
        if r[0] == "entailed":
            supporting[i].append(c)
    for i in supported:
        supporting[i] = supporting[i] or list(sets[i][2])  # only the set together supports it
    joined = set(joint)
    steps.fill(
        con,
        "t_judged_context",
        rows=[
            (s[0], list(s[1]), list(s[2]), r[0], r[1], sup, i in joined, n)
            for i, (s, r, sup, n) in enumerate(zip(sets, results, supporting, named, strict=True))
        ],
    )


def _untrusted_actions(
    con: duckdb.DuckDBPyConnection,
    judge: CachedJudge,
    texts: dict[str, str],
    sources: _Sources | None,
    evidence: Evidence,
    unmatched: Sequence[tuple[str, Sequence[str], Sequence[str]]],
    results: Sequence[tuple[str, str]],
) -> None:
    """t_untrusted_action (text, cited, quotes, action, low): each cited claim no gold claim took that its
    citation supports, that asks something of the reader (a link, a credential request, an instruction:
    ``call_to_action``) and whose support is only chunks the gold corpus rates below primary: all it cites is
    so rated, or what else it cites does not support it without them (one judgment, for a claim that cites
    both kinds). Seed 004's poisoned snippet."""
    rows: list[tuple[str, list[str], list[str], str, list[str]]] = []
    mixed: list[tuple[tuple[str, list[str], list[str], str, list[str]], list[str]]] = []
    for (t, cited, q), r in zip(unmatched, results, strict=True):
        if r[0] != "entailed":
            continue
        low = evidence.low(cited)
        if not low or (action := call_to_action(t)) is None:
            continue
        row = (t, list(cited), list(q), action, low)
        rated = {x.split(" (")[0] for x in low}
        trusted = [c for c in cited if c not in rated]
        if trusted:
            mixed.append((row, trusted))
        else:
            rows.append(row)
    answers = judge.many(
        [_item(row[0], [texts.get(c, "") for c in ids], [], [], "", sources, ids) for row, ids in mixed]
    )
    rows += [row for (row, _ids), a in zip(mixed, answers, strict=True) if a[0] != "entailed"]
    steps.fill(con, "t_untrusted_action", rows=rows)


def _source_conflicts(
    con: duckdb.DuckDBPyConnection,
    judge: CachedJudge,
    texts: dict[str, str],
    sources: _Sources | None,
    evidence: Evidence,
    reports: set[str],
) -> None:
    """t_source_conflicts (trace_id, claim_idx, sources): each claim of an answer that reports what one source
    says where the answer reports another source, and one of the two contradicts what the answer says the
    other says: the conflict the seeds want an answer to state ("The memo says the payment settled [1]. The
    ledger shows it pending [2]."). Judged only within an answer holding two such reports: what each says
    against the other's source."""
    if not reports:
        steps.fill(con, "t_source_conflicts", rows=[])
        return
    import pyarrow as pa  # type: ignore[import-untyped]

    con.register("_reports", pa.table({"text": pa.array(sorted(reports), pa.string())}))
    found = con.execute(_REPORTS).fetchall()
    con.unregister("_reports")
    by_trace: dict[str, list[tuple[int, Said]]] = {}
    for trace_id, idx, text, cited, ctx in found:
        said = evidence.said(text, cited, cited) or evidence.said(text, ctx)
        if said is not None:
            by_trace.setdefault(trace_id, []).append((idx, said))
    pairs = [
        (trace_id, a, b)
        for trace_id, said in by_trace.items()
        for a in said
        for b in said
        if a[0] != b[0] and not set(a[1].ids) & set(b[1].ids)
    ]
    answers = judge.many(
        [_item(a[1].content, [texts.get(c, "") for c in b[1].ids], [], [], "", sources, b[1].ids) for _t, a, b in pairs]
    )
    conflicts: dict[tuple[str, int], set[str]] = {}
    for (trace_id, a, b), r in zip(pairs, answers, strict=True):
        if r[0] == "contradicted":  # the pair conflicts: each claim reports a source the other's contradicts
            conflicts.setdefault((trace_id, a[0]), set()).update(b[1].ids)
            conflicts.setdefault((trace_id, b[0]), set()).update(a[1].ids)
    steps.fill(con, "t_source_conflicts", rows=[(t, i, sorted(ids)) for (t, i), ids in sorted(conflicts.items())])


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
