"""The gold evidence set: load, validate, and say exactly where a problem is.

Accepted forms: one YAML or JSON file with ``corpus`` and ``cases``, or a
folder holding ``corpus.jsonl`` and ``cases.jsonl``. Every problem names the
file, the line (YAML, JSONL) or record (JSON), and the field. A bad record
is skipped; the rest of the set is still usable.
"""

from __future__ import annotations

import datetime as dt
import json
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from citeline.analyzer.claims.policy import PolicyError, attach_policy, exempt_kinds
from citeline.analyzer.gold.yaml_lines import LINE, Hostile, Items, LineLoader
from citeline.analyzer.streaming import lines

EXPECT = ("answer", "abstain", "conflict")
STATUS = ("active", "archived", "deleted")
#: a case's status: drafts (citeline gold draft) are used, and warned about until a person confirms them
CASE_STATUS = ("confirmed", "draft")
#: how far a source may be trusted, best first: a chunk's ``authority`` (absent: not rated, meets any
#: requirement); a case's ``require_authority`` names the least it accepts (``untrusted`` never does)
AUTHORITY = ("primary", "secondary", "untrusted")
REQUIRABLE = AUTHORITY[:-1]


def normalise_question(question: str) -> str:
    """The one form in which a trace's question meets a gold case's question.

    Unicode NFKC (so a no-break space or a full-width letter reads as its plain
    form), every run of whitespace (any Unicode space) as one space, ends
    stripped, case folded. Gold questions and trace questions both go through here.
    """
    return " ".join(unicodedata.normalize("NFKC", question).split()).casefold()


@dataclass(frozen=True)
class GoldError:
    """One problem in the gold set, with its place."""

    file: str
    where: str
    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.where}: {self.field}: {self.message}"


@dataclass
class CorpusChunk:
    chunk_id: str
    doc_id: str
    version: str = ""
    title: str = ""
    uri: str = ""
    text: str = ""
    effective_from: dt.date | None = None
    effective_to: dt.date | None = None
    status: str = "active"
    acl: list[str] | None = None
    authority: str | None = None
    """primary, secondary or untrusted (AUTHORITY); None when the gold set does not rate it."""


@dataclass
class GoldClaim:
    claim_id: str
    text: str
    facts: list[str] = field(default_factory=list)
    support: list[list[str]] = field(default_factory=list)
    contradicts: list[str] = field(default_factory=list)


@dataclass
class GoldCase:
    case_id: str
    question: str
    as_of: dt.date | None = None
    principal_id: str = ""
    principal_groups: list[str] = field(default_factory=list)
    expect: str = "answer"
    claims: list[GoldClaim] = field(default_factory=list)
    status: str = "confirmed"
    attach: str | None = None
    """The attachment policy this case's answers are split by, when the case names one (_policy.ATTACH)."""
    require_authority: str | None = None
    """The least authority a claim's support must have (REQUIRABLE); None: any source will do."""


@dataclass
class GoldSet:
    corpus: dict[str, CorpusChunk] = field(default_factory=dict)
    cases: dict[str, GoldCase] = field(default_factory=dict)
    errors: list[GoldError] = field(default_factory=list)
    warnings: list[GoldError] = field(default_factory=list)
    """Usable but unconfirmed (draft cases): said by validate and kept in each run's problems. Loaded with
    ``advise=True`` (validate), also each confirmed claim that states a value but gives no ``facts``."""
    source: str = ""
    unreadable: str | None = None
    """Why the set as a whole could not be read (then it holds nothing); None when it could."""
    abstain_phrases: list[str] = field(default_factory=list)
    """More phrases that mark an answer as an abstention (top-level ``abstain_phrases:``)."""
    attach: str | None = None
    exempt: frozenset[str] | None = None
    """The file's ``policy:`` (attachment, kinds of text needing no citation); None where it names none."""


