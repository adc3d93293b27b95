"""The generation span shows what the model was given, as OpenInference ``input.value`` (what Phoenix
displays as the span's Input), within ``record_content``.

Before: a generation decorated as a method recorded nothing (its first argument is ``self``), and one
handed the context's chunks rather than a prompt recorded nothing either, so the span where grounding,
uncited and attribution land showed an empty Input in Phoenix.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from citeline.instrumentation import context_assembly, generation, request, retrieval
from citeline.instrumentation.testing import capture

CHUNKS = [
    {"chunk_id": "c1", "doc_id": "d", "version": "v1", "text": "Refunds take 5 days."},
    {"chunk_id": "c2", "doc_id": "d", "version": "v1", "text": "Shipping is free over $50."},
]


@dataclass
class Prompt:
    text: str


class Bot:
    @generation
    def answer(self, prompt: Prompt, script: str) -> str:
        return script


@retrieval
def _search(q: str) -> list[dict[str, Any]]:
    return CHUNKS


@context_assembly
def _assemble(q: str, hits: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return hits


@generation
def _from_chunks(chunks: list[dict[str, Any]]) -> str:
    return "Refunds take 5 days [1]."


def _generation_attrs(content: bool, app: Any) -> dict[str, Any]:
    with capture(record_content=content) as cap, request(question="How long do refunds take?"):
        app()
    [span] = [s for s in cap.spans() if (s.attributes or {}).get("citeline.stage") == "generation"]
    return dict(span.attributes or {})


@pytest.mark.parametrize("content", [True, False], ids=["content-on", "content-off"])
def test_a_method_records_its_prompt_not_self(content: bool) -> None:
    prompt = Prompt("Answer with citations.\n[1] Refunds take 5 days.\nQuestion: How long?")
    attrs = _generation_attrs(content, lambda: Bot().answer(prompt, "Refunds take 5 days [1]."))
    if content:
        assert (attrs["input.value"], attrs["input.mime_type"]) == (prompt.text, "text/plain")
    else:
        assert "input.value" not in attrs
        assert attrs["citeline.input.length"] == len(prompt.text)


@pytest.mark.parametrize("content", [True, False], ids=["content-on", "content-off"])
def test_a_generation_handed_chunks_records_the_labelled_context(content: bool) -> None:
    attrs = _generation_attrs(content, lambda: _from_chunks(_assemble("q", _search("q"))))
    if content:
        assert attrs["input.value"] == "[1] c1: Refunds take 5 days.\n[2] c2: Shipping is free over $50."
        assert attrs["input.mime_type"] == "text/plain"
    else:  # no content: the chunk ids and labels stay in citeline.generation.context.*
        assert "input.value" not in attrs and "citeline.input.length" not in attrs
    assert list(attrs["citeline.generation.context.label"]) == ["1", "2"]
