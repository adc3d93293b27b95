"""Gold sets from where teams already keep their evaluation data.

* ``citeline gold import --phoenix-dataset NAME``: a Phoenix dataset's examples
  become cases. Which field holds the question, the expected answer and the ids of
  the supporting documents is set by options (looked up in the example's input,
  then output, then metadata). The expected answer is split into claims the way
  answers are; each claim may be supported by any one of the listed documents.
* ``citeline gold draft --traces DIR``: each distinct question in real traces
  becomes a case drafted from its newest trace: the answer's claims, each with the
  chunks it cited as proposed support, the retrieved chunks as the corpus (text
  from the trace when it was recorded). Every drafted case carries
  ``status: draft``, which ``validate`` and every run warn about until a person
  checks it and deletes the line.

Both can start from an existing corpus (``--corpus gold.yaml``): its chunks keep
their ids, text and lifecycle, and documents met in traces join it by content.
docs/gold-format.md has the options and the mapping.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from citeline.analyzer.gold.goldset import GoldCase, GoldSet, load_gold, normalise_question
from citeline.instrumentation import schema as K

if TYPE_CHECKING:
    import duckdb

_SLUG = re.compile(r"[^a-z0-9]+")


@dataclass
class Drafted:
    """A gold set as plain data (ready for YAML), and what could not be carried over."""

    corpus: list[dict[str, Any]] = field(default_factory=list)
    cases: list[dict[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"corpus": self.corpus, "cases": self.cases}


def _slug(text: str, taken: set[str]) -> str:
    base = _SLUG.sub("-", text.casefold()).strip("-")[:48].strip("-") or "case"
    out, n = base, 2
    while out in taken:
        out, n = f"{base}-{n}", n + 1
    taken.add(out)
    return out


def _claims(answer: str, support_of: Any) -> list[dict[str, Any]]:
    """The factual sentences of an answer as gold claims, split and read as the analyzer reads answers
    (a sentence that says the answer is not known is no claim); ``support_of(labels)`` gives each
    claim's chunk ids from the markers it carries."""
    from citeline.analyzer.run.analyze import DEFAULT_ABSTAIN_PHRASES
    from citeline.analyzer.run.splitting import split_columns

    split = split_columns([answer], DEFAULT_ABSTAIN_PHRASES)
    out: list[dict[str, Any]] = []
    for text, labels, factual, joins in zip(
        split["text"], split["labels"], split["factual"], split["joins"], strict=True
    ):
        if factual and not joins:  # a sentence cut into clauses: its clauses are the claims
            ids = list(dict.fromkeys(support_of(labels)))
            out.append({"claim_id": f"c{len(out) + 1}", "text": text, "support": [[i] for i in ids]})
    return out


def _corpus_entry(chunk_id: str, text: str = "", **extra: Any) -> dict[str, Any]:
    doc_id = extra.pop("doc_id", "") or chunk_id.split("#", maxsplit=1)[0]
    entry: dict[str, Any] = {"chunk_id": chunk_id, "doc_id": doc_id}
    entry.update({k: v for k, v in extra.items() if v})
    if text:
        entry["text"] = text
    return entry


def _base_corpus(corpus: str | Path | None) -> tuple[GoldSet | None, list[dict[str, Any]]]:
    if corpus is None:
        return None, []
    gold = load_gold(corpus)
    if gold.unreadable is not None:
        raise ValueError(f"--corpus {corpus}: {gold.unreadable}")
    rows = []
    for c in gold.corpus.values():
        row = {k: v for k, v in vars(c).items() if v not in (None, "", [])}
        if row.get("status") == "active":
            del row["status"]
        for k in ("effective_from", "effective_to"):
            if k in row:
                row[k] = row[k].isoformat()
        rows.append(row)
    return gold, rows


# ---------------------------------------------------------------- Phoenix dataset


def _lookup(example: Mapping[str, Any], key: str) -> Any:
    for part in ("input", "output", "metadata"):
        value = (example.get(part) or {}).get(key)
        if value is not None:
            return value
    return None