class _Records:
    """Collects errors with their places while records are checked."""

    def __init__(self, file: str, advise: bool = False) -> None:
        self.file = file
        self.advise = advise  # validate: also warn about claims whose values no fact checks
        self.errors: list[GoldError] = []
        self.warnings: list[GoldError] = []

    def error(self, where: str, fld: str, message: str) -> None:
        self.errors.append(GoldError(self.file, where, fld, message))

    def warn(self, where: str, fld: str, message: str) -> None:
        self.warnings.append(GoldError(self.file, where, fld, message))

    def text(self, rec: dict[str, Any], where: str, key: str, *, required: bool = False) -> str | None:
        value = rec.get(key)
        if value is None or value == "":
            if required:
                self.error(where, key, "required field is missing")
            return None if required else ""
        if isinstance(value, bool | list | dict):
            self.error(where, key, f"must be a string, got {_kind(value)}")
            return None
        return str(value)

    def date(self, rec: dict[str, Any], where: str, key: str) -> tuple[bool, dt.date | None]:
        value = rec.get(key)
        if value is None or value == "":
            return True, None
        if isinstance(value, dt.datetime):
            return True, value.date()
        if isinstance(value, dt.date):
            return True, value
        try:
            return True, dt.date.fromisoformat(str(value))
        except ValueError:
            self.error(where, key, f"{value!r} is not an ISO date (YYYY-MM-DD)")
            return False, None

    def str_list(self, rec: dict[str, Any], where: str, key: str) -> list[str] | None:
        value = rec.get(key)
        if value is None:
            return []
        if isinstance(value, str) or not isinstance(value, list):
            self.error(where, key, "must be a list of strings")
            return None
        return [str(v) for v in value]


def _kind(value: Any) -> str:
    """What a YAML/JSON value is, in the file's words (never an internal class name)."""
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return "null" if value is None else "a value of another kind"


def _where(rec: Any, fallback: str, items: Any = None, i: int = 0) -> str:
    if isinstance(rec, dict) and LINE in rec:
        return f"line {rec[LINE]}"
    if isinstance(items, Items) and i < len(items.lines):
        return f"line {items.lines[i]}"
    return fallback


def _corpus_record(r: _Records, rec: Any, where: str) -> CorpusChunk | None:
    if not isinstance(rec, dict):
        r.error(where, "corpus", "each corpus entry must be a mapping")
        return None
    chunk_id = r.text(rec, where, "chunk_id", required=True)
    doc_id = r.text(rec, where, "doc_id", required=True)
    ok_from, eff_from = r.date(rec, where, "effective_from")
    ok_to, eff_to = r.date(rec, where, "effective_to")
    status = str(rec.get("status") or "active")
    ok = chunk_id is not None and doc_id is not None and ok_from and ok_to
    if status not in STATUS:
        r.error(where, "status", f"{status!r} is not one of {', '.join(STATUS)}")
        ok = False
    acl = r.str_list(rec, where, "acl") if "acl" in rec and rec["acl"] is not None else None
    if "acl" in rec and rec["acl"] is not None and acl is None:
        ok = False
    authority = _choice(r, rec, where, "authority", AUTHORITY)
    if authority is False:
        ok = False
    if not ok or chunk_id is None or doc_id is None:
        return None
    return CorpusChunk(
        chunk_id=chunk_id,
        doc_id=doc_id,
        version=r.text(rec, where, "version") or "",
        title=r.text(rec, where, "title") or "",
        uri=r.text(rec, where, "uri") or "",
        text=r.text(rec, where, "text") or "",
        effective_from=eff_from,
        effective_to=eff_to,
        status=status,
        acl=acl,
        authority=authority if isinstance(authority, str) else None,
    )


def _choice(r: _Records, rec: dict[str, Any], where: str, key: str, allowed: tuple[str, ...]) -> str | bool | None:
    """A field that takes one of a few words: the word, None when absent, False (named) when it is another."""
    value = rec.get(key)
    if value is None or value == "":
        return None
    if not isinstance(value, str) or value not in allowed:
        r.error(where, key, f"{value!r} is not one of {', '.join(allowed)}")
        return False
    return value


