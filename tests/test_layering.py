"""The instrumentation runs inside someone else's app: it must not drag in the analyzer's stack."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest


def test_instrumentation_imports_only_opentelemetry_and_stdlib() -> None:
    code = (
        "import sys, citeline.instrumentation\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in "
        "{'duckdb', 'polars', 'pandas', 'yaml', 'phoenix', 'rich'} or m.startswith('citeline.analyzer'))\n"
        "print(','.join(bad))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_no_generic_top_level_modules_are_installed() -> None:
    import citeline.analyzer
    import citeline.examples
    import citeline.instrumentation

    for mod in (citeline.instrumentation, citeline.analyzer, citeline.examples):
        assert mod.__name__.startswith("citeline.")
    names = "('instrumentation', 'analyzer', 'examples', 'queries')"
    code = f"import importlib.util as u; print([n for n in {names} if u.find_spec(n)])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd="/")
    assert out.stdout.strip() == "[]"


ANALYZER = Path(__file__).resolve().parent.parent / "analyzer"
#: the analyzer's families, bottom to top. A module imports only from its own family, from the
#: foundations (the plain modules at the top of analyzer/) and from the families this names for it
#: (docs/design.md "Layout", CONTRIBUTING.md). cli sits on top and may import every family.
FAMILIES: dict[str, set[str]] = {
    "judges": set(),
    "claims": set(),
    "sources": set(),
    "gold": {"claims"},
    "reports": {"claims"},
    "phoenix": {"sources"},
    "labels": {"claims", "judges"},
    "run": {"sources", "gold", "claims", "judges", "reports"},
    "drafting": {"run", "sources", "gold", "claims", "judges", "reports", "phoenix"},
    "scaleout": {"run", "sources", "gold", "claims", "judges", "reports"},
    "testing": {"run", "sources", "gold", "claims", "judges", "reports"},
    "exporters": {"run", "reports", "sources", "gold", "claims", "judges"},
}
#: the foundations every family may import; among themselves only these edges
FOUNDATIONS: dict[str, set[str]] = {
    "buckets": set(),
    "escaping": set(),
    "problems": set(),
    "streaming": set(),
    "text": set(),
    "workers": set(),
    "targets": {"problems"},
    "store": {"buckets"},
    "steps": {"store"},
}


def import_graph() -> dict[str, set[str]]:
    """The analyzer's modules (dotted, below citeline.analyzer) and what each imports from the analyzer,
    every import counted: module level, inside functions, relative or absolute."""
    mods: dict[str, Path] = {}
    for f in ANALYZER.rglob("*.py"):
        parts = f.relative_to(ANALYZER).with_suffix("").parts
        mods[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = f
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for m, f in mods.items():
        pkg = m if f.name == "__init__.py" else m.rpartition(".")[0]
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ImportFrom):
                continue
            if node.level:
                base = pkg
                for _ in range(node.level - 1):
                    base = base.rpartition(".")[0]
                target = ".".join(x for x in (base, node.module or "") if x)
            elif (node.module or "").startswith("citeline.analyzer"):
                target = node.module.removeprefix("citeline.analyzer").lstrip(".")  # type: ignore[union-attr]
            else:
                continue
            for alias in node.names:
                cand = f"{target}.{alias.name}".lstrip(".")
                hit = cand if cand in mods else target
                if hit in mods and hit != m:
                    graph[m].add(hit)
    return graph


def reaches(graph: dict[str, set[str]], a: str, b: str) -> bool:
    seen: set[str] = set()
    todo = [a]
    while todo:
        for n in graph[todo.pop()]:
            if n == b:
                return True
            if n not in seen:
                seen.add(n)
                todo.append(n)
    return False


def _family(module: str) -> str:
    return module.partition(".")[0]


def test_no_import_circle_anywhere_in_the_analyzer() -> None:
    graph = import_graph()
    assert sorted(m for m in graph if reaches(graph, m, m)) == []


def test_every_module_lives_in_a_named_family_or_is_a_foundation() -> None:
    """A new module goes in a family folder, or is a foundation named here: nothing lands at the top by accident."""
    top = {"", "testing"} | set(FAMILIES) | set(FOUNDATIONS) | {"cli"}
    assert sorted({_family(m) for m in import_graph()} - top) == []


def test_each_family_imports_only_what_the_layout_allows() -> None:
    graph = import_graph()
    wrong = []
    for m, targets in graph.items():
        fam = _family(m)
        for t in targets:
            tfam = _family(t)
            if fam in ("", "cli") or tfam == fam:
                continue  # citeline.analyzer's public names and the CLI sit on top
            allowed = FOUNDATIONS[fam] if fam in FOUNDATIONS else set(FOUNDATIONS) | FAMILIES[fam]
            if tfam not in allowed:
                wrong.append(f"{m} -> {t}")
    assert wrong == []


def test_the_layout_test_fails_on_an_upward_import(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The rule above can fail: a claims module importing the run is caught (checked on a copy)."""
    import shutil

    copy = tmp_path / "analyzer"
    shutil.copytree(ANALYZER, copy)
    (copy / "claims" / "upward.py").write_text("from citeline.analyzer.run.analyze import analyze\n")
    monkeypatch.setattr(sys.modules[__name__], "ANALYZER", copy)
    with pytest.raises(AssertionError, match=r"claims\.upward -> run\.analyze"):
        test_each_family_imports_only_what_the_layout_allows()


def private_instrumentation_imports(root: Path) -> list[str]:
    """Imports of a private citeline.instrumentation module (``_name``) under ``root``, as 'path:line: module'."""
    found = []
    for f in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and not node.level:
                names = [node.module or ""] + [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            for name in names:
                parts = name.split(".")
                if parts[:2] == ["citeline", "instrumentation"] and len(parts) > 2 and parts[2].startswith("_"):
                    found.append(f"{f.relative_to(root)}:{node.lineno}: {name}")
                    break
    return found


def test_the_analyzer_imports_only_public_instrumentation_modules() -> None:
    """The analyzer reads citeline.instrumentation through its public modules (schema, labels, chunks, prompt,
    redact, otlp_json, testing and the package itself): every private module may be renamed or moved."""
    assert private_instrumentation_imports(ANALYZER) == []


def test_the_private_import_check_can_fail(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(
        "from citeline.instrumentation._wrap import _make\n"
        "from citeline.instrumentation import _guard, schema\n"
        "import citeline.instrumentation._config\n"
        "from citeline.instrumentation.schema import CL_STAGE\n"
    )
    assert private_instrumentation_imports(tmp_path) == [
        "a.py:1: citeline.instrumentation._wrap",
        "a.py:2: citeline.instrumentation._guard",
        "a.py:3: citeline.instrumentation._config",
    ]


def test_the_command_line_imports_no_extra() -> None:
    """`citeline demo` runs on a base install (README's quick start): the CLI and the public analyzer import
    nothing a base install lacks: no pytest (the plugin's fixture is imported when it is asked for), no
    Dask, no framework, no Phoenix server."""
    extras = "{'pytest', '_pytest', 'hypothesis', 'dask', 'distributed', 'openai', 'langchain_core', 'llama_index', "
    extras += "'haystack', 'phoenix', 'chromadb', 'boto3', 's3fs', 'onnxruntime', 'cmarkgfm'}"
    code = (
        "import sys, citeline.analyzer, citeline.analyzer.cli.main, citeline.analyzer.testing\n"
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {extras}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
