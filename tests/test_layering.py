"""The instrumentation runs inside someone else's app: it must not drag in the analyzer's stack."""

from __future__ import annotations

import subprocess
import sys


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
