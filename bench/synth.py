"""Synthetic traces + gold shaped like the example app, written fast for benchmarks.

Each trace: 6 spans (request, retrieval of 20 chunks, context of 8, a prose
generation with 3 cited claims, resolution, render), encoded exactly as
``configure(trace_dir=...)`` writes them, one trace per line. ``CASES``
distinct cases rotate through the traces; a share of them carry a fault so
every bucket path of the classifier is exercised.
"""

from __future__ import annotations

import hashlib
import os
import random
from pathlib import Path
from typing import Any

import orjson

CASES = 500
CHUNKS_PER_DOC = 4
DOCS = 400


def _sv(v: str) -> dict[str, Any]:
    return {"stringValue": v}


def _arr(values: list[str]) -> dict[str, Any]:
    return {"arrayValue": {"values": [{"stringValue": v} for v in values]}}


def _darr(values: list[float]) -> dict[str, Any]:
    return {"arrayValue": {"values": [{"doubleValue": v} for v in values]}}


def _kv(k: str, v: dict[str, Any]) -> dict[str, Any]:
    return {"key": k, "value": v}


def chunk_id(doc: int, part: int) -> str:
    return f"doc{doc}-v2#p{part}"


def chunk_uri(doc: int, part: int) -> str:
    return f"https://kb.example.com/doc{doc}/v2#p{part}"


def chunk_text(doc: int, part: int) -> str:
    return f"Policy {doc} section {part}: items may be returned within {10 + (doc + part) % 50} days."


def _hash(text: str) -> str:
    return hashlib.sha256(" ".join(text.split()).encode()).hexdigest()[:16]


def case_plan(case: int) -> dict[str, Any]:
    """Which chunks a case needs and how its traces go wrong (deterministic per case)."""
    rng = random.Random(case)
    doc = rng.randrange(DOCS)
    support = [chunk_id(doc, p) for p in range(3)]
    fault = ["ok", "ok", "ok", "miss", "drop", "wrong_fact", "invalid", "uncited"][case % 8]
    return {"case": case, "doc": doc, "support": support, "fault": fault}


def gold(path: Path) -> None:
    """A JSON gold file for the synthetic cases."""
    corpus = [
        {
            "chunk_id": chunk_id(d, p),
            "doc_id": f"doc{d}",
            "version": "v2",
            "title": f"Policy {d}",
            "uri": chunk_uri(d, p),
            "text": chunk_text(d, p),
        }
        for d in range(DOCS)
        for p in range(CHUNKS_PER_DOC)
    ]
    cases = []
    for c in range(CASES):
        plan = case_plan(c)
        d = plan["doc"]
        cases.append(
            {
                "case_id": f"case-{c}",
                "question": f"What is the return window of policy {d} (case {c})?",
                "as_of": "2026-08-10",
                "expect": "answer",
                "claims": [
                    {
                        "claim_id": f"c{p}",
                        "text": f"Section {p} items may be returned within {10 + (d + p) % 50} days.",
                        "facts": [f"{10 + (d + p) % 50} days"],
                        "support": [[chunk_id(d, p)]],
                    }
                    for p in range(3)
                ],
            }
        )
    path.write_bytes(orjson.dumps({"corpus": corpus, "cases": cases}))


FILLER = (
    " The rest of the section sets out how to prove the purchase, which items are excluded, how refunds"
    " are paid and who to contact when a store refuses a return that this policy allows."
) * 4  # with the sentence above, ~760 characters: a typical retrieval chunk


#: words a distinct answer adds to each sentence (two per sentence, drawn per trace): production
#: answers differ trace by trace, so text work cannot be done once per case
EXTRA_WORDS = (
    "usually generally normally typically currently still also only fully clearly simply really overall "
    "customer eligible unused original receipt store online shipped boxed sealed standard regular listed "
    "purchased delivered returned ordered"
).split()
#: sentence templates a distinct answer picks from: the same fact, worded as a model varies it
TEMPLATES = (  # word order kept: a reordered sentence is matched and judged as a different claim
    "Section {p} items may {w1} be returned within {days} days {w2}{marker}.",
    "Section {p} {w1} items may be returned within {days} days, {w2}{marker}.",
    "Section {p} {w1} items may {w2} be returned within {days} days{marker}.",
)


def _sentence(p: int, days: int, marker: str, rng: random.Random | None) -> str:
    if rng is None:
        return f"Section {p} items may be returned within {days} days{marker}."
    w1, w2 = rng.choice(EXTRA_WORDS), rng.choice(EXTRA_WORDS)
    template = TEMPLATES[rng.randrange(len(TEMPLATES))]
    return template.format(p=p, days=days, marker=marker, w1=w1, w2=w2)


