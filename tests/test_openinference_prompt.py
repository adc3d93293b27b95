"""Reading which documents reached the model, and under which label, off an LLM call's prompt (zero-code traces)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from citeline.analyzer.sources.openinference import Doc, GoldIndex
from citeline.analyzer.sources.prompt_context import context_from_prompt

WORDS = st.sampled_from(
    "refund window opened device warranty shipping order label policy store receipt days within covers "
    "returned accessories staff price match section".split()
)
TEXT = st.lists(WORDS, min_size=6, max_size=14).map(lambda ws: " ".join(ws).capitalize() + ".")


@st.composite
def prompts(draw: st.DrawFn) -> tuple[str, list[Doc], list[tuple[str, str]]]:
    texts = draw(st.lists(TEXT, min_size=1, max_size=6, unique=True))
    docs = [Doc(f"doc-{i}", t) for i, t in enumerate(texts)]
    shown = draw(st.permutations(docs))[: draw(st.integers(1, len(docs)))]
    style = draw(st.sampled_from(["[{n}] {t}", "Source {n}:\n{t}", "uri: x\n\nSource {n}:\n{t}"]))
    body = "\n\n".join(style.format(n=n, t=d.text) for n, d in enumerate(shown, start=1))
    prompt = f"Answer from the sources below and cite them.\n------\n{body}\n------\nQuery: what?"
    return prompt, docs, [(d.chunk_id, str(n)) for n, d in enumerate(shown, start=1)]


@settings(max_examples=200, deadline=None)
@given(prompts())
def test_every_document_in_the_prompt_is_found_with_its_label_and_no_other(
    case: tuple[str, list[Doc], list[tuple[str, str]]],
) -> None:
    prompt, docs, expected = case
    ids, labels = context_from_prompt(prompt, docs)
    assert list(zip(ids, labels, strict=True)) == expected


@settings(max_examples=100, deadline=None)
@given(st.lists(TEXT, min_size=2, max_size=5, unique=True), st.integers(2, 4))
def test_a_document_cut_into_labelled_pieces_is_read_as_that_document(texts: list[str], pieces: int) -> None:
    # LlamaIndex's CitationQueryEngine: each node cut into pieces, each piece under a "Source n:" of its own
    docs = [Doc(f"doc-{i}", " ".join([t] * 3)) for i, t in enumerate(texts)]
    blocks, expected, n = [], [], 0
    for d in docs:
        words = d.text.split()
        step = -(-len(words) // pieces)
        for k in range(0, len(words), step):
            n += 1
            blocks.append(f"Source {n}:\n{' '.join(words[k : k + step])}")
            expected.append((d.chunk_id, str(n)))
    ids, labels = context_from_prompt("\n\n".join(blocks), docs)
    got = dict(zip(labels, ids, strict=True))
    # every piece long enough to be matched (24 characters) names the document it was cut from
    for chunk_id, label in expected:
        piece = blocks[int(label) - 1].split("\n", 1)[1]
        if len(piece) >= 24:
            assert got.get(label) == chunk_id, (label, piece)


def test_two_documents_with_one_text_take_its_occurrences_in_turn() -> None:
    same = "Standard shipping takes 3 to 5 business days and costs $4.99."
    docs = [Doc("shipping-v1#standard-1", same), Doc("shipping-v2#standard-1", same)]
    prompt = f"[1] {same}\n[2] Orders over $50 ship free.\n[3] {same}"
    assert context_from_prompt(prompt, docs) == (["shipping-v1#standard-1", "shipping-v2#standard-1"], ["1", "3"])


def test_documents_join_gold_chunks_by_id_metadata_uri_hash_then_containment() -> None:
    gold = GoldIndex(
        [
            ("a#1", "Refunds are issued within 5 business days of receiving the item.", "https://kb/a#1", ""),
            ("b#1", "Orders over $50 ship free within the continental US.", "https://kb/b#1", ""),
            ("v1", "Same text in two versions.", "https://kb/v1", ""),
            ("v2", "Same text in two versions.", "https://kb/v2", ""),
        ]
    )
    assert gold.join("a#1", "", {}) == ("a#1", "id")
    assert gold.join("uuid-1", "", {"chunk_id": "b#1"}) == ("b#1", "metadata id")
    assert gold.join("uuid-2", "Same text in two versions.", {"uri": "https://kb/v2"}) == ("v2", "metadata uri")
    # the same text under two gold ids: content alone cannot tell them apart
    assert gold.join("uuid-3", "Same text in two versions.", {}) == (None, "no match")
    assert gold.join("uuid-4", "Refunds are issued within 5 business days", {}) == ("a#1", "containment")
    assert gold.join("uuid-5", "ship free", {}) == (None, "no match")  # too short to be a piece
