"""The per-trace Python loops citeline is compared with: a straightforward one and a strong one.

* straightforward: one process, orjson per line, then per trace split the answer,
  match, judge and classify in Python;
* strong: the same loop over the files in 2 processes, with the text work
  (claim splitting, similarity, the judge) cached per distinct text, the same
  judge code. What a competent engineer would write before reaching for a tool.

Both classify with the same rules (retrieval, context, citation, support) and
count claims that are not ok; they read the files ``bench/synth.py`` writes.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import orjson

from citeline.analyzer.claims.splitter import Claim, is_factual, split_claims
from citeline.analyzer.judges import RulesJudge
from citeline.analyzer.text import lexical_similarity, number_agreement

_STATE: dict[str, Any] = {}
_REQUEST = b'{"key":"citeline.stage","value":{"stringValue":"request"}}'


def _attrs(span: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for kv in span["attributes"]:
        v = kv["value"]
        if "arrayValue" in v:
            out[kv["key"]] = [next(iter(x.values())) for x in v["arrayValue"].get("values", [])]
        else:
            out[kv["key"]] = next(iter(v.values()))
    return out


def _setup(gold_path: str, cached: bool) -> None:
    gold = orjson.loads(Path(gold_path).read_bytes())
    judge = RulesJudge()
    _STATE.update(
        texts={c["chunk_id"]: c["text"] for c in gold["corpus"]},
        cases={c["case_id"]: c for c in gold["cases"]},
        judge=judge,
    )
    if cached:
        _STATE["split"] = functools.lru_cache(maxsize=None)(_factual_claims)
        _STATE["sim"] = functools.lru_cache(maxsize=None)(lexical_similarity)
        _STATE["num"] = functools.lru_cache(maxsize=None)(number_agreement)
        _STATE["entailed"] = functools.lru_cache(maxsize=None)(_entailed)
    else:
        _STATE.update(split=_factual_claims, sim=lexical_similarity, num=number_agreement, entailed=_entailed)


def _factual_claims(answer: str) -> tuple[Claim, ...]:
    return tuple(c for c in split_claims(answer) if is_factual(c.text))


def _entailed(claim: str, evidence: tuple[str, ...], facts: tuple[str, ...]) -> bool:
    return bool(_STATE["judge"].judge(claim, list(evidence), list(facts)).label == "entailed")


_NEEDED = ("request", "retrieval", "context", "generation")  # what the loop classifies by


def _traces(path: str, limit: int) -> Iterator[dict[str, dict[str, Any]]]:
    """The first ``limit`` traces of a file, each as {stage: attributes}, as soon as the stages the loop
    needs are read: a Collector writes many traces a line and a trace across lines (its resolution and
    render spans, written late, are not needed here). A line is parsed only while traces are wanted."""
    pending: dict[str, dict[str, dict[str, Any]]] = {}
    given: set[str] = set()
    for line in Path(path).read_bytes().split(b"\n"):
        if not line or len(given) >= limit:
            continue
        for rs in orjson.loads(line)["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                for sp in ss["spans"]:
                    tid = sp["traceId"]
                    if tid in given:
                        continue
                    a = _attrs(sp)
                    stages = pending.setdefault(tid, {})
                    stages[a.get("citeline.stage")] = a
                    if all(k in stages for k in _NEEDED) and len(given) < limit:
                        given.add(tid)
                        yield pending.pop(tid)


def _one_file(path: str, limit: int) -> tuple[int, int, int]:
    """(traces, claims, not ok) of one file's first ``limit`` traces."""
    texts, cases = _STATE["texts"], _STATE["cases"]
    split, sim, num, entailed = _STATE["split"], _STATE["sim"], _STATE["num"], _STATE["entailed"]
    n = claims = bad = 0
    for stages in _traces(path, limit):
        n += 1
        case = cases[stages["request"]["citeline.request.case_id"]]
        retrieved = set(stages["retrieval"]["citeline.chunks.chunk_id"])
        context = set(stages["context"]["citeline.chunks.chunk_id"])
        gen = stages["generation"]
        label_map = dict(
            zip(gen["citeline.generation.context.label"], gen["citeline.generation.context.chunk_id"], strict=False)
        )
        gen_claims = split(gen["citeline.generation.answer"])
        for gc in case["claims"]:
            claims += 1
            bundles = gc["support"]
            support = {x for b in bundles for x in b}
            best = max(
                gen_claims,
                default=None,
                key=lambda c, gc=gc, support=support: (
                    bool({label_map.get(lab) for lab in c.labels} & support),
                    sim(c.text, gc["text"]),
                    num(c.text, gc["text"]),
                ),
            )
            cited = {label_map.get(lab) for lab in best.labels} if best else set()
            if any(lab not in label_map for lab in (best.labels if best else ())):
                bucket = "invalid_citation"
            elif not any(set(b) <= retrieved for b in bundles):
                bucket = "retrieval_miss"
            elif not any(set(b) <= context for b in bundles):
                bucket = "context_drop"
            elif best is None or not entailed(best.text, tuple(texts[c] for c in bundles[0]), tuple(gc["facts"])):
                bucket = "grounding"
            elif not cited:
                bucket = "uncited"
            elif not any(set(b) <= cited for b in bundles):
                bucket = "attribution"
            else:
                bucket = "ok"
            bad += bucket != "ok"
    return n, claims, bad


def run(files: Sequence[Path], gold: str, limit: int, *, strong: bool) -> dict[str, Any]:
    """Classify the first ``limit`` traces of ``files``; seconds, traces, claims, not ok."""
    per_file = []
    left = limit
    for f in sorted(files):  # the same traces for both loops: whole files first, as many as the limit allows
        if left <= 0:
            break
        per_file.append((str(f), left))
        left -= f.read_bytes().count(_REQUEST)  # traces in the file (a line may hold many)
    t = time.perf_counter()
    if strong:
        with ProcessPoolExecutor(2, initializer=_setup, initargs=(gold, True)) as pool:
            parts = list(pool.map(_one_file, *zip(*per_file, strict=True)))
    else:
        _setup(gold, False)
        parts = [_one_file(p, lim) for p, lim in per_file]
    seconds = time.perf_counter() - t
    n, claims, bad = (sum(x) for x in zip(*parts, strict=True))
    return {"seconds": seconds, "traces": n, "claims": claims, "not_ok": bad}
