"""Configuration is read in one place: every environment variable citeline reads is declared in
citeline.instrumentation.settings, read only through it, and listed in docs/design.md."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest

from citeline.instrumentation import settings
from citeline.instrumentation.settings import VARIABLES, Variable

ROOT = Path(__file__).resolve().parents[1]
SETTINGS_FILE = ROOT / "instrumentation" / "settings.py"
#: what reads or changes the process environment
ENVIRON = {"environ", "environb", "getenv", "getenvb", "putenv", "unsetenv"}


def environment_reads(folders: tuple[str, ...] = ("analyzer", "instrumentation")) -> list[str]:
    """Every place outside settings.py that touches os.environ / getenv, or spells a declared variable's name."""
    names = {v.name for v in VARIABLES}
    found: list[tuple[str, int]] = []
    for folder in folders:
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path == SETTINGS_FILE:
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                hit = (
                    (isinstance(node, ast.Attribute) and node.attr in ENVIRON)
                    or (isinstance(node, ast.Name) and node.id in ENVIRON)
                    or (isinstance(node, ast.ImportFrom) and any(a.name in ENVIRON for a in node.names))
                    or (isinstance(node, ast.Constant) and node.value in names)
                )
                if hit:
                    found.append((str(path.relative_to(ROOT)), getattr(node, "lineno", 0)))
    return [f"{p}:{n}" for p, n in sorted(set(found))]


def test_no_module_but_settings_reads_the_environment() -> None:
    assert environment_reads() == []


def test_the_environment_check_can_fail(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "analyzer").mkdir()
    (tmp_path / "analyzer" / "a.py").write_text(
        "import os\nfrom os import getenv\n"
        "a = os.environ.get('X')\nb = getenv('Y')\nc = {**os.environ}\nd = 'OPENAI_API_KEY'\n"
    )
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    assert environment_reads(("analyzer",)) == [f"analyzer/a.py:{n}" for n in (2, 3, 4, 5, 6)]


def test_every_variable_is_declared_once_and_listed_in_the_docs_table() -> None:
    assert len({v.name for v in VARIABLES}) == len(VARIABLES)
    declared = [v for v in vars(settings).values() if isinstance(v, Variable)]
    assert sorted(v.name for v in declared) == sorted(v.name for v in VARIABLES)
    doc = (ROOT / "docs" / "design.md").read_text(encoding="utf-8")
    section = doc.split("## Environment variables", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `([A-Z_]+)` \| ([^|]+) \| (.+) \| ([^|]+) \|$", section, re.MULTILINE)
    assert [(name, read_by.strip()) for name, read_by, _, _ in rows] == [(v.name, v.read_by) for v in VARIABLES]
    for (_, _, meaning, default), v in zip(rows, VARIABLES, strict=True):
        assert meaning.startswith(v.meaning)
        assert default.strip() == (f"`{v.default}`" if v.default is not None else "-")


def test_a_variable_is_read_when_used_and_empty_is_unset(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    assert settings.OPENAI_BASE_URL.get() == "https://api.openai.com/v1"
    monkeypatch.setenv("OPENAI_BASE_URL", "")
    assert settings.OPENAI_BASE_URL.get() == "https://api.openai.com/v1"
    monkeypatch.setenv("OPENAI_BASE_URL", "http://localhost:8000/v1")
    assert settings.OPENAI_BASE_URL.get() == "http://localhost:8000/v1"
    monkeypatch.setenv("OTEL_SERVICE_NAME", "")
    assert settings.SERVICE_NAME.get() is None
    monkeypatch.setenv("OTEL_SERVICE_NAME", "policy-bot")
    assert settings.SERVICE_NAME.get() == "policy-bot"


def test_the_secrets_are_the_keys() -> None:
    assert sorted(v.name for v in VARIABLES if v.secret) == [
        "OPENAI_API_KEY",
        "OTEL_EXPORTER_OTLP_HEADERS",
        "OTEL_EXPORTER_OTLP_LOGS_HEADERS",
        "PHOENIX_API_KEY",
    ]
