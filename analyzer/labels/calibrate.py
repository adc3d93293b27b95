"""How well a judge agrees with people: accuracy, Cohen's kappa, false and missed support.

Reads labelled claim/evidence pairs from

- plain JSONL or CSV rows: ``claim``, ``evidence`` (a list, or one string) or
  ``chunks`` (chunk ids, read from a gold set's corpus), and ``label``;
- ExpertQA answers (``answers.<system>.claims[]`` with ``support``);
- WiCE claims (``claim``, ``evidence`` sentences, ``supported`` /
  ``partially_supported`` / ``not_supported``): plain rows already;
- RGB ``en_fact`` records (``positive`` / ``positive_wrong`` passages), turned
  into pairs as docs/judges.md describes;
- HaluEval QA records (``knowledge``, ``right_answer``, ``hallucinated_answer``):
  two pairs a row, the right answer supported, the hallucinated one not.

People's labels fold to two classes: supported, or not (partial support is
not support). ``N/A`` rows are counted as left out, never guessed.
"""

from __future__ import annotations

import ast
import csv
import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from citeline.analyzer.claims.splitter import markers
from citeline.analyzer.judges import LABELS, Judge, JudgeItem, ident, judge_all
from citeline.analyzer.text import sentences, values

_SUPPORTED = {"entailed", "supported", "complete", "attributable", "true", "1", "yes", "faithful", "correct"}
_UNSUPPORTED = {
    "contradicted",
    "insufficient",
    "not_supported",
    "partially_supported",
    "partial",
    "incomplete",
    "missing",
    "unsupported",
    "not_attributable",
    "false",
    "0",
    "no",
    "hallucinated",
    "hallucination",
}
_LEFT_OUT = {"n/a", "na", "not_applicable", ""}


@dataclass(frozen=True)
class Example:
    claim: str
    evidence: tuple[str, ...]
    supported: bool
    where: str


@dataclass
class Rates:
    n: int
    accuracy: float
    kappa: float
    false_support: float  # the judge said entailed where people said not supported
    missed_support: float  # the judge did not say entailed where people said supported


@dataclass
class Agreement:
    judge: str
    source: str
    n: int
    accuracy: float
    kappa: float
    false_support: float
    missed_support: float
    with_values: Rates  # the same on claims that state a number, date or amount
    confusion: dict[str, dict[str, int]]  # people's class -> the judge's label -> count
    left_out: int = 0
    problems: list[str] = field(default_factory=list)
    judge_errors: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _strip_markers(text: str) -> str:
    for label in set(markers(text)):
        text = text.replace(f"[{label}]", "")
    return " ".join(text.split())


def _human(label: object) -> bool | None:
    """True / False for supported / not; None for a row to leave out; raises on an unknown label."""
    key = str(label if label is not None else "").strip().lower().replace(" ", "_").replace("-", "_")
    if key in _SUPPORTED:
        return True
    if key in _UNSUPPORTED:
        return False
    if key in _LEFT_OUT:
        return None
    raise ValueError(f"label {label!r} is neither supported ({', '.join(sorted(_SUPPORTED))}) nor not")


def _flat(answer: object) -> list[str]:
    if isinstance(answer, list):
        return [s for a in answer for s in _flat(a)]
    return [str(answer)] if answer else []


def _sentence_with(passage: str, phrases: Sequence[str]) -> str | None:
    low = [p.casefold() for p in phrases if p]
    return next((s for s in sentences(passage) if any(p in s.casefold() for p in low)), None)


def _rgb(rec: dict[str, Any], where: str) -> Iterator[Example]:
    """Each true passage and its counterfactual twin: the true sentence is supported by the true passage and
    not by the twin; the twin's sentence is not supported by the true passage."""
    answers, fakes = _flat(rec.get("answer")), _flat(rec.get("fakeanswer"))
    for i, (true, wrong) in enumerate(zip(rec.get("positive") or [], rec.get("positive_wrong") or [], strict=False)):
        if true == wrong:
            continue
        claim, fake = _sentence_with(true, answers), _sentence_with(wrong, fakes)
        at = f"{where}, passage {i}"
        if claim:
            yield Example(claim, (true,), True, at)
            yield Example(claim, (wrong,), False, at)
        if fake and fake != claim:
            yield Example(fake, (true,), False, at)


