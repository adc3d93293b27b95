"""Read which chunks reached the model from a rendered prompt.

Most context steps return the prompt itself (a string, a LangChain
``ChatPromptValue`` or message list, LlamaIndex ``ChatMessage`` objects), not
chunk objects. Then the chunks handed to the step (or, failing those, the
request's last retrieval) are looked up in the prompt text: a chunk whose
text occurs in the prompt reached the model; its label is the one written
just before it (``[2]``, ``Source 2:``, ``2.``: the grammar of ``labels``, the
one the analyzer reads answers with), else its 1-based position among the
chunks found. Frameworks are recognised by shape; none is imported.

A supported, public module of ``citeline.instrumentation``: the analyzer reads the context of
OpenInference-only traces off their LLM prompts with :func:`chunks_in_prompt`, the rule the
context decorator records with, so a prompt means the same chunks whichever side read it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .chunks import Columns, chunk_items, is_chunk_shaped, to_columns
from .labels import label_before

#: a chunk longer than this counts as present when its first this-many characters are
PREFIX_CHARS = 200
#: how far before a chunk's text a label is looked for (characters, whitespace collapsed)
LABEL_WINDOW = 80


def _norm(text: str) -> str:
    return " ".join(text.split())


def message_text(msg: Any) -> str | None:
    """The text of one chat message (LangChain, LlamaIndex, OpenAI-style dict), or None."""
    if isinstance(msg, Mapping):
        if "role" not in msg or "content" not in msg or "doc_id" in msg or "chunk_id" in msg:
            return None
        content = msg["content"]
    else:
        if not (hasattr(msg, "role") or hasattr(msg, "type")) or not hasattr(msg, "content"):
            return None
        if is_chunk_shaped(msg):  # a document with a `type` field is still a document
            return None
        content = msg.content
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):  # content blocks: strings or {"type": "text", "text": ...}
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, Mapping) and isinstance(block.get("text"), str):
                parts.append(block["text"])
            elif isinstance(getattr(block, "text", None), str):
                parts.append(block.text)
        return "\n".join(parts)
    return str(content)


def prompt_text(value: Any) -> str | None:
    """The rendered prompt a context step returned, or None when it is not a prompt."""
    if isinstance(value, str):
        return value
    if isinstance(value, list | tuple):
        texts = []
        for m in value:  # a list of chunks stops at its first item (this runs on every context call)
            text = message_text(m)
            if text is None:
                return None
            texts.append(text)
        return "\n".join(t for t in texts if t) if texts else None
    messages = getattr(value, "messages", None)  # ChatPromptValue
    if isinstance(messages, list | tuple) and messages:
        return prompt_text(messages)
    to_string = getattr(value, "to_string", None)  # StringPromptValue / ChatPromptValue
    if callable(to_string) and not hasattr(value, "page_content"):
        text = to_string()
        return text if isinstance(text, str) else None
    return message_text(value)  # a single message


def chunks_in_arguments(args: Sequence[Any], kwargs: Mapping[str, Any]) -> Columns | None:
    """Every chunk handed to the step (positional or keyword, or inside a dict/wrapper)."""
    found: list[Any] = []
    for value in (*args, *kwargs.values()):
        if isinstance(value, str | bytes) or value is None:
            continue
        try:
            items = chunk_items(value)
        except TypeError:
            continue
        if items and all(is_chunk_shaped(i) for i in items):
            found.extend(items)
    if not found:
        return None
    return to_columns(found)


def chunks_in_prompt(prompt: str, candidates: Columns) -> Columns:
    """The candidates whose text occurs in ``prompt``, in prompt order, each with its label."""
    text = _norm(prompt)
    hits: list[tuple[int, int, int]] = []  # (position, end, candidate index)
    seen: set[str] = set()
    # chunks with the same text (a document in two versions) take its occurrences in turn
    after: dict[str, int] = {}
    for i, chunk_text in enumerate(candidates.text):
        key = _norm(chunk_text)
        if not key or candidates.chunk_id[i] in seen:
            continue
        start = after.get(key, 0)
        pos = text.find(key, start)
        end = pos + len(key)
        if pos < 0 and len(key) > PREFIX_CHARS:
            pos = text.find(key[:PREFIX_CHARS], start)
            end = pos + PREFIX_CHARS
        if pos >= 0:
            hits.append((pos, end, i))
            seen.add(candidates.chunk_id[i])
            after[key] = pos + 1
    hits.sort()
    labels: list[str | None] = []
    prev_end = 0
    for n, (pos, end, _i) in enumerate(hits, start=1):
        window = text[max(prev_end, pos - LABEL_WINDOW) : pos]
        labels.append(label_before(window) or str(n))
        prev_end = end
    order = [i for _pos, _end, i in hits]
    return Columns(
        doc_id=[candidates.doc_id[i] for i in order],
        chunk_id=[candidates.chunk_id[i] for i in order],
        version=[candidates.version[i] for i in order],
        content_hash=[candidates.content_hash[i] for i in order],
        score=[candidates.score[i] for i in order],
        uri=[candidates.uri[i] for i in order],
        title=[candidates.title[i] for i in order],
        text=[candidates.text[i] for i in order],
        label=labels,
    )