def _ids(value: Any) -> list[str] | None:
    if value is None:
        return []
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    if isinstance(value, list) and all(isinstance(v, str | int) for v in value):
        return [str(v) for v in value]
    return None


def from_examples(
    examples: Iterable[Mapping[str, Any]],
    *,
    source: str,
    question_key: str = "question",
    answer_key: str = "answer",
    support_key: str = "support",
    id_key: str | None = None,
    corpus: str | Path | None = None,
) -> Drafted:
    """Cases from dataset examples ({id, input, output, metadata}); a bad example is named and skipped."""
    base, rows = _base_corpus(corpus)
    known = {r["chunk_id"] for r in rows}
    out = Drafted(corpus=rows)
    taken: set[str] = set()
    stubs: list[str] = []
    for n, ex in enumerate(examples, start=1):
        where = f"{source} example {ex.get('id') or n}"
        question = _lookup(ex, question_key)
        answer = _lookup(ex, answer_key)
        support = _ids(_lookup(ex, support_key))
        if not isinstance(question, str) or not question.strip():
            out.problems.append(f"{where}: no text under {question_key!r} in input, output or metadata; skipped")
            continue
        if answer is not None and not isinstance(answer, str):
            out.problems.append(f"{where}: {answer_key!r} is not text; skipped")
            continue
        if support is None:
            out.problems.append(f"{where}: {support_key!r} is not a list of document ids; skipped")
            continue
        case_id = str(_lookup(ex, id_key) if id_key else ex.get("id") or "") or _slug(question, taken)
        if case_id in taken and id_key:
            out.problems.append(f"{where}: case id {case_id!r} repeats; skipped")
            continue
        taken.add(case_id)
        case: dict[str, Any] = {"case_id": case_id, "question": question}
        claims = _claims(answer or "", lambda _labels, ids=support: ids)
        if not claims:  # no expected answer, or nothing checkable in it: the case expects an abstention
            case["expect"] = "abstain"
        else:
            case["claims"] = claims
        for cid in support:
            if cid not in known:
                known.add(cid)
                stubs.append(cid)
                out.corpus.append(_corpus_entry(cid))
        out.cases.append(case)
    if stubs:
        where = f"the corpus of {corpus}" if base is not None else "no --corpus was given"
        out.problems.append(
            f"{len(stubs)} document id(s) are not in {where}: added without text (the judge needs it; add `text:`): "
            + ", ".join(stubs[:5])
        )
    return out


def import_phoenix_dataset(url: str, name: str, **options: Any) -> Drafted:
    """A Phoenix dataset (by name) as a gold set, through Phoenix's REST API."""
    from citeline.analyzer.phoenix.client import PhoenixError, Rest, explain

    rest = Rest(url)
    try:
        listed = rest.http.get("/v1/datasets", params={"name": name, "limit": 100})
        listed.raise_for_status()
        found = [d for d in listed.json()["data"] if d.get("name") == name]
        if not found:
            raise PhoenixError(f"Phoenix at {url} has no dataset named {name!r}; check --phoenix-dataset")
        resp = rest.http.get(f"/v1/datasets/{found[0]['id']}/examples")
        resp.raise_for_status()
        examples = resp.json()["data"]["examples"]
    except PhoenixError:
        raise
    except Exception as exc:
        raise explain(exc, url) from exc
    finally:
        rest.close()
    return from_examples(examples, source=f"phoenix dataset {name!r}", **options)


# ---------------------------------------------------------------- draft from traces


