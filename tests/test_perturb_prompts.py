"""Perturbations of a context step that returns what the model reads: a prompt, chat messages, a wrapper.

The edit must change the text the model reads and read back, through the decorator's own prompt reader,
as exactly the chunks intended; chat messages keep exactly their keys (a strict endpoint rejects unknown
ones); a wrapper holding messages and documents is edited in both views or refused by name.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from citeline.analyzer.gold.goldset import load_gold
from citeline.analyzer.testing import prompts
from citeline.analyzer.testing.edits import CaseContext
from citeline.analyzer.testing.perturb_judge import Cell, _bucket_cell
from citeline.analyzer.testing.perturbations import BY_NAME
from citeline.analyzer.testing.shapes import CannotEdit
from citeline.instrumentation.chunks import to_columns
from citeline.instrumentation.prompt import chunks_in_prompt, prompt_text
from citeline.instrumentation.testing import RequestView

CHUNKS = [
    {"chunk_id": "a#1", "doc_id": "a", "version": "v1", "text": "Returns are accepted within 30 days."},
    {"chunk_id": "b#1", "doc_id": "b", "version": "v1", "text": "Shipping is free above 50 dollars."},
    {"chunk_id": "c#1", "doc_id": "c", "version": "v1", "text": "Gift cards cannot be refunded."},
]


def _messages() -> list[dict[str, Any]]:
    sources = "\n".join(f"[{n}] ({c['doc_id']}) {c['text']}" for n, c in enumerate(CHUNKS, start=1))
    return [
        {"role": "system", "content": "Answer only from the sources; cite them as [n]."},
        {"role": "user", "content": f"Sources:\n{sources}\n\nQuestion: how long do I have to return?"},
    ]


def _read(value: Any) -> tuple[list[str], list[str | None]]:
    text = prompt_text(value)
    assert text is not None
    got = chunks_in_prompt(text, to_columns(CHUNKS))
    return got.chunk_id, got.label


def test_dropping_a_passage_from_chat_messages_changes_only_their_text() -> None:
    msgs = _messages()
    new, dropped = prompts.drop(msgs, to_columns(CHUNKS), {"b#1"})
    assert dropped == ["b#1"]
    assert [set(m) for m in new] == [{"role", "content"}, {"role", "content"}]
    assert new[1]["content"] == (
        "Sources:\n[1] (a) Returns are accepted within 30 days.\n[3] (c) Gift cards cannot be refunded.\n\n"
        "Question: how long do I have to return?"
    )
    assert _read(new) == (["a#1", "c#1"], ["1", "3"])
    assert msgs == _messages()  # the app's own list is untouched


def test_reversing_and_relabelling_passages_in_place() -> None:
    new, n = prompts.reverse_relabel(_messages(), to_columns(CHUNKS), 11)
    assert n == 3
    assert [set(m) for m in new] == [{"role", "content"}, {"role", "content"}]
    assert _read(new) == (["c#1", "b#1", "a#1"], ["11", "12", "13"])
    assert "[11] (c) Gift cards cannot be refunded.\n[12] (b)" in new[1]["content"]


def test_passages_with_their_label_on_the_line_before() -> None:
    text = (
        "Use these.\nSource 1:\nReturns are accepted within 30 days.\nSource 2:\nShipping is free above 50 dollars.\n"
    )
    new, dropped = prompts.drop(text, to_columns(CHUNKS[:2]), {"a#1"})
    assert (new, dropped) == ("Use these.\nSource 2:\nShipping is free above 50 dollars.\n", ["a#1"])


@dataclasses.dataclass
class Prompt:
    """An app's own wrapper: the model reads .messages, the app keeps .documents (two views)."""

    messages: list[dict[str, Any]]
    documents: list[dict[str, Any]]


def _ctx(tmp_path: Path, claims: list[dict[str, Any]]) -> CaseContext:
    corpus = [{**c, "title": c["doc_id"], "uri": f"kb://{c['doc_id']}", "status": "active"} for c in CHUNKS]
    path = tmp_path / "gold.json"
    path.write_text(json.dumps({"corpus": corpus, "cases": [{"case_id": "q", "question": "?", "claims": claims}]}))
    gold = load_gold(path)
    return CaseContext.of(gold, gold.cases["q"])


TWO_CLAIMS = [
    {"claim_id": "window", "text": "Returns within 30 days.", "facts": ["30 days"], "support": [["a#1"]]},
    {"claim_id": "shipping", "text": "Free above 50 dollars.", "facts": ["50 dollars"], "support": [["b#1"]]},
]


