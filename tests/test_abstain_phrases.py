"""Abstention phrases: listed in the docs, and settable from the gold file and the command line."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from citeline.analyzer.cli.main import main
from citeline.analyzer.run.analyze import DEFAULT_ABSTAIN_PHRASES
from citeline.instrumentation import context_assembly, generation, request, retrieval
from tests.conftest import make_tracing

ROOT = Path(__file__).resolve().parents[1]
GOLD = """
corpus:
  - {chunk_id: "p#1", doc_id: p, version: v1, text: "Orders over $50 ship free."}
cases:
  - case_id: perk
    question: Do employees get a discount?
    expect: abstain
"""


@retrieval
def _search(q: str) -> list[dict[str, Any]]:
    return [{"chunk_id": "p#1", "doc_id": "p", "version": "v1", "text": "Orders over $50 ship free."}]


@context_assembly
def _assemble(q: str, hits: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return hits


@generation
def _answer(ctx: Any) -> str:
    return "That lies outside my knowledge base, sorry."


def test_the_docs_list_every_default_phrase() -> None:
    text = " ".join((ROOT / "docs" / "analyzer.md").read_text().split())
    listed = re.findall(r'"([^"]+)"', text[text.index("The phrases (") : text.index("Add your own")])
    assert listed == list(DEFAULT_ABSTAIN_PHRASES)


@pytest.mark.slow
@pytest.mark.parametrize("where", ["none", "gold", "cli"])
def test_a_phrase_of_ones_own_from_the_gold_file_or_the_cli(
    tmp_path: Path, where: str, capsys: pytest.CaptureFixture[str]
) -> None:
    t = make_tracing(tmp_path)
    try:
        with request(question="Do employees get a discount?", case_id="perk", principal={"id": "u", "groups": []}):
            _answer(_assemble("q", _search("q")))
    finally:
        t.handle.shutdown()
    gold = tmp_path / "gold.yaml"
    gold.write_text(GOLD + ('abstain_phrases: ["outside my knowledge"]\n' if where == "gold" else ""))
    extra = ["--abstain-phrase", "outside my knowledge"] if where == "cli" else []
    args = ["analyze", "--traces", str(t.trace_dir), "--gold", str(gold), "--db", str(tmp_path / "s.duckdb")]
    assert main([*args, "--format", "json", *extra]) == 0
    [claim] = [c for c in json.loads(capsys.readouterr().out)["claims"] if c["gold_claim_id"] == "(abstain)"]
    assert claim["bucket"] == ("grounding" if where == "none" else "ok"), claim["reason"]