def _chunk_texts(files: Sequence[Path]) -> dict[str, dict[str, Any]]:
    """Chunk id -> what the trace files recorded of it (citeline retrieval and context spans)."""
    out: dict[str, dict[str, Any]] = {}
    fields = {
        "doc_id": K.CL_CHUNK_DOC_ID,
        "version": K.CL_CHUNK_VERSION,
        "text": K.CL_CHUNK_TEXT,
        "uri": K.CL_CHUNK_URI,
        "title": K.CL_CHUNK_TITLE,
    }
    needle = K.CL_CHUNK_ID.encode()
    for f in files:
        for line in f.read_bytes().splitlines():
            if needle not in line:
                continue
            try:
                doc = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue  # ingest names bad lines; the draft only takes what it can read
            for rs in doc.get("resourceSpans") or []:
                for ss in rs.get("scopeSpans") or []:
                    for span in ss.get("spans") or []:
                        attrs = {a.get("key"): a.get("value") or {} for a in span.get("attributes") or []}
                        ids = _strings(attrs.get(K.CL_CHUNK_ID))
                        cols = {k: _strings(attrs.get(key)) for k, key in fields.items()}
                        for i, cid in enumerate(ids):
                            rec = out.setdefault(cid, {})
                            for k, vals in cols.items():
                                if i < len(vals) and vals[i] and k not in rec:
                                    rec[k] = vals[i]
    return out


def _strings(value: Mapping[str, Any] | None) -> list[str]:
    if not value:
        return []
    return [v.get("stringValue") or "" for v in (value.get("arrayValue") or {}).get("values") or []]