def _halueval(rec: dict[str, Any], where: str) -> list[Example]:
    """The right answer is supported by the knowledge passage, the hallucinated one is not (each as written:
    often a short phrase, "Delhi", as QA answers are). A row missing either is skipped whole, not halved."""
    texts = {}
    for name in ("knowledge", "right_answer", "hallucinated_answer"):
        text = rec.get(name)
        if not isinstance(text, str) or not text.strip():
            raise ValueError(f"field {name!r} is {'empty' if isinstance(text, str) else 'missing or not text'}")
        texts[name] = text.strip()
    knowledge = (texts["knowledge"],)
    return [
        Example(texts["right_answer"], knowledge, True, f"{where} right_answer"),
        Example(texts["hallucinated_answer"], knowledge, False, f"{where} hallucinated_answer"),
    ]


def _rows(path: Path) -> Iterator[tuple[str, Any]]:
    if path.suffix.lower() == ".csv":
        with open(path, newline="", encoding="utf-8") as f:
            for i, row in enumerate(csv.DictReader(f)):
                yield f"{path}:{i + 2}", row
        return
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, start=1):
            if line.strip():
                try:
                    yield f"{path}:{n}", json.loads(line)
                except ValueError as exc:
                    yield f"{path}:{n}", exc


def examples(path: str | Path, corpus: dict[str, str] | None = None) -> tuple[list[Example], int, list[str]]:
    """Every labelled pair in ``path``, how many rows were left out (N/A), and the problems found (named by line)."""
    path = Path(path)
    out: list[Example] = []
    left_out = 0
    problems: list[str] = []
    for where, rec in _rows(path):
        if isinstance(rec, Exception):
            problems.append(f"{where}: not valid JSON ({rec}); line skipped")
            continue
        if not isinstance(rec, dict):
            problems.append(f"{where}: not an object; line skipped")
            continue
        try:
            if "answers" in rec:  # ExpertQA
                for system, answer in rec["answers"].items():
                    for k, claim in enumerate(answer.get("claims") or []):
                        human = _human(claim.get("support"))
                        evidence = _expertqa_evidence(claim.get("evidence"))
                        if human is None or not evidence:
                            left_out += 1
                            continue
                        at = f"{where} {system} claim {k}"
                        out.append(Example(_strip_markers(claim["claim_string"]), evidence, human, at))
            elif "positive_wrong" in rec:  # RGB
                out.extend(_rgb(rec, where))
            elif "right_answer" in rec or "hallucinated_answer" in rec:  # HaluEval QA
                out.extend(_halueval(rec, where))
            else:
                if not rec.get("claim"):
                    raise ValueError("field 'claim' is missing")
                human = _human(rec.get("label"))
                if human is None:
                    left_out += 1
                    continue
                out.append(Example(str(rec["claim"]), _evidence(rec, corpus), human, where))
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            problems.append(f"{where}: {exc}; row skipped")
    return out, left_out, problems


_SOURCE_HEADER = re.compile(r"^\s*\[\d+\]\s*\S*\s*")


def _expertqa_evidence(raw: object) -> tuple[str, ...]:
    """ExpertQA writes a claim's evidence as the text of a Python list of "[n] URL\\n\\npassage" strings."""
    items: object = raw
    if isinstance(raw, str):
        try:
            items = ast.literal_eval(raw) if raw.lstrip().startswith("[") else [raw]
        except (ValueError, SyntaxError):
            items = [raw]
    if not isinstance(items, list | tuple):
        return ()
    return tuple(t for t in (_SOURCE_HEADER.sub("", str(e), count=1).strip() for e in items if e) if t)


def _evidence(rec: dict[str, Any], corpus: dict[str, str] | None) -> tuple[str, ...]:
    if rec.get("evidence"):
        ev = rec["evidence"]
        if isinstance(ev, str):
            try:
                ev = json.loads(ev) if ev.lstrip().startswith("[") else [ev]
            except ValueError:
                ev = [ev]
        return tuple(str(e) for e in ev if e)
    ids = rec.get("chunks") or rec.get("chunk_ids")
    if not ids:
        raise ValueError("needs 'evidence' (text) or 'chunks' (chunk ids with --gold)")
    if isinstance(ids, str):
        ids = [c.strip() for c in ids.replace(";", ",").split(",") if c.strip()]
    if corpus is None:
        raise ValueError("field 'chunks' needs the gold corpus: pass --gold FILE")
    unknown = [c for c in ids if c not in corpus]
    if unknown:
        raise ValueError(f"chunk(s) {', '.join(unknown)} are not in the gold corpus")
    return tuple(corpus[c] for c in ids)