# one check per field of a case, in the order gold-format.md documents them; each names its own field
def _case_record(r: _Records, rec: Any, where: str, corpus: dict[str, CorpusChunk]) -> GoldCase | None:  # noqa: C901, PLR0912, PLR0915
    if not isinstance(rec, dict):
        r.error(where, "cases", "each case must be a mapping")
        return None
    case_id = r.text(rec, where, "case_id", required=True)
    question = r.text(rec, where, "question", required=True)
    ok_date, as_of = r.date(rec, where, "as_of")
    expect = str(rec.get("expect") or "answer")
    status = str(rec.get("status") or "confirmed")
    ok = case_id is not None and question is not None and ok_date
    if expect not in EXPECT:
        r.error(where, "expect", f"{expect!r} is not one of {', '.join(EXPECT)}")
        ok = False
    if status not in CASE_STATUS:
        r.error(where, "status", f"{status!r} is not one of {', '.join(CASE_STATUS)}")
        ok = False
    principal = rec.get("principal")
    pid, groups = "", []
    if isinstance(principal, str):
        pid = principal
    elif isinstance(principal, dict):
        pid = str(principal.get("id") or "")
        raw_groups = principal.get("groups") or []
        if isinstance(raw_groups, list) and all(isinstance(g, str | int) for g in raw_groups):
            groups = [str(g) for g in raw_groups]
        else:
            r.error(where, "principal.groups", "must be a list of group names, e.g. groups: [staff]")
            ok = False
    elif principal is not None:
        r.error(where, "principal", "must be an id string or {id: ..., groups: [...]}")
        ok = False
    claims: list[GoldClaim] = []
    seen: set[str] = set()
    raw_claims = rec.get("claims") or []
    if not isinstance(raw_claims, list):
        r.error(where, "claims", "must be a list")
        raw_claims, ok = [], False
    for i, c in enumerate(raw_claims):
        cwhere = _where(c, f"{where} claims[{i}]")
        claim = _claim_record(r, c, cwhere, corpus)
        if claim is None:
            ok = False
            continue
        if claim.claim_id in seen:
            r.error(cwhere, "claim_id", f"duplicate claim_id {claim.claim_id!r} in case {case_id!r}")
            ok = False
            continue
        seen.add(claim.claim_id)
        claims.append(claim)
        if r.advise and status != "draft":  # a draft is warned about as a whole until it is confirmed
            _advise_facts(r, cwhere, claim)
    if expect == "answer" and not raw_claims:
        r.error(where, "claims", "a case that expects an answer needs at least one claim")
        ok = False
    attach = None
    if rec.get("attach") is not None:
        try:
            attach = attach_policy(rec["attach"])
        except PolicyError as exc:
            r.error(where, "attach", str(exc).split(": ", 1)[1])
            ok = False
    require = _choice(r, rec, where, "require_authority", REQUIRABLE)
    if require is False:
        ok = False
    if not ok or case_id is None or question is None:
        return None
    if status == "draft":
        r.warn(
            where,
            "status",
            f"case {case_id!r} is a draft: check its claims and support chunks, then delete 'status: draft'",
        )
    case = GoldCase(case_id, question, as_of, pid, groups, expect, claims, status, attach)
    case.require_authority = require if isinstance(require, str) else None
    return case


def _claim_record(r: _Records, c: Any, where: str, corpus: dict[str, CorpusChunk]) -> GoldClaim | None:
    if not isinstance(c, dict):
        r.error(where, "claims", "each claim must be a mapping")
        return None
    claim_id = r.text(c, where, "claim_id", required=True)
    text = r.text(c, where, "text", required=True)
    facts = r.str_list(c, where, "facts")
    contradicts = r.str_list(c, where, "contradicts")
    ok = claim_id is not None and text is not None and facts is not None and contradicts is not None
    bundles: list[list[str]] = []
    support = c.get("support") or []
    if not isinstance(support, list) or not all(isinstance(b, list) for b in support):
        r.error(where, "support", "must be a list of bundles, each a list of chunk ids: [[a], [b, c]]")
        ok = False
    else:
        for b in support:
            bundle = [str(x) for x in b]
            for cid in bundle:
                if cid not in corpus:
                    r.error(where, "support", f"unknown chunk {cid!r}: add it to the corpus or fix the id")
                    ok = False
            bundles.append(bundle)
    for cid in contradicts or []:
        if cid not in corpus:
            r.error(where, "contradicts", f"unknown chunk {cid!r}: add it to the corpus or fix the id")
            ok = False
    if not ok or claim_id is None or text is None:
        return None
    return GoldClaim(claim_id, text, facts or [], bundles, contradicts or [])


