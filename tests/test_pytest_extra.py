"""The pytest plugin installs with ``pip install 'citeline[pytest]'``: the extra holds pytest, the plugin
imports nothing else beyond citeline's own dependencies, and the install is the one the docs show."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
#: the module each base dependency (or the extra) provides
PROVIDES = {
    "opentelemetry-api": "opentelemetry",
    "opentelemetry-sdk": "opentelemetry",
    "opentelemetry-exporter-otlp-proto-http": "opentelemetry",
    "orjson": "orjson",
    "duckdb": "duckdb",
    "polars": "polars",
    "pyarrow": "pyarrow",
    "pyyaml": "yaml",
    "rich": "rich",
    "arize-phoenix-client": "phoenix",
    "pytest": "pytest",
}


def _name(requirement: str) -> str:
    """The distribution a requirement names: ``pytest>=8`` -> ``pytest``."""
    return re.split(r"[\[<>=;~! ]", requirement, maxsplit=1)[0].lower()


def test_the_pytest_extra_holds_pytest_and_the_plugin_imports_nothing_else() -> None:
    extra = PROJECT["optional-dependencies"]["pytest"]
    assert [_name(r) for r in extra] == ["pytest"]
    installed = {PROVIDES[_name(r)] for r in [*PROJECT["dependencies"], *extra]}
    outside = set()
    for path in sorted((ROOT / "analyzer" / "testing").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            for name in names:
                root = name.split(".")[0]
                if root != "citeline" and root not in sys.stdlib_module_names and root not in installed:
                    outside.add(f"{path.name}: {name}")
    assert outside == set()
    assert PROJECT["entry-points"]["pytest11"] == {"citeline": "citeline.analyzer.testing.pytest_plugin"}


def test_the_docs_show_the_install() -> None:
    for doc in ("README.md", "docs/testing.md"):
        assert "pip install 'citeline[pytest]'" in (ROOT / doc).read_text(encoding="utf-8"), doc