def trace_spans(i: int, rng: random.Random, *, content: bool = False, distinct: bool = False) -> list[dict[str, Any]]:
    """One trace's spans; ``content`` adds what ``record_content=True`` (the default) also writes: every
    chunk's text and the OpenInference documents (id, score, content, metadata) per chunk.
    ``distinct`` words each answer differently (extra words, sentence templates), facts unchanged."""
    plan = case_plan(i % CASES)
    d = plan["doc"]
    fault = plan["fault"]
    trace_id = f"{i + 1:032x}"
    sid = [f"{i * 8 + k + 1:016x}" for k in range(6)]
    t0 = 1_780_000_000_000_000_000 + i * 1_000_000
    retrieved_parts = [(d, p) for p in range(CHUNKS_PER_DOC)]
    others = [(rng.randrange(DOCS), rng.randrange(CHUNKS_PER_DOC)) for _ in range(20 - CHUNKS_PER_DOC)]
    if fault == "miss":
        retrieved_parts = [(d, 0), (d, 1), (d, 3), others[0]]
    retrieved = retrieved_parts + others[: 20 - len(retrieved_parts)]
    context = retrieved[:8]
    if fault == "drop":
        context = [retrieved[0], retrieved[1], *retrieved[3:10]][:8]
    ctx_ids = [chunk_id(a, b) for a, b in context]
    label_of = {cid: str(k + 1) for k, cid in enumerate(ctx_ids)}
    sentences = []
    for p in range(3):
        days = 10 + (d + p) % 50
        if fault == "wrong_fact" and p == 1:
            days += 7
        cite = label_of.get(chunk_id(d, p))
        marker = f" [{cite}]" if cite else ""
        if fault == "invalid" and p == 2:
            marker = " [42]"
        if fault == "uncited" and p == 0:
            marker = ""
        sentences.append(_sentence(p, days, marker, rng if distinct else None))
    answer = " ".join(sentences)
    markers = sorted({label_of[chunk_id(d, p)] for p in range(3) if chunk_id(d, p) in label_of}, key=int)
    marker_uris = [chunk_uri(*context[int(m) - 1]) for m in markers]

    def span(k: int, name: str, stage: str, attrs: list[dict[str, Any]], parent: str | None) -> dict[str, Any]:
        s: dict[str, Any] = {
            "traceId": trace_id,
            "spanId": sid[k],
            "name": name,
            "kind": 1,
            "startTimeUnixNano": str(t0 + k * 1000),
            "endTimeUnixNano": str(t0 + k * 1000 + 500),
            "attributes": [
                _kv("citeline.schema_version", _sv("1")),
                _kv("citeline.stage", _sv(stage)),
                *attrs,
            ],
        }
        if parent:
            s["parentSpanId"] = parent
        return s

    def chunk_attrs(parts: list[tuple[int, int]]) -> list[dict[str, Any]]:
        cids = [chunk_id(a, b) for a, b in parts]
        return [
            _kv("citeline.chunks.count", {"intValue": str(len(parts))}),
            _kv("citeline.chunks.doc_id", _arr([f"doc{a}" for a, _ in parts])),
            _kv("citeline.chunks.chunk_id", _arr(cids)),
            _kv("citeline.chunks.version", _arr(["v2"] * len(parts))),
            _kv("citeline.chunks.content_hash", _arr([_hash(chunk_text(a, b)) for a, b in parts])),
            _kv("citeline.chunks.uri", _arr([chunk_uri(a, b) for a, b in parts])),
            _kv("citeline.chunks.title", _arr([f"Policy {a}" for a, _ in parts])),
            _kv("citeline.chunks.score", _darr([round(1 / (k + 1), 4) for k in range(len(parts))])),
        ]

    def content_attrs(parts: list[tuple[int, int]], prefix: str) -> list[dict[str, Any]]:
        if not content:
            return []
        texts = [chunk_text(a, b) + FILLER for a, b in parts]
        out = [_kv("citeline.chunks.text", _arr(texts))]
        for k, ((a, b), text) in enumerate(zip(parts, texts, strict=True)):
            out += [
                _kv(f"{prefix}.{k}.document.id", _sv(chunk_id(a, b))),
                _kv(f"{prefix}.{k}.document.score", {"doubleValue": round(1 / (k + 1), 4)}),
                _kv(f"{prefix}.{k}.document.content", _sv(text)),
                _kv(f"{prefix}.{k}.document.metadata", _sv(f'{{"doc_id": "doc{a}", "version": "v2"}}')),
            ]
        return out

    question = f"What is the return window of policy {d} (case {i % CASES})?"
    spans = [
        span(
            0,
            "request",
            "request",
            [
                _kv("openinference.span.kind", _sv("CHAIN")),
                _kv("citeline.request.question", _sv(question)),
                _kv("citeline.request.case_id", _sv(f"case-{i % CASES}")),
                _kv("citeline.request.principal.id", _sv("u1")),
                _kv("citeline.request.principal.groups", _arr(["staff"])),
                _kv("citeline.request.as_of", _sv("2026-08-10")),
            ],
            None,
        ),
        span(
            1,
            "search",
            "retrieval",
            [
                _kv("openinference.span.kind", _sv("RETRIEVER")),
                *chunk_attrs(retrieved),
                *content_attrs(retrieved, "retrieval.documents"),
            ],
            sid[0],
        ),
        span(
            2,
            "build_prompt",
            "context",
            [
                _kv("openinference.span.kind", _sv("RERANKER")),
                *chunk_attrs(context),
                _kv("citeline.chunks.label", _arr(list(label_of.values()))),
                *content_attrs(context, "reranker.output_documents"),
            ],
            sid[0],
        ),
        span(
            3,
            "answer",
            "generation",
            [
                _kv("openinference.span.kind", _sv("LLM")),
                _kv("output.value", _sv(answer)),
                _kv("citeline.generation.answer", _sv(answer)),
                _kv("citeline.generation.format", _sv("prose")),
                _kv("citeline.generation.context.label", _arr(list(label_of.values()))),
                _kv("citeline.generation.context.chunk_id", _arr(ctx_ids)),
                _kv("citeline.generation.context.doc_id", _arr([f"doc{a}" for a, _ in context])),
                _kv("citeline.generation.context.version", _arr(["v2"] * len(context))),
            ],
            sid[0],
        ),
        span(
            4,
            "resolve",
            "resolution",
            [
                _kv("openinference.span.kind", _sv("CHAIN")),
                _kv("citeline.resolution.marker", _arr(markers)),
                _kv("citeline.resolution.doc_id", _arr([ctx_ids[int(m) - 1].split("-")[0] for m in markers])),
                _kv("citeline.resolution.chunk_id", _arr([ctx_ids[int(m) - 1] for m in markers])),
                _kv("citeline.resolution.version", _arr(["v2" for _ in markers])),
                _kv("citeline.resolution.uri", _arr(marker_uris)),
            ],
            sid[0],
        ),
        span(
            5,
            "to_html",
            "render",
            [
                _kv("openinference.span.kind", _sv("CHAIN")),
                _kv("citeline.render.label", _arr(markers)),
                _kv("citeline.render.uri", _arr(marker_uris)),
                _kv("citeline.render.title", _arr([f"Policy {d}" for _ in markers])),
            ],
            sid[0],
        ),
    ]
    return spans


