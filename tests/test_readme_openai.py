"""The README's "A plain OpenAI-SDK app" section, run as written in a fresh process.

The snippet is taken from README.md unchanged; only what it leaves to the app is supplied: a
``vector_store`` (the demo's corpus, searched by word overlap) and the environment the ``openai``
SDK reads (``OPENAI_BASE_URL`` pointing at a loopback server that scripts the model's answer: a
hosted LLM cannot run here).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from citeline.analyzer.run.analyze import analyze
from citeline.examples.demo import gold_path
from tests.extras import needs
from tests.oi_apps import SCENARIOS
from tests.openai_app import ChatServer

ROOT = Path(__file__).resolve().parents[1]
HARNESS = """
import re
from tests.oi_apps import CORPUS

class _Store:
    def search(self, query):
        q = set(re.findall(r"[a-z0-9]+", query.lower()))
        ranked = sorted(CORPUS, key=lambda c: -len(q & set(re.findall(r"[a-z0-9]+", c["text"].lower()))))
        return [c for c in ranked if "staff" not in c["chunk_id"] and "holiday" not in c["chunk_id"]][:3]

vector_store = _Store()
"""


def _snippet() -> str:
    text = (ROOT / "README.md").read_text()
    section = text[text.index("## A plain OpenAI-SDK app") :]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)  # type: ignore[union-attr]


@pytest.mark.slow
def test_the_readme_openai_app_gives_the_bucket_of_its_answer(tmp_path: Path) -> None:
    needs("openai", "the OpenAI SDK the README's app calls")
    needs("openinference.instrumentation.openai", "the OpenAI SDK's OpenInference instrumentor")
    code = (
        HARNESS
        + _snippet()
        + (
            "\nprint(answer('How fast are refunds issued to my payment method?', {'id': 'bob', 'groups': ['public']}))"
            "\nhandle.shutdown()\n"
        )
    )
    with ChatServer(script=SCENARIOS["ok"]) as server:
        env = {**os.environ, "OPENAI_BASE_URL": server.url, "OPENAI_API_KEY": "sk-test", "PYTHONPATH": str(ROOT)}
        run = [sys.executable, "-c", code]
        out = subprocess.run(run, cwd=tmp_path, env=env, capture_output=True, text=True, check=False, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "within 5 business days [" in out.stdout
    result = analyze(tmp_path / "s.duckdb", gold=gold_path(), traces=[tmp_path / "traces"])
    [row] = [r for r in result.claims.to_dicts() if r["gold_claim_id"] is not None]
    assert (row["case_id"], row["bucket"]) == ("refund-speed", "ok"), row["reason"]
