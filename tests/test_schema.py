"""The trace schema is one public module both halves read: citeline.instrumentation.schema.

The decorators write its keys, the analyzer's Python names them through it and the SQL in
queries/ spells them as JSON paths; these tests keep the three in step.
"""

from __future__ import annotations

import ast
import re
import sys
from enum import StrEnum
from pathlib import Path

import pytest

from citeline.instrumentation import schema

ROOT = Path(__file__).resolve().parents[1]
SCHEMA_FILE = ROOT / "instrumentation" / "schema.py"

#: every key constant of the schema, by name: the upper-case string constants that look like a key
KEYS = {n: v for n, v in vars(schema).items() if n.isupper() and isinstance(v, str) and "." in v}
CITELINE_KEYS = {n: v for n, v in KEYS.items() if v.startswith("citeline.")}

#: keys the decorators record that the analyzer does not read (yet), and why; a key added to the
#: schema is read by the analyzer or named here, and one the analyzer starts to read leaves the list
RECORDED_NOT_READ = {
    "citeline.chunks.count": "a check on the parallel arrays for people reading the span; their length says it",
    "citeline.chunks.score": "retrieval scores are shown in Phoenix; no bucket depends on a score",
    "citeline.context.candidates": "how a prompt was read (display and debugging)",
    "citeline.context.chunks_from": "how a prompt was read (display and debugging)",
    "citeline.generation.context.doc_id": "the label map joins on chunk ids; the doc id is for people",
    "citeline.generation.evidence.quote_hash": "record_content=False stand-in for quotes the analyzer cannot judge",
    "citeline.input.content_hash": "record_content=False stand-in for a stage input, for people",
    "citeline.input.length": "record_content=False stand-in for a stage input, for people",
    "citeline.perturbation.detail": "display only; perturbed traces stay in the harness",
    "citeline.request.principal.id": "who asked, for people and Phoenix (user.id); access is checked by groups",
    "citeline.request.service": "which service answered, for people filtering traces",
    "citeline.render.doc_id": "render rows join by chunk id, or by uri through the gold corpus",
    "citeline.render.version": "render rows join by chunk id, or by uri through the gold corpus",
    "citeline.resolution.doc_id": "resolution rows join by chunk id",
}


def sql_keys() -> set[str]:
    """Every citeline.* key the SQL spells: 'citeline.x' in a query, "citeline.x" inside a JSON literal."""
    found: set[str] = set()
    for path in (ROOT / "queries").glob("*.sql"):
        found |= set(re.findall(r"""['"](citeline\.[a-z0-9_.]+)['"]""", path.read_text(encoding="utf-8")))
    return found


def python_modules(folder: str) -> list[Path]:
    return sorted((ROOT / folder).rglob("*.py"))


def schema_names_used(folder: str) -> set[str]:
    """Schema constants a package's modules name: ``schema.X`` / ``K.X`` or ``from ...schema import X``."""
    used: set[str] = set()
    for path in python_modules(folder):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").endswith("schema"):
                used |= {a.name for a in node.names}
            elif (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in ("K", "schema")
            ):
                used.add(node.attr)
    return used & set(KEYS)


def inline_keys(folder: str) -> list[str]:
    """String (or bytes) literals outside schema.py that spell a key of the schema."""
    values = set(KEYS.values())
    out = []
    for path in python_modules(folder):
        if path == SCHEMA_FILE:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str | bytes):
                text = node.value.decode("utf-8", "replace") if isinstance(node.value, bytes) else node.value
                if text in values:
                    out.append(f"{path.relative_to(ROOT)}:{node.lineno}: {text}")
    return out


def test_every_key_the_sql_reads_is_declared_in_the_schema() -> None:
    read = sql_keys()
    assert sorted(read - set(CITELINE_KEYS.values())) == []
    assert {"citeline.stage", "citeline.chunks.chunk_id", "citeline.feedback"} <= read  # the pattern finds keys


def test_every_declared_key_is_read_by_the_analyzer_or_named_as_recorded_only() -> None:
    read = sql_keys() | {CITELINE_KEYS[n] for n in schema_names_used("analyzer") if n in CITELINE_KEYS}
    assert sorted(set(CITELINE_KEYS.values()) - read) == sorted(RECORDED_NOT_READ)


def test_no_module_but_the_schema_spells_a_key() -> None:
    """The analyzer and the instrumentation name a key through the schema, never as a literal."""
    assert inline_keys("analyzer") + inline_keys("instrumentation") == []


def test_the_inline_key_check_can_fail(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "analyzer").mkdir()
    (tmp_path / "analyzer" / "bad.py").write_text('KEY = "citeline.chunks.chunk_id"\n')
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    assert inline_keys("analyzer") == ["analyzer/bad.py:1: citeline.chunks.chunk_id"]


def test_every_key_is_a_documented_final_constant_with_its_own_value() -> None:
    tree = ast.parse(SCHEMA_FILE.read_text(encoding="utf-8"))
    documented = set()
    for node, after in zip(tree.body, tree.body[1:], strict=False):
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            is_final = "Final" in ast.unparse(node.annotation)
            has_doc = isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)
            if is_final and has_doc:
                documented.add(node.target.id)
    assert sorted(set(KEYS) - documented) == []
    assert len(set(KEYS.values())) == len(KEYS)  # no two names for one key


def test_enumerated_values_are_str_enums_and_every_stage_has_a_kind() -> None:
    for enum in (schema.Stage, schema.OpenInferenceSpanKind, schema.MimeType, schema.AnswerFormat, schema.ChunksFrom):
        assert issubclass(enum, StrEnum)
    assert set(schema.STAGE_KIND) == set(schema.Stage)
    assert [s.value for s in schema.Stage] == ["request", "retrieval", "context", "generation", "resolution", "render"]
