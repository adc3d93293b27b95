"""citeline's version has one source, pyproject.toml: the instrumentation scope reads it from the package
metadata (or, in a source checkout never installed, from pyproject.toml), never from a copy."""

from __future__ import annotations

import ast
import importlib.metadata
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from citeline.instrumentation import _config, request
from citeline.instrumentation.testing import capture

ROOT = Path(__file__).resolve().parents[1]
VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]


@pytest.fixture
def fresh() -> Iterator[None]:
    _config.scope_version.cache_clear()
    yield
    _config.scope_version.cache_clear()


def test_the_scope_version_is_the_packages(fresh: None) -> None:
    assert _config.scope_version() == importlib.metadata.version("citeline") == VERSION
    with capture() as cap, request(question="q"):
        pass
    (span,) = cap.spans()
    assert span.instrumentation_scope is not None
    assert (span.instrumentation_scope.name, span.instrumentation_scope.version) == ("citeline", VERSION)


def test_a_source_checkout_without_metadata_reads_pyproject(fresh: None, monkeypatch: pytest.MonkeyPatch) -> None:
    def missing(name: str) -> str:
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "version", missing)
    assert _config.scope_version() == VERSION


def test_the_version_is_spelled_nowhere_in_the_package() -> None:
    copies = []
    for folder in ("instrumentation", "analyzer"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Constant) and node.value == VERSION:
                    copies.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert copies == []