#: the longest corpus.jsonl / cases.jsonl line read (a chunk's text is kilobytes; a longer line is
#: named and skipped without being held in memory)
MAX_GOLD_LINE_BYTES = 16 * 1024 * 1024
#: the largest single-file gold set (YAML or JSON) read; larger sets belong in a folder of JSONL files
MAX_GOLD_FILE_BYTES = 64 * 1024 * 1024


def _advise_facts(r: _Records, where: str, claim: GoldClaim) -> None:
    """A claim that states a number, an amount or a date and lists no ``facts``: the judge's deterministic
    check of the value (a different amount is contradicted whatever the wording) cannot run for it."""
    from citeline.analyzer.text import fold, value_spans

    if claim.facts:
        return
    text = fold(claim.text)
    stated = list(dict.fromkeys(text[s:e] for s, e, _v in value_spans(text)))
    if stated:
        shown = ", ".join(stated[:3])
        r.warn(
            where,
            "facts",
            f"claim {claim.claim_id!r} states {shown} but has no facts, so the value is not checked "
            f"deterministically; add facts: {json.dumps(stated[:3], ensure_ascii=False)}",
        )


def _jsonl(path: Path, r: _Records) -> Iterator[tuple[Any, str]]:
    for n, line, length in lines(path, hold=MAX_GOLD_LINE_BYTES):
        if line is None:
            r.error(
                f"line {n}",
                "-",
                f"a line of {length:,} bytes is longer than the {MAX_GOLD_LINE_BYTES:,} citeline reads; "
                "the line is skipped (split the chunk into smaller chunks)",
            )
            continue
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError as exc:
            r.error(f"line {n}", "-", f"not valid JSON ({exc}); the line is skipped")
            continue
        except RecursionError:
            r.error(f"line {n}", "-", "nested too deeply to read; the line is skipped")
            continue
        yield record, f"line {n}"