def trace_line(i: int, rng: random.Random, *, content: bool = False, distinct: bool = False) -> bytes:
    """One trace as one OTLP/JSON line, as ``configure(trace_dir=...)`` writes it."""
    return _line(trace_spans(i, rng, content=content, distinct=distinct))


def _line(spans: list[dict[str, Any]]) -> bytes:
    req = {
        "resourceSpans": [
            {
                "resource": {"attributes": [_kv("service.name", _sv("synthetic-bot"))]},
                "scopeSpans": [{"scope": {"name": "citeline", "version": "0.1.0"}, "spans": spans}],
            }
        ]
    }
    return orjson.dumps(req) + b"\n"


def write_traces(
    directory: Path,
    n: int,
    *,
    per_file: int = 5_000,
    seed: int = 7,
    content: bool = False,
    distinct: bool = False,
    collector: bool = False,
    first: int = 0,
) -> int:
    """Write ``n`` traces (numbered from ``first``) into ``directory``; returns the bytes written.

    ``collector`` writes them as an OpenTelemetry Collector's file exporter does: each line a batch of
    spans from many traces (50 here), and a trace's last two spans (resolution, render, which end
    later) in the next batch: every trace spans two lines, and the traces of a file's last batch
    (1 in 100) span two files."""
    directory.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed + first)
    total = 0
    late: list[dict[str, Any]] = []  # spans that end after their batch was written
    for start in range(first, first + n, per_file):
        path = directory / f"synthetic-{start // per_file:05d}.jsonl"
        stop = min(first + n, start + per_file)
        with open(path, "wb") as f:
            if not collector:
                data = b"".join(trace_line(i, rng, content=content, distinct=distinct) for i in range(start, stop))
            else:
                lines = []
                for b in range(start, stop, 50):
                    batch, now_late = list(late), []
                    for i in range(b, min(stop, b + 50)):
                        spans = trace_spans(i, rng, content=content, distinct=distinct)
                        batch += spans[:4]
                        now_late += spans[4:]
                    lines.append(_line(batch))
                    late = now_late
                data = b"".join(lines)
            f.write(data)
            total += len(data)
    if late:  # the run's last spans: a line of their own at the end of the last file
        with open(path, "ab") as f:
            f.write(_line(late))
            total += len(_line(late))
    return total


if __name__ == "__main__":
    import sys

    out = Path(sys.argv[1])
    size = write_traces(out / "traces", int(sys.argv[2]), content="--content" in sys.argv[3:])
    gold(out / "gold.json")
    print(f"{size / 1e6:.1f} MB in {out}/traces, gold in {out}/gold.json ({os.cpu_count()} cores)")