def gold_examples(db: str | Path, run: str | None = None) -> tuple[list[Example], int, list[str], str]:
    """The claims people labelled in a run (``analyze --labels``), with the text of what each cites.

    Returns the examples, how many were left out (a ``not_applicable`` label, or a claim citing no text),
    the problems, and the run read (the latest with labels unless ``run`` names one)."""
    from citeline.analyzer.store import connect

    con = connect(db, read_only=True)
    try:
        tables = {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
        if "human_labelled" not in tables:
            return [], 0, [f"{db}: this store predates stored human labels; run analyze --labels FILE again"], ""
        if run is None:
            found = con.execute(
                "SELECT h.run_id FROM human_labelled h JOIN runs r USING (run_id) ORDER BY r.started_at DESC LIMIT 1"
            ).fetchall()
            if not found:
                return [], 0, [f"{db}: no run has human labels; run analyze with --labels FILE first"], ""
            run = str(found[0][0])
        rows = con.execute(
            "SELECT trace_id, claim_text, evidence, human_label FROM human_labelled WHERE run_id = $r "
            "ORDER BY trace_id, claim_text",
            {"r": run},
        ).fetchall()
    finally:
        con.close()
    out: list[Example] = []
    left_out = 0
    problems = [] if rows else [f"{db}: run {run} has no human labels"]
    for trace_id, claim, evidence, label in rows:
        texts = tuple(e for e in evidence or [] if e)
        if label == "not_applicable" or not texts:
            left_out += 1
            continue
        out.append(Example(claim, texts, label == "entailed", f"run {run} trace {trace_id}"))
    return out, left_out, problems, run


def _rates(pairs: Sequence[tuple[bool, str]]) -> Rates:
    n = len(pairs)
    if n == 0:
        return Rates(0, 0.0, 0.0, 0.0, 0.0)
    tp = sum(1 for h, j in pairs if h and j == "entailed")
    fp = sum(1 for h, j in pairs if not h and j == "entailed")
    fn = sum(1 for h, j in pairs if h and j != "entailed")
    tn = n - tp - fp - fn
    p_o = (tp + tn) / n
    human_yes, judge_yes = (tp + fn) / n, (tp + fp) / n
    p_e = human_yes * judge_yes + (1 - human_yes) * (1 - judge_yes)
    kappa = 0.0 if p_e == 1 else (p_o - p_e) / (1 - p_e)
    return Rates(
        n,
        round(p_o, 4),
        round(kappa, 4),
        round(fp / (fp + tn), 4) if fp + tn else 0.0,
        round(fn / (tp + fn), 4) if tp + fn else 0.0,
    )


def agreement(judge: Judge, found: Sequence[Example], source: str = "") -> Agreement:
    """Judge every example and compare with people."""
    answers = judge_all(judge, [JudgeItem(e.claim, list(e.evidence)) for e in found])
    pairs = [(e.supported, a.label) for e, a in zip(found, answers, strict=True)]
    with_values = [p for p, e in zip(pairs, found, strict=True) if values(e.claim)]
    overall = _rates(pairs)
    confusion = {h: dict.fromkeys(LABELS, 0) for h in ("supported", "not_supported")}
    for h, label in pairs:
        confusion["supported" if h else "not_supported"][label] += 1
    return Agreement(
        judge=ident(judge),
        source=source,
        n=overall.n,
        accuracy=overall.accuracy,
        kappa=overall.kappa,
        false_support=overall.false_support,
        missed_support=overall.missed_support,
        with_values=_rates(with_values),
        confusion=confusion,
        judge_errors=sum(1 for a in answers if a.error),
    )


def calibrate(path: str | Path, judge: Judge, corpus: dict[str, str] | None = None) -> Agreement:
    """Read a labelled file and measure ``judge`` on it."""
    found, left_out, problems = examples(path, corpus)
    result = agreement(judge, found, str(path))
    result.left_out, result.problems = left_out, problems
    return result
