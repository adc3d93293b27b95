"""What each perturbation does to one stage's real return value (the catalogue, perturbations.py, names them and
says what must follow): the gold case they read (:class:`CaseContext`: its support, their archived and newer
versions), and each edit, which returns the changed value with what it changed and the gold claims that lose
their support, or why it does not apply to this case (a string: the cell is ``n/a`` with that reason).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from citeline.analyzer.claims.splitter import markers, relabel, remove_markers
from citeline.analyzer.gold.goldset import CorpusChunk, GoldCase, GoldSet
from citeline.analyzer.testing import prompts
from citeline.analyzer.testing import shapes as sh
from citeline.analyzer.text import overlap, stems
from citeline.instrumentation.chunks import Columns
from citeline.instrumentation.labels import Shape
from citeline.instrumentation.prompt import chunks_in_prompt, prompt_text
from citeline.instrumentation.testing import RequestView

RELABEL_FROM = 11  # shuffled chunks are labelled 11, 12, ...: no label the app used before
_NUMBER = re.compile(r"(?<![\w.,])(\d+)((?:[.,]\d+)?)(?![\w])")
#: a number renumber may raise: not a citation marker's ("[2]", "(2)")
_BUMPABLE = re.compile(r"(?<![\w.,\[(])(\d+)((?:[.,]\d+)?)(?![\w\])])")
#: how alike a gold chunk's text must be to count as another version of a support chunk
SAME_PASSAGE = 0.5


@dataclass
class CaseContext:
    """One gold case, seen by the perturbations: its support, their other versions in the corpus."""

    gold: GoldSet
    case: GoldCase
    support: set[str] = field(default_factory=set)
    contradicts: set[str] = field(default_factory=set)
    facts_numbers: list[str] = field(default_factory=list)
    archived: dict[str, CorpusChunk] = field(default_factory=dict)
    newer: dict[str, CorpusChunk] = field(default_factory=dict)

    @classmethod
    def of(cls, gold: GoldSet, case: GoldCase) -> CaseContext:
        ctx = cls(gold, case)
        for claim in case.claims:
            ctx.support |= {c for bundle in claim.support for c in bundle}
            ctx.contradicts |= set(claim.contradicts)
            for fact in claim.facts:
                ctx.facts_numbers += [m.group(1) + m.group(2) for m in _NUMBER.finditer(fact)]
        for cid in sorted(ctx.support):
            chunk = gold.corpus.get(cid)
            if chunk is None:
                continue
            old = archived_version(gold, chunk, case)
            if old is not None:
                ctx.archived[cid] = old
            ctx.newer[cid] = newer_version(chunk, ctx.facts_numbers)
        return ctx

    def claims_losing(self, chunks: set[str]) -> tuple[str, ...]:
        """The gold claims every support bundle of which holds one of ``chunks`` (they lose all support)."""
        return tuple(c.claim_id for c in self.case.claims if c.support and all(set(b) & chunks for b in c.support))

    def claims_citing(self, chunks: set[str]) -> tuple[str, ...]:
        """The gold claims some support bundle of which holds one of ``chunks`` (a citation of it moved)."""
        return tuple(c.claim_id for c in self.case.claims if any(set(b) & chunks for b in c.support))

    def claims_stating(self, number: str) -> tuple[str, ...]:
        """The gold claims a fact of which states ``number`` as a whole number."""
        return tuple(
            c.claim_id
            for c in self.case.claims
            if any(m.group(1) + m.group(2) == number for f in c.facts for m in _NUMBER.finditer(f))
        )

    def supported_claims(self) -> tuple[str, ...]:
        return tuple(c.claim_id for c in self.case.claims if c.support)

    def uri_of(self, chunk_id: str, view: RequestView) -> str:
        chunk = self.gold.corpus.get(chunk_id)
        if chunk is not None and chunk.uri:
            return chunk.uri
        cols = view.retrieved
        if cols is not None and chunk_id in cols.chunk_id:
            return cols.uri[cols.chunk_id.index(chunk_id)]
        return ""


def _in_force(chunk: CorpusChunk, case: GoldCase) -> bool:
    if chunk.status != "active":
        return False
    day = case.as_of
    if day is None:
        return True
    return not (
        (chunk.effective_from is not None and chunk.effective_from > day)
        or (chunk.effective_to is not None and chunk.effective_to <= day)
    )


def archived_version(gold: GoldSet, chunk: CorpusChunk, case: GoldCase) -> CorpusChunk | None:
    """The gold corpus's older version of ``chunk``: same document, not in force at the case's date, and
    the same passage (stemmed-word overlap at least SAME_PASSAGE); the most alike if several."""
    words = stems(chunk.text)
    best: tuple[float, str, CorpusChunk] | None = None
    for other in gold.corpus.values():
        if other.chunk_id == chunk.chunk_id or other.doc_id != chunk.doc_id or _in_force(other, case):
            continue
        sim = overlap(words, stems(other.text)) if chunk.text and other.text else 0.0
        if sim >= SAME_PASSAGE and (best is None or (sim, other.chunk_id) > (best[0], best[1])):
            best = (sim, other.chunk_id, other)
    return best[2] if best else None


def bump(number: str) -> str:
    """The number one higher in its integer part ("30" -> "31", "4.99" -> "5.99")."""
    m = re.fullmatch(r"(\d+)(.*)", number)
    return str(int(m.group(1)) + 1) + m.group(2) if m else number


def _next_version(version: str) -> str:
    m = re.search(r"(\d+)(?!.*\d)", version)
    return version[: m.start()] + str(int(m.group(1)) + 1) + version[m.end() :] if m else (version or "v") + "-next"


def renumber(text: str, numbers: Sequence[str]) -> str:
    """``text`` with each of ``numbers`` raised by one wherever it stands as a whole number."""
    wanted = set(numbers)

    def sub(m: re.Match[str]) -> str:
        whole = m.group(1) + m.group(2)
        return bump(whole) if whole in wanted else whole

    return _BUMPABLE.sub(sub, text)


def newer_version(chunk: CorpusChunk, numbers: Sequence[str]) -> CorpusChunk:
    """A clearly newer version of ``chunk``, made for the supersede perturbation: the next version
    number (in the id and uri too, where they spell it) and each number of the case's facts raised
    by one, so an answer that follows it states the new rule."""
    version = _next_version(chunk.version)

    def respell(s: str) -> str:
        return s.replace(chunk.version, version) if chunk.version and chunk.version in s else s

    chunk_id = respell(chunk.chunk_id)
    if chunk_id == chunk.chunk_id:
        chunk_id = f"{chunk.chunk_id}@{version}"
    return replace(
        chunk,
        chunk_id=chunk_id,
        version=version,
        uri=respell(chunk.uri),
        text=renumber(chunk.text, numbers),
        effective_to=None,
        status="active",
    )


@dataclass(frozen=True)
class Edited:
    """What a perturbation made of one return value: the value handed on, one line saying what changed,
    and the gold claims whose evidence it changed (the declared flag must hold on those, the others keep
    their baseline bucket)."""

    value: Any
    detail: str
    claims: tuple[str, ...] = ()


class Change:
    """One perturbation prepared for one case: counts where it applied, says why it did not."""

    def __init__(self, name: str, stage: str, ctx: CaseContext, fn: Callable[..., Edited | str]) -> None:
        self.name = name
        self.stage = stage
        self.ctx = ctx
        self._fn = fn
        self.applied = 0
        self.calls = 0
        self.skipped: str | None = None
        self.claims: list[str] = []

    def apply(self, value: Any, view: RequestView) -> tuple[Any, str] | None:
        self.calls += 1
        try:
            out = self._fn(self.ctx, value, view)
        except sh.CannotEdit as err:
            self.skipped = str(err)
            return None
        if isinstance(out, str):
            self.skipped = out
            return None
        self.applied += 1
        self.claims += [c for c in out.claims if c not in self.claims]
        return out.value, out.detail


def _chunks(value: Any, stage: str) -> tuple[list[Any], list[str]]:
    items = sh.items_of(value)
    if items is None:
        raise sh.CannotEdit(
            f"the {stage} step returned a {type(value).__name__}, not a list of chunks: perturbations edit chunk "
            "lists (return the chunks, or an object holding them under .chunks)"
        )
    try:
        return items, [sh.record(i).chunk_id for i in items]
    except TypeError as err:  # the app's own shape, read by its to_chunks= hook: not ours to edit
        raise sh.CannotEdit(f"cannot read the {stage} step's chunks without its to_chunks= hook: {err}") from err


def drop_support(ctx: CaseContext, value: Any, view: RequestView, stage: str) -> Edited | str:
    items, ids = _chunks(value, stage)
    keep = [i for i, cid in zip(items, ids, strict=True) if cid not in ctx.support]
    if len(keep) == len(items):
        return f"no support chunk in what the {stage} step returned"
    dropped = {cid for cid in ids if cid in ctx.support}
    detail = f"dropped {', '.join(sorted(dropped))}; {len(keep)} chunk(s) left"
    return Edited(sh.with_items(value, keep), detail, ctx.claims_losing(dropped))


def _candidates(view: RequestView) -> Columns:
    if view.candidates is None:
        raise sh.CannotEdit(
            "the context step returned a prompt, and no chunks were passed to it or retrieved before it: "
            "nothing to find in the prompt"
        )
    return view.candidates


def _documents(value: Any) -> list[Any] | None:
    """The chunk list a prompt wrapper holds beside its messages (its second view), if any."""
    return None if isinstance(value, str | list | tuple) else sh.items_of(value)


def _in_prompt(value: Any, edit: Callable[[], tuple[Any, Any]]) -> tuple[Any, Any]:
    """Run a prompt edit; on a wrapper with two views, a failure names the shape and the hook that would let it."""
    try:
        return edit()
    except sh.CannotEdit as err:
        if _documents(value) is None:
            raise sh.CannotEdit(f"{err} (the context step returned a rendered prompt)") from err
        raise sh.CannotEdit(
            f"cannot edit this shape (two views): a {type(value).__name__} holds rendered messages and a chunk "
            f"list, and the messages could not be edited to match ({err}); return the chunks from the "
            "@context_assembly step and render the prompt after it, or pass to_chunks= to read the chunks "
            "from the messages"
        ) from err


def _documents_without(value: Any, dropped: set[str]) -> Any:
    items = _documents(value)
    if items is None:
        return value
    ids = [sh.record(i).chunk_id for i in items]
    return sh.with_items(value, [i for i, cid in zip(items, ids, strict=True) if cid not in dropped])


def _drop_from_prompt(ctx: CaseContext, value: Any, view: RequestView, drop_ids: set[str], what: str) -> Edited | str:
    cands = _candidates(view)
    new, dropped = _in_prompt(value, lambda: prompts.drop(value, cands, drop_ids))
    if not dropped:
        return f"no {what} in the prompt the context step returned"
    new = _documents_without(new, set(dropped))
    detail = f"removed the passage(s) of {', '.join(dropped)} from the prompt"
    return Edited(new, detail, ctx.claims_losing(set(dropped)))


def drop_context(ctx: CaseContext, value: Any, view: RequestView) -> Edited | str:
    if prompts.is_prompt(value):
        return _drop_from_prompt(ctx, value, view, ctx.support, "support chunk")
    return drop_support(ctx, value, view, "context")


def shuffle_relabel(ctx: CaseContext, value: Any, view: RequestView) -> Edited | str:
    if prompts.is_prompt(value):
        return _shuffle_prompt(value, view)
    items, _ids = _chunks(value, "context")
    if not items:
        return "the context is empty"
    order = list(reversed(items))
    labelled = [sh.with_chunk_fields(item, label=str(RELABEL_FROM + n)) for n, item in enumerate(order)]
    last = RELABEL_FROM + len(items) - 1
    return Edited(sh.with_items(value, labelled), f"reversed {len(items)} chunk(s), labelled {RELABEL_FROM}..{last}")


def _shuffle_prompt(value: Any, view: RequestView) -> Edited | str:
    """Reverse the passages of a prompt and the documents beside it, so the app's own mapping of labels to
    documents still holds; a prompt alone is not reordered (the app's list behind its labels is out of reach)."""
    items = _documents(value)
    if items is None:
        return (
            "the context step returned only a rendered prompt: reordering its passages would leave the app's own "
            "list of the chunks behind the labels in the old order; the drop and truncate cells test this stage"
        )
    cands = _candidates(view)
    labels = chunks_in_prompt(prompt_text(value) or "", cands).label
    positional = labels == [str(n) for n in range(1, len(labels) + 1)]
    first = 1 if positional else RELABEL_FROM  # labels by position stay positions: documents[k - 1] is [k]
    new, n = _in_prompt(value, lambda: prompts.reverse_relabel(value, cands, first))
    if not n:
        return "no chunk found in the prompt the context step returned"
    docs = _documents(new)
    if docs is not None:
        new = sh.with_items(new, list(reversed(docs)))
    return Edited(new, f"reversed {n} passage(s) in the prompt and its documents, labelled {first}..{first + n - 1}")


def truncate(ctx: CaseContext, value: Any, view: RequestView) -> Edited | str:
    if prompts.is_prompt(value):
        cands = _candidates(view)
        found = prompts.passages(prompts.rendered(value).texts, cands)
        first = next((n for n, p in enumerate(found) if p.chunk_id in ctx.support), None)
        if first is None:
            return "no support chunk in the prompt the context step returned"
        cut = {p.chunk_id for p in found[first:]}
        out = _drop_from_prompt(ctx, value, view, cut, "support chunk")
        if isinstance(out, Edited):
            cut_at = found[first].chunk_id
            out = replace(out, detail=f"kept the first {first} of {len(found)} passage(s), cut at {cut_at}")
        return out
    items, ids = _chunks(value, "context")
    first = next((n for n, cid in enumerate(ids) if cid in ctx.support), None)
    if first is None:
        return "no support chunk in the context"
    detail = f"kept the first {first} of {len(items)} chunk(s), cut at {ids[first]}"
    return Edited(sh.with_items(value, items[:first]), detail, ctx.claims_losing(set(ids[first:])))


def archived_swap(ctx: CaseContext, value: Any, view: RequestView) -> Edited | str:
    items, ids = _chunks(value, "retrieval")
    for n, cid in enumerate(ids):
        old = ctx.archived.get(cid)
        if old is None:
            continue
        if old.chunk_id in ids:  # the index already serves it: the support is simply gone
            rest = items[:n] + items[n + 1 :]
            detail = f"dropped {cid}; its archived version {old.chunk_id} was already there"
            return Edited(sh.with_items(value, rest), detail, ctx.claims_losing({cid}))
        swapped = sh.with_chunk_fields(
            items[n], chunk_id=old.chunk_id, doc_id=old.doc_id, version=old.version, text=old.text, uri=old.uri
        )
        new = sh.with_items(value, [*items[:n], swapped, *items[n + 1 :]])
        return Edited(new, f"swapped {cid} for {old.chunk_id}", ctx.claims_losing({cid}))
    return "no support chunk with an archived version in what retrieval returned"


def supersede(ctx: CaseContext, value: Any, view: RequestView) -> Edited | str:
    items, ids = _chunks(value, "retrieval")
    out: list[Any] = []
    added: list[str] = []
    olds: set[str] = set()
    for item, cid in zip(items, ids, strict=True):
        new = ctx.newer.get(cid)
        if new is not None and new.chunk_id not in ids:
            out.append(
                sh.with_chunk_fields(
                    item, chunk_id=new.chunk_id, doc_id=new.doc_id, version=new.version, text=new.text, uri=new.uri
                )
            )
            added.append(f"{new.chunk_id} before {cid}")
            olds.add(cid)
        out.append(item)
    if not added:
        return "no support chunk in what retrieval returned"
    return Edited(sh.with_items(value, out), "added the newer version " + ", ".join(added), ctx.claims_citing(olds))


def _answer(value: Any) -> tuple[str | None, list[Any] | None]:
    claims = sh.claims_of(value)
    return sh.answer_text(value), claims


def drop_markers(ctx: CaseContext, value: Any, view: RequestView) -> Edited | str:
    text, claims = _answer(value)
    if claims is not None:
        n = sum(len(sh.claim_evidence(c)) for c in claims)
        if not n:
            return "the structured answer cites nothing"
        new = sh.with_claims(value, [sh.with_claim(c, evidence=[]) for c in claims])
        return Edited(new, f"removed the evidence of {n} citation(s)", ctx.supported_claims())
    if text is None:
        raise sh.CannotEdit(f"cannot read an answer from a {type(value).__name__}")
    bare, n = remove_markers(text)
    if not n:
        return "the answer has no marker"
    return Edited(sh.with_answer_text(value, bare), f"removed {n} marker(s)", ctx.supported_claims())


def change_number(ctx: CaseContext, value: Any, view: RequestView) -> Edited | str:
    if not ctx.facts_numbers:
        return "the gold claims state no number"
    text, claims = _answer(value)
    texts = [sh.answer_text(c) or "" for c in claims] if claims is not None else [text or ""]
    for number in ctx.facts_numbers:
        if any(re.search(rf"(?<![\w.,\[]){re.escape(number)}(?![\w])", t) for t in texts):
            new = bump(number)
            if claims is not None:
                changed = [sh.with_claim(c, text=renumber(sh.answer_text(c) or "", [number])) for c in claims]
                value = sh.with_claims(value, changed)
            if text is not None:
                value = sh.with_answer_text(value, renumber(text, [number]))
            return Edited(value, f"changed {number} to {new}", ctx.claims_stating(number))
    return "the answer states none of the gold facts' numbers"


def _neighbour(ctx: CaseContext, view: RequestView, cited: str) -> tuple[str, str] | None:
    """The context label and chunk nearest ``cited`` that supports nothing (and contradicts nothing, if any)."""
    if cited not in view.chunk_ids:
        return None
    at = view.chunk_ids.index(cited)
    order = sorted(range(len(view.chunk_ids)), key=lambda n: (abs(n - at), n))
    stale = {c.chunk_id for c in ctx.gold.corpus.values() if not _in_force(c, ctx.case)}
    for avoid in (ctx.support | ctx.contradicts | stale, ctx.support):
        for n in order:
            if view.chunk_ids[n] not in avoid:
                return view.labels[n], view.chunk_ids[n]
    return None


def neighbour_label(ctx: CaseContext, value: Any, view: RequestView) -> Edited | str:
    text, claims = _answer(value)
    if claims is not None:
        # as in prose, one cited support chunk moves (everywhere it is cited): one claim's evidence, not all
        cited_ids = [sh.row_get(i, "chunk_id") for c in claims for i in sh.claim_evidence(c)]
        target = next((c for c in cited_ids if c in ctx.support and _neighbour(ctx, view, c) is not None), None)
        if target is None:
            return "no cited support chunk with a neighbour in context"
        near = _neighbour(ctx, view, target)
        assert near is not None
        out = [
            sh.with_claim(
                c,
                evidence=[
                    sh.with_claim(i, chunk_id=near[1], quote="") if sh.row_get(i, "chunk_id") == target else i
                    for i in sh.claim_evidence(c)
                ],
            )
            for c in claims
        ]
        return Edited(sh.with_claims(value, out), f"cites {near[1]} instead of {target}", ctx.claims_citing({target}))
    if text is None:
        raise sh.CannotEdit(f"cannot read an answer from a {type(value).__name__}")
    label_chunk = dict(zip(view.labels, view.chunk_ids, strict=False))
    shape = Shape.of(view.labels)
    for label in dict.fromkeys(markers(text, shape)):
        cited = label_chunk.get(label, "")
        near = _neighbour(ctx, view, cited) if cited in ctx.support else None
        if near is None:
            continue
        moved = relabel(text, label, near[0], shape)
        detail = f"cites [{near[0]}] ({near[1]}) instead of [{label}]"
        return Edited(sh.with_answer_text(value, moved), detail, ctx.claims_citing({cited}))
    return "no marker citing a support chunk with a neighbour in context"


def wrong_chunk(ctx: CaseContext, value: Any, view: RequestView) -> Edited | str:
    rows = sh.rows_of(value, ("resolved", "citations", "items"))
    if rows is None:
        raise sh.CannotEdit(f"found no resolved citations in a {type(value).__name__}")
    out, moved = [], []
    cids: set[str] = set()
    for row in rows:
        cid = sh.row_get(row, "chunk_id")
        near = _neighbour(ctx, view, cid) if cid in ctx.support else None
        if near is None:
            out.append(row)
            continue
        at = view.chunk_ids.index(near[1])
        fields = {"chunk_id": near[1], "doc_id": view.doc_ids[at], "version": view.versions[at]}
        out.append(sh.with_row_fields(row, **fields, uri=ctx.uri_of(near[1], view)))
        moved.append(f"{sh.row_get(row, 'marker') or sh.row_get(row, 'label')} -> {near[1]} (was {cid})")
        cids.add(cid)
    if not moved:
        return "no citation resolved to a support chunk"
    new = sh.with_rows(value, out, ("resolved", "citations", "items"))
    return Edited(new, "resolved " + ", ".join(moved), ctx.claims_citing(cids))


def _older_link(ctx: CaseContext, row: Any, meant: str) -> Any:
    """``row`` linking the gold corpus's archived version of ``meant`` (None when the gold holds none: a link
    to a version nobody wrote down would be invented)."""
    old = ctx.archived.get(meant)
    if old is None or not old.uri:
        return None
    return sh.with_row_fields(row, uri=old.uri, chunk_id=old.chunk_id, version=old.version)


def old_version_link(ctx: CaseContext, value: Any, view: RequestView) -> Edited | str:
    rows = sh.rows_of(value, ("citations", "sources", "links", "items"))
    if rows is None:
        raise sh.CannotEdit(f"found no rendered links in a {type(value).__name__}")
    label_chunk = dict(zip(view.labels, view.chunk_ids, strict=False))
    by_uri = {c.uri: c.chunk_id for c in ctx.gold.corpus.values() if c.uri}
    out, moved = [], []
    meant_ids: set[str] = set()
    for row in rows:
        meant = (
            label_chunk.get(sh.row_get(row, "label"))
            or sh.row_get(row, "chunk_id")
            or by_uri.get(sh.row_get(row, "uri"), "")
        )
        linked = _older_link(ctx, row, meant) if meant in ctx.support else None
        out.append(linked if linked is not None else row)
        if linked is not None:
            moved.append(f"{sh.row_get(row, 'label')} -> {sh.row_get(linked, 'uri')}")
            meant_ids.add(meant)
    if not moved:
        return "no rendered link to a support chunk whose older version the gold corpus holds"
    new = sh.with_rows(value, out, ("citations", "sources", "links", "items"))
    return Edited(new, "links " + ", ".join(moved), ctx.claims_citing(meant_ids))
