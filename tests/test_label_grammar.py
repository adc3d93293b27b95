"""One label grammar for prompts and answers (instrumentation/labels.py): every citation style reads
back as written, a bracket reads as a citation only when it fits the label map's shape, and the prompt
reader and the answer parser agree on what a label is."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from citeline.analyzer.claims.policy import Policy
from citeline.analyzer.claims.splitter import split_claims
from citeline.instrumentation.labels import STYLES, Shape, canonical, find_markers, label_before, render

WORDS = "opened devices returns refunds policy window items store receipt within days paid fee card".split()
PREFIXED = ("brackets", "list", "range", "fullwidth", "footnote")  # the styles a letter prefix is written in


@st.composite
def answers(draw: st.DrawFn) -> tuple[str, list[tuple[str, tuple[str, ...]]], list[str]]:
    """An answer of 1-6 sentences, each citing a set of labels in one style; the claims as written and the
    label map the model was given."""
    prefix = draw(st.sampled_from(["", "", "S", "D"]))
    size = draw(st.integers(1, 40))
    label_map = [f"{prefix}{n}" for n in range(1, size + 1)]
    sentences, expected = [], []
    for _ in range(draw(st.integers(1, 6))):
        words = draw(st.lists(st.sampled_from(WORDS), min_size=3, max_size=8))
        if draw(st.booleans()):
            words.insert(draw(st.integers(1, len(words))), f"{draw(st.integers(2, 99))} days")
        style = draw(st.sampled_from(PREFIXED if prefix else STYLES))
        most = 1 if style == "caret" else 4
        numbers = draw(st.lists(st.integers(1, size), min_size=1, max_size=most, unique=True))
        labels = [f"{prefix}{n}" for n in sorted(numbers)]
        text = " ".join(words)
        text = text[0].upper() + text[1:]
        glue = "" if style == "caret" else " "
        written = render(labels, style)
        sentences.append(f"{text}{glue}{written}.")
        # a named source in prose ("... days Source 2.") is words of the sentence: it stays in the text
        expected.append((f"{text} {written}." if style == "named" else f"{text}.", tuple(labels)))
    return " ".join(sentences), expected, label_map


@given(answers())
def test_every_style_reads_back_as_it_was_written(
    case: tuple[str, list[tuple[str, tuple[str, ...]]], list[str]],
) -> None:
    answer, expected, label_map = case
    claims = split_claims(answer, Policy(attach="sentence", shape=Shape.of(label_map)))
    assert [(c.text, c.labels) for c in claims] == expected


@given(st.sampled_from(["", "S", "D"]), st.integers(1, 99), st.sampled_from(["brackets", "fullwidth", "source"]))
def test_the_prompt_reader_reads_the_label_the_answer_parser_reads(prefix: str, n: int, style: str) -> None:
    label = f"{prefix}{n}" if style != "source" else str(n)
    written = render([label], style)
    assert label_before(f"Context:\n{written} ") == label
    (marker,) = find_markers(f"Refunds take five days {written}.", Shape.of([label]))
    assert marker.labels == (label,)


@pytest.mark.parametrize(
    ("written", "labels"),
    [
        ("[2]", ["2"]),
        ("[02]", ["2"]),
        ("[2, 3]", ["2", "3"]),
        ("[2; 3]", ["2", "3"]),
        ("[1-3]", ["1", "2", "3"]),
        ("[1\u20133]", ["1", "2", "3"]),
        ("[S1-S3]", ["S1", "S2", "S3"]),
        ("[S1-3]", ["S1", "S2", "S3"]),
        ("[s2]", ["S2"]),
        ("[D4]", ["D4"]),
        ("[^2]", ["2"]),
        ("[Source 2]", ["2"]),
        ("\u30102\u3011", ["2"]),
        ("\u30104:0\u2020source\u3011", ["4"]),
        ("(Source 2)", ["2"]),
        ("(Sources 1 and 3)", ["1", "3"]),
        ("(Source 1; Source 3)", ["1", "3"]),
        ("(see Document #2)", ["2"]),
        ("days^2", ["2"]),
        ("days.^2", ["2"]),
        # prose: a year, a quantity, a range of years, mathematics, a label-less bracket
        ("[2026]", []),
        ("[1,000]", []),
        ("[2019-2021]", []),
        ("[3-1]", []),
        ("S^2", []),
        ("km^2", []),
        ("10^6", []),
        ("[sic]", []),
        ("[citation needed]", []),
        ("(Source 2, p. 4)", []),
    ],
)
def test_what_a_citation_is_before_a_map_of_eight_labels(written: str, labels: list[str]) -> None:
    shape = Shape.of([str(n) for n in range(1, 9)])
    assert [x for m in find_markers(written, shape) for x in m.labels] == labels


def test_the_shape_follows_the_map() -> None:
    """A label-shaped token outside the map is still read (invalid_citation downstream); a longer number is
    prose; labels that are no prefix + number are read only as written."""
    assert find_markers("[12]", Shape.of(["1", "2"]))[0].labels == ("12",)
    assert find_markers("[123]", Shape.of(["1", "2"])) == []
    assert find_markers("[123]", Shape.of([str(n) for n in range(1, 15)]))[0].labels == ("123",)
    assert find_markers("[2026]", Shape.of([str(n) for n in range(1, 150)]))[0].labels == ("2026",)
    assert find_markers("[doc-a] [doc-b]", Shape.of(["doc-a"]))[0].labels == ("doc-a",)
    assert len(find_markers("[doc-a] [doc-b]", Shape.of(["doc-a"]))) == 1
    assert Shape.from_key(Shape.of(["S1", "doc-a"]).key) == Shape.of(["S1", "doc-a"])
    assert [canonical(x) for x in ("^02", "Source 3", "S02", "doc-1", "doc2")] == ["2", "3", "S2", "doc-1", "doc2"]
