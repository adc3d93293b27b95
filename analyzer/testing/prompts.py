"""Edit a rendered prompt the way a perturbation edits a chunk list, and prove the edit reads back.

A context step often returns what the model reads, not chunks: a prompt
string, chat messages (OpenAI dicts, LangChain messages), a ``ChatPromptValue``
or an app's own wrapper holding messages (and sometimes the documents too).
The decorator then records the chunks it finds in the prompt text
(``citeline.instrumentation.prompt``). A perturbation of such a step must
change the *text the model reads*: this module finds each chunk's passage in
the messages (its label line included), removes or reorders those passages in
place, and reads the edited prompt back with the decorator's own reader. An
edit that does not read back as intended raises :class:`CannotEdit`, so a cell
never records a context the model did not see. Messages keep their own keys:
only their text content changes.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from citeline.analyzer.testing.shapes import CannotEdit, set_attr
from citeline.instrumentation.chunks import Columns
from citeline.instrumentation.labels import label_before
from citeline.instrumentation.prompt import LABEL_WINDOW, chunks_in_prompt, message_text, prompt_text


@dataclass(frozen=True)
class Passage:
    """Where one chunk stands in one message: ``start`` (its label line) to ``end`` (its text's end)."""

    chunk_id: str
    message: int
    start: int
    text_start: int
    end: int


@dataclass
class Rendered:
    """The texts of a prompt's messages and how to put edited texts back into the value."""

    texts: list[str]
    write: Callable[[list[str]], Any]


def is_prompt(value: Any) -> bool:
    """Whether the decorator reads ``value`` as a rendered prompt (not as a chunk list)."""
    return prompt_text(value) is not None


def _with_content(message: Any, text: str) -> Any:
    if isinstance(message, Mapping):
        if not isinstance(message.get("content"), str):
            raise CannotEdit("a chat message holds content blocks, not text: cannot edit its passages")
        return {**message, "content": text}
    if not isinstance(getattr(message, "content", None), str):
        raise CannotEdit(f"a {type(message).__name__} holds content blocks, not text: cannot edit its passages")
    return set_attr(message, "content", text)


def _messages_of(messages: Sequence[Any], rebuild: Callable[[list[Any]], Any]) -> Rendered:
    texts = [message_text(m) or "" for m in messages]

    def write(new: list[str]) -> Any:
        out = [m if t == old else _with_content(m, t) for m, t, old in zip(messages, new, texts, strict=True)]
        return rebuild(out)

    return Rendered(texts, write)


def rendered(value: Any) -> Rendered:
    """The message texts of a prompt value and a writer for them; CannotEdit for a shape we cannot write."""
    if isinstance(value, str):
        return Rendered([value], lambda new: new[0])
    if isinstance(value, list | tuple):
        kind = type(value)
        return _messages_of(list(value), lambda out: kind(out) if kind is not list else out)
    messages = value.get("messages") if isinstance(value, Mapping) else getattr(value, "messages", None)
    if isinstance(messages, list | tuple) and messages:
        kind = type(messages)

        def rebuild(out: list[Any]) -> Any:
            new = kind(out) if kind is not list else out
            return {**value, "messages": new} if isinstance(value, Mapping) else set_attr(value, "messages", new)

        return _messages_of(list(messages), rebuild)
    text = getattr(value, "text", None)
    if isinstance(text, str) and callable(getattr(value, "to_string", None)):  # StringPromptValue
        return Rendered([text], lambda new: set_attr(value, "text", new[0]))
    if message_text(value) is not None:  # a single message
        return _messages_of([value], lambda out: out[0])
    raise CannotEdit(f"cannot find the rendered text of a {type(value).__name__}")


def _pattern(text: str) -> re.Pattern[str] | None:
    words = text.split()
    return re.compile(r"\s+".join(re.escape(w) for w in words)) if words else None


def passages(texts: Sequence[str], chunks: Columns) -> list[Passage]:
    """Each chunk's passage in the messages, in prompt order; a chunk whose whole text is not there is left out."""
    found: list[tuple[int, int, int, str]] = []  # (message, text start, end, chunk id)
    taken: set[tuple[int, int]] = set()
    for cid, text in zip(chunks.chunk_id, chunks.text, strict=True):
        pattern = _pattern(text)
        if pattern is None:
            continue
        for n, message in enumerate(texts):
            hit = next((m for m in pattern.finditer(message) if (n, m.start()) not in taken), None)
            if hit is not None:
                taken.add((n, hit.start()))
                found.append((n, hit.start(), hit.end(), cid))
                break
    found.sort()
    out: list[Passage] = []
    prev: tuple[int, int] = (-1, 0)
    for n, pos, end, cid in found:
        floor = prev[1] if prev[0] == n else 0
        out.append(Passage(cid, n, _label_start(texts[n], floor, pos), pos, end))
        prev = (n, end)
    return out


def _label_start(text: str, floor: int, pos: int) -> int:
    """Where the passage at ``pos`` begins: its line, or the line before when the label stands there alone."""
    line = max(text.rfind("\n", floor, pos) + 1, floor)
    if label_before(text[line:pos]) is None and line > floor:
        before = max(text.rfind("\n", floor, line - 1) + 1, floor)
        if line - before <= LABEL_WINDOW and label_before(text[before:line]) is not None:
            return before
    return line


def _cut(text: str, cuts: Sequence[Passage]) -> str:
    out, at = [], 0
    for p in sorted(cuts, key=lambda p: p.start):
        out.append(text[at : p.start])
        at = p.end
        if text.startswith("\n", at):
            at += 1
    out.append(text[at:])
    return "".join(out)


def _read_back(value: Any, candidates: Columns) -> Columns:
    text = prompt_text(value)
    if text is None:
        raise CannotEdit(f"the edited {type(value).__name__} no longer reads as a prompt")
    return chunks_in_prompt(text, candidates)


def drop(value: Any, candidates: Columns, drop_ids: set[str]) -> tuple[Any, list[str]]:
    """``value`` with the passages of ``drop_ids`` removed from its messages, and the ids removed."""
    view = rendered(value)
    found = passages(view.texts, candidates)
    cuts = [p for p in found if p.chunk_id in drop_ids]
    if not cuts:
        return value, []
    texts = [_cut(t, [p for p in cuts if p.message == n]) for n, t in enumerate(view.texts)]
    new = view.write(texts)
    kept = [p.chunk_id for p in found if p.chunk_id not in drop_ids]
    got = _read_back(new, candidates)
    if got.chunk_id != kept:
        raise CannotEdit(
            f"removed the passages of {', '.join(sorted(drop_ids & {p.chunk_id for p in cuts}))} from the prompt, "
            f"but it reads back as {got.chunk_id} instead of {kept}"
        )
    return new, [p.chunk_id for p in cuts]


def _relabelled(segment: str, text_at: int, label: str) -> str:
    """``segment`` with the label before its passage changed to ``label`` (the occurrence the reader takes)."""
    prefix = segment[:text_at]
    old = label_before(prefix)
    digits = re.findall(r"\d+", old or "")
    if not digits:
        raise CannotEdit("the prompt numbers its passages by position, not by label: cannot relabel them")
    hits = list(re.finditer(rf"(?<!\d){re.escape(digits[-1])}(?!\d)", prefix))
    for m in reversed(hits):  # "[3] Pricing (v3): ..." holds the 3 twice; the label is the one the reader reads
        edited = prefix[: m.start()] + label + prefix[m.end() :]
        if label_before(edited) == label:
            return edited + segment[text_at:]
    raise CannotEdit(f"cannot find the label {old!r} before its passage")


def reverse_relabel(value: Any, candidates: Columns, first: int) -> tuple[Any, int]:
    """``value`` with its passages in reverse order, labelled ``first``, ``first + 1``, ... in place."""
    view = rendered(value)
    found = passages(view.texts, candidates)
    if not found:
        return value, 0
    if len({p.message for p in found}) > 1:
        raise CannotEdit("the prompt's passages are spread over several messages: cannot reorder them in place")
    n = found[0].message
    text = view.texts[n]
    segments = [text[p.start : p.end] for p in found]
    order = list(reversed(range(len(found))))
    out, at = [], 0
    for slot, p in enumerate(found):
        src = found[order[slot]]
        out.append(text[at : p.start])
        out.append(_relabelled(segments[order[slot]], src.text_start - src.start, str(first + slot)))
        at = p.end
    out.append(text[at:])
    texts = list(view.texts)
    texts[n] = "".join(out)
    new = view.write(texts)
    got = _read_back(new, candidates)
    want = [p.chunk_id for p in reversed(found)]
    labels = [str(first + k) for k in range(len(found))]
    if got.chunk_id != want or got.label != labels:
        raise CannotEdit(f"reordered the prompt's passages, but it reads back as {got.chunk_id} labelled {got.label}")
    return new, len(found)