class _NotUtf8(ValueError):
    """A gold file that is not UTF-8 text, named by line and column (a byte offset helps nobody)."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(message)
        self.lineno = line


def _utf8(data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        start = data.rfind(b"\n", 0, exc.start) + 1
        column = len(data[start : exc.start].decode("utf-8", errors="replace")) + 1
        byte = data[exc.start]
        raise _NotUtf8(
            line, f"not UTF-8 text: byte 0x{byte:02x} at line {line}, column {column}; save the file as UTF-8"
        ) from None


def load_gold(path: str | Path, advise: bool = False) -> GoldSet:  # noqa: PLR0911 - one early return per unreadable form, each with its reason
    """Load and validate a gold set. Problems land in ``.errors``; bad records are skipped. With ``advise``
    (``citeline validate``), ``.warnings`` also names each claim that states a value but gives no facts."""
    path = Path(path)
    gold = GoldSet(source=str(path))
    if not path.exists():
        gold.errors.append(GoldError(str(path), "-", "-", "no such file or folder"))
        gold.unreadable = "no such file or folder"
        return gold
    if path.is_dir():
        corpus_file, cases_file = path / "corpus.jsonl", path / "cases.jsonl"
        for f in (corpus_file, cases_file):
            if f.is_dir():
                why = f"{f.name} is a folder; a gold folder holds the files corpus.jsonl and cases.jsonl"
                gold.errors.append(GoldError(str(f), "-", "-", why))
                gold.unreadable = why
                return gold
            if not f.exists():
                gold.errors.append(
                    GoldError(str(f), "-", "-", "missing: a gold folder holds corpus.jsonl and cases.jsonl")
                )
                gold.unreadable = f"{f.name} is missing: a gold folder holds corpus.jsonl and cases.jsonl"
        rc, rk = _Records(str(corpus_file)), _Records(str(cases_file), advise)
        corpus_recs = list(_jsonl(corpus_file, rc)) if corpus_file.exists() else []
        _fill_corpus(gold, rc, corpus_recs)
        case_recs = list(_jsonl(cases_file, rk)) if cases_file.exists() else []
        _fill_cases(gold, rk, case_recs)
        gold.errors.extend(rc.errors + rk.errors)
        gold.warnings.extend(rc.warnings + rk.warnings)
        return gold
    r = _Records(str(path), advise)
    if path.stat().st_size > MAX_GOLD_FILE_BYTES:
        why = (
            f"{path.stat().st_size:,} bytes is more than the {MAX_GOLD_FILE_BYTES:,} citeline reads from one "
            "YAML/JSON gold file: refused; keep a large gold set as a folder with corpus.jsonl + cases.jsonl"
        )
        gold.errors.append(GoldError(str(path), "-", "-", why))
        gold.unreadable = why
        return gold
    try:
        raw = _utf8(path.read_bytes())
        data = json.loads(raw) if path.suffix == ".json" else yaml.load(raw, Loader=LineLoader)
    except RecursionError:
        gold.errors.append(GoldError(str(path), "-", "-", "nested too deeply to read: refused"))
        gold.unreadable = "nested too deeply to read: refused"
        return gold
    except (ValueError, yaml.YAMLError, UnicodeDecodeError) as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark is not None else f"line {getattr(exc, 'lineno', '-')}"
        why = str(exc) if isinstance(exc, Hostile | _NotUtf8) else f"cannot parse: {exc}".splitlines()[0]
        gold.errors.append(GoldError(str(path), where, "-", why))
        gold.unreadable = f"{where}: {why}"
        return gold
    if not isinstance(data, dict):
        gold.errors.append(GoldError(str(path), "line 1", "-", "expected a mapping with 'corpus' and 'cases'"))
        gold.unreadable = "line 1: expected a mapping with 'corpus' and 'cases'"
        return gold
    corpus = data.get("corpus") or []
    cases = data.get("cases") or []
    if not isinstance(corpus, list) or not isinstance(cases, list):
        gold.errors.append(GoldError(str(path), "-", "corpus/cases", "both must be lists"))
        gold.unreadable = "corpus and cases must both be lists"
        return gold
    _file_policy(gold, r, data.get("policy"), _where(data.get("policy"), "policy"))
    _fill_corpus(gold, r, [(rec, _where(rec, f"corpus[{i}]", corpus, i)) for i, rec in enumerate(corpus)])
    _fill_cases(gold, r, [(rec, _where(rec, f"cases[{i}]", cases, i)) for i, rec in enumerate(cases)])
    phrases = r.str_list(data, _where(data, "abstain_phrases"), "abstain_phrases")
    gold.abstain_phrases = [p for p in phrases or [] if p.strip()]
    gold.errors.extend(r.errors)
    gold.warnings.extend(r.warnings)
    return gold


def _file_policy(gold: GoldSet, r: _Records, policy: Any, where: str) -> None:
    """The file's ``policy:`` mapping (``attach``, ``exempt``); a bad setting is named and the default kept."""
    if policy is None:
        return
    if not isinstance(policy, dict):
        r.error(where, "policy", "must be a mapping with attach and/or exempt")
        return
    for key in policy:
        if key not in ("attach", "exempt", LINE):
            r.error(where, f"policy.{key}", "unknown setting; policy takes attach and exempt")
    try:
        if policy.get("attach") is not None:
            gold.attach = attach_policy(policy["attach"], "policy.attach")
        if policy.get("exempt") is not None:
            gold.exempt = exempt_kinds(policy["exempt"], "policy.exempt")
    except PolicyError as exc:
        fld, message = str(exc).split(": ", 1)
        r.error(where, fld, message)


def _fill_corpus(gold: GoldSet, r: _Records, records: list[tuple[Any, str]]) -> None:
    for rec, where in records:
        chunk = _corpus_record(r, rec, where)
        if chunk is None:
            continue
        if chunk.chunk_id in gold.corpus:
            r.error(where, "chunk_id", f"duplicate chunk_id {chunk.chunk_id!r}; chunk ids must be unique")
            continue
        gold.corpus[chunk.chunk_id] = chunk


def _fill_cases(gold: GoldSet, r: _Records, records: list[tuple[Any, str]]) -> None:
    for rec, where in records:
        case = _case_record(r, rec, where, gold.corpus)
        if case is None:
            continue
        if case.case_id in gold.cases:
            r.error(where, "case_id", f"duplicate case_id {case.case_id!r}")
            continue
        gold.cases[case.case_id] = case