def _newer(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    """Trace row ``a`` is newer than ``b`` (started later; equal times: the smaller trace id, as SQL orders)."""
    ta, tb = a[-1], b[-1]
    if ta != tb:
        return tb is None or (ta is not None and ta > tb)
    return bool(a[-2] < b[-2])


def draft_from_traces(paths: Sequence[str | Path], *, corpus: str | Path | None = None) -> Drafted:
    """A draft gold set from real traces: one case per distinct question (see the module docstring)."""
    import tempfile

    from citeline.analyzer.sources.ingest import ingest, trace_files
    from citeline.analyzer.store import connect

    base, rows = _base_corpus(corpus)
    out = Drafted(corpus=rows)
    files = trace_files(paths)
    with tempfile.TemporaryDirectory() as tmp:
        con = connect(Path(tmp) / "draft.duckdb")
        try:
            report = ingest(con, files)
            out.problems += [str(p) for p in report.problems]
            gold = _cases_asked(con, base)
            newest = _newest_traces(con, gold)
            oi_texts = _openinference_texts(con)
        finally:
            con.close()
    recorded = _chunk_texts(files)
    wanted: list[str] = []
    for row in newest:
        case, ids = _drafted_case(row, gold.cases[row[0]].question)
        out.cases.append(case)
        wanted += ids
    _add_chunks(out, wanted, recorded, oi_texts)
    return out


def _cases_asked(con: duckdb.DuckDBPyConnection, base: GoldSet | None) -> GoldSet:
    """A case per question asked in the traces: the app's own case ids first; other questions get one
    from their text (one per question as normalised)."""
    asked = con.execute(
        "SELECT DISTINCT case_id, question FROM spans WHERE stage = 'request' AND question IS NOT NULL "
        "ORDER BY case_id NULLS LAST, question"
    ).fetchall()
    taken: set[str] = set()
    gold = GoldSet(corpus=dict(base.corpus) if base else {})
    seen: set[str] = set()
    for case_id, q in asked:
        if case_id is not None:
            if case_id not in gold.cases:
                gold.cases[case_id] = GoldCase(case_id, q, expect="abstain")
                taken.add(case_id)
            continue
        if (norm := normalise_question(q)) not in seen:
            seen.add(norm)
            slug = _slug(q, taken)
            gold.cases[slug] = GoldCase(slug, q, expect="abstain")
    return gold


def _newest_traces(con: duckdb.DuckDBPyConnection, gold: GoldSet) -> list[tuple[Any, ...]]:
    """Each case's newest trace over every slice, as the run's own join step reads it (without its start time)."""
    from citeline.analyzer.run import joining

    scope = joining.begin(con, gold, None)  # over the whole (temporary) store
    latest: dict[str, tuple[Any, ...]] = {}
    for part in range(len(scope.slices)):
        joining.join(con, scope.params(part), joining.Tallies())
        for row in con.execute(
            "SELECT case_id, answer, answer_format, abstained, claim_text, evidence_claim, evidence_chunk, "
            "map_label, map_chunk_id, retrieved, trace_id, started_at "
            "FROM t_traces QUALIFY row_number() OVER (PARTITION BY case_id ORDER BY started_at DESC, trace_id) "
            "= 1"
        ).fetchall():
            held = latest.get(row[0])
            if held is None or _newer(row, held):
                latest[row[0]] = row
    return [latest[c][:-1] for c in sorted(latest)]


def _openinference_texts(con: duckdb.DuckDBPyConnection) -> dict[str, str]:
    """Document texts OpenInference spans recorded, by chunk id; documents without an id also under
    oi:<content hash>, the id they are drafted under."""
    from citeline.instrumentation import content_hash

    texts: dict[str, str] = dict(
        con.execute(
            "SELECT id, any_value(t) FROM (SELECT unnest(chunk_id) AS id, unnest(oi_doc_text) AS t "
            "FROM spans WHERE oi_doc_text IS NOT NULL) WHERE t <> '' GROUP BY id"
        ).fetchall()
    )
    for text in list(texts.values()):
        texts.setdefault("oi:" + content_hash(text), text)
    return texts


def _drafted_case(row: tuple[Any, ...], question: str) -> tuple[dict[str, Any], list[str]]:
    """A drafted case from its newest trace's row, and the chunk ids it names (support, then retrieved)."""
    case_id, answer, fmt, abstained, claim_text, ev_claim, ev_chunk, labels, label_ids, retrieved, trace = row
    case: dict[str, Any] = {"case_id": case_id, "question": question, "status": "draft"}
    if fmt == "structured" and claim_text:
        claims = [
            {
                "claim_id": f"c{i + 1}",
                "text": t,
                "support": [[c] for c in dict.fromkeys(c for k, c in zip(ev_claim, ev_chunk, strict=False) if k == i)],
            }
            for i, t in enumerate(claim_text)
        ]
    else:
        mapping = dict(zip(labels or [], label_ids or [], strict=False))
        claims = _claims(answer or "", lambda labels, m=mapping: [m[x] for x in labels if x in m])
    if abstained or not claims:
        case["expect"] = "abstain"
    else:
        case["claims"] = claims
    case["drafted_from"] = trace
    return case, [i for c in claims for b in c["support"] for i in b] + list(retrieved or [])


def _add_chunks(
    out: Drafted, wanted: list[str], recorded: Mapping[str, dict[str, Any]], oi_texts: Mapping[str, str]
) -> None:
    """Each chunk the cases name that the corpus lacks, with what the traces recorded of it; a problem
    names the chunks left without text."""
    known = {r["chunk_id"] for r in out.corpus}
    for cid in dict.fromkeys(wanted):
        if cid in known:
            continue
        known.add(cid)
        rec = recorded.get(cid, {})
        out.corpus.append(
            _corpus_entry(
                cid,
                rec.get("text") or oi_texts.get(cid, ""),
                **{k: rec.get(k) for k in ("doc_id", "version", "uri", "title")},
            )
        )
    textless = [c["chunk_id"] for c in out.corpus if not c.get("text")]
    if textless:
        out.problems.append(
            f"{len(textless)} chunk(s) have no text in the traces (record_content=False?): add `text:` "
            "so the judge can read them: " + ", ".join(textless[:5])
        )


def dump(drafted: Drafted, header: str) -> str:
    """The gold set as YAML, with a header comment saying where it came from."""
    import yaml

    body = yaml.safe_dump(drafted.to_dict(), sort_keys=False, allow_unicode=True, width=100)
    return "".join(f"# {line}\n" for line in header.splitlines()) + body


__all__ = ["Drafted", "draft_from_traces", "dump", "from_examples", "import_phoenix_dataset"]