def test_a_wrapper_with_two_views_is_edited_in_both(tmp_path: Path) -> None:
    ctx = _ctx(tmp_path, TWO_CLAIMS[:1])
    change = BY_NAME["context.drop_support"].prepare(ctx)
    assert not isinstance(change, str)
    view = RequestView(candidates=to_columns(CHUNKS))
    out = change.apply(Prompt(_messages(), list(CHUNKS)), view)
    assert out is not None
    new, detail = out
    assert detail == "removed the passage(s) of a#1 from the prompt"
    assert [d["chunk_id"] for d in new.documents] == ["b#1", "c#1"]
    assert _read(new) == (["b#1", "c#1"], ["2", "3"])
    assert change.claims == ["window"]


def test_a_wrapper_whose_messages_cannot_be_edited_is_refused_by_name(tmp_path: Path) -> None:
    ctx = _ctx(tmp_path, TWO_CLAIMS[:1])
    change = BY_NAME["context.drop_support"].prepare(ctx)
    assert not isinstance(change, str)
    blocks = [{"role": "user", "content": [{"type": "text", "text": m["content"]}]} for m in _messages()]
    assert change.apply(Prompt(blocks, list(CHUNKS)), RequestView(candidates=to_columns(CHUNKS))) is None
    assert change.skipped is not None
    assert change.skipped.startswith("cannot edit this shape (two views): a Prompt holds rendered messages")
    assert "to_chunks=" in change.skipped


def test_a_prompt_with_nothing_to_look_for_says_so(tmp_path: Path) -> None:
    ctx = _ctx(tmp_path, TWO_CLAIMS[:1])
    change = BY_NAME["context.truncate"].prepare(ctx)
    assert not isinstance(change, str)
    assert change.apply(_messages(), RequestView()) is None
    assert change.skipped == (
        "the context step returned a prompt, and no chunks were passed to it or retrieved before it: "
        "nothing to find in the prompt"
    )


_TEXT = st.text(alphabet="abcdefghij klmnop", min_size=8, max_size=40).filter(lambda t: len(t.split()) >= 2)


@settings(max_examples=150, deadline=None)
@given(
    texts=st.lists(_TEXT, min_size=1, max_size=6, unique_by=lambda t: " ".join(t.split())),
    data=st.data(),
    style=st.sampled_from(["[{n}] {t}", "Source {n}: {t}", "{n}. {t}", "[{n}]\n{t}"]),
)
def test_a_dropped_passage_reads_back_gone_and_the_rest_unchanged(texts: list[str], data: Any, style: str) -> None:
    words = [" ".join(t.split()) for t in texts]
    if any(a != b and a in b for a in words for b in words):
        return  # one passage inside another cannot be told apart in any reader
    chunks = [{"chunk_id": f"c{n}", "doc_id": f"d{n}", "version": "v1", "text": t} for n, t in enumerate(texts)]
    cols = to_columns(chunks)
    body = "\n".join(style.format(n=n, t=t) for n, t in enumerate(texts, start=1))
    prompt = f"Answer from these sources.\n{body}\nQuestion: what?"
    before = chunks_in_prompt(prompt, cols)
    drop = set(data.draw(st.lists(st.sampled_from([c["chunk_id"] for c in chunks]), unique=True)))
    try:
        new, dropped = prompts.drop(prompt, cols, drop)
    except CannotEdit:
        return  # refused by name is allowed; a wrong edit is not
    after = chunks_in_prompt(new, cols)
    assert sorted(dropped) == sorted(drop & set(before.chunk_id))
    kept = [(c, lab) for c, lab in zip(before.chunk_id, before.label, strict=True) if c not in drop]
    assert list(zip(after.chunk_id, after.label, strict=True)) == kept


def _row(claim: str, bucket: str, flags: list[str], stage: str = "", span: str = "") -> dict[str, Any]:
    return {
        "gold_claim_id": claim,
        "claim_text": claim,
        "bucket": bucket,
        "stage": stage,
        "span_id": span,
        "flags": flags,
        "reason": f"{bucket} reason",
        "cited_chunks": [],
        "abstained": False,
    }


@pytest.mark.parametrize(
    ("sibling", "status"),
    [("ok", "holds"), ("grounding", "differs")],
)
def test_a_cell_holds_on_the_claims_it_touched_while_the_others_keep_their_bucket(sibling: str, status: str) -> None:
    expect = BY_NAME["generation.change_number"].expect
    cell = Cell("q", "generation.change_number", "generation", str(expect), "n/a", spans=["s5"], claims=["window"])
    base = {"window": _row("window", "ok", []), "shipping": _row("shipping", "ok", [])}
    got = [
        _row("window", "grounding", ["grounding"], "generation", "s5"),
        _row("shipping", sibling, [sibling] if sibling != "ok" else []),
    ]
    _bucket_cell(cell, expect, base, got)
    assert cell.status == status
    if status == "differs":
        assert cell.note == ("shipping: grounding: not touched by the perturbation, but was ok (grounding reason)")
    assert cell.got == "window: grounding at generation (span s5)"
