"""Gold sets from where teams keep their eval data: a real Phoenix dataset, and their own traces."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml

from citeline.analyzer.gold.goldset import load_gold
from citeline.analyzer.run.analyze import analyze
from citeline.examples.demo import gold_path, run_scenarios
from citeline.instrumentation import configure
from tests.phoenix_server import PhoenixServer

CITELINE = str(Path(sys.executable).with_name("citeline"))


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([CITELINE, *args], check=False, cwd=cwd, capture_output=True, text=True, timeout=300)


def _upload(url: str, name: str, inputs: list[Any], outputs: list[Any], metadata: list[Any]) -> None:
    body = json.dumps(
        {"action": "create", "name": name, "inputs": inputs, "outputs": outputs, "metadata": metadata}
    ).encode()
    req = urllib.request.Request(
        f"{url}/v1/datasets/upload?sync=true", data=body, headers={"Content-Type": "application/json"}, method="POST"
    )
    with urllib.request.urlopen(req, timeout=30) as resp:
        assert resp.status == 200


@pytest.fixture(scope="module")
def demo_traces(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("demo")
    handle = configure("policy-bot", trace_dir=work / "traces")
    try:
        run_scenarios()
    finally:
        handle.shutdown()
    return work / "traces"


@pytest.mark.integration
def test_a_phoenix_dataset_imports_as_gold_and_the_demo_traces_join_it(
    phoenix: PhoenixServer, demo_traces: Path, tmp_path: Path
) -> None:
    name = f"policy-qa-{uuid.uuid4().hex[:6]}"
    _upload(
        phoenix.url,
        name,
        inputs=[
            {"question": "How fast are refunds issued to my payment method?"},
            {"question": "Which orders ship free?"},
            {"query": "a question under another key"},  # no question: named and skipped
            {"question": "Do employees get a discount on devices?"},  # no expected answer: an abstention
        ],
        outputs=[
            {"answer": "Refunds are issued to the original payment method within 5 business days."},
            {"answer": "Orders over $50 ship free within the continental US."},
            {"answer": "x"},
            {"answer": ""},
        ],
        metadata=[
            {"doc_ids": ["returns-v4#refunds-3"], "case": "refund-speed"},
            {"doc_ids": "shipping-v2#free-2, shipping-v9#gone", "case": "free-shipping"},
            {"doc_ids": [], "case": "orphan"},
            {"doc_ids": [], "case": "staff-discount"},
        ],
    )
    out = tmp_path / "imported.yaml"
    run = cli(
        "gold",
        "import",
        "--phoenix",
        phoenix.url,
        "--phoenix-dataset",
        name,
        "--support-key",
        "doc_ids",
        "--id-key",
        "case",
        "--corpus",
        str(gold_path()),
        "--out",
        str(out),
        cwd=tmp_path,
    )
    assert run.returncode == 0, run.stderr
    assert f"phoenix dataset {name!r} example" in run.stderr and "no text under 'question'" in run.stderr
    assert "1 document id(s) are not in the corpus" in run.stderr and "shipping-v9#gone" in run.stderr
    data = yaml.safe_load(out.read_text())
    assert data["cases"] == [
        {
            "case_id": "refund-speed",
            "question": "How fast are refunds issued to my payment method?",
            "claims": [
                {
                    "claim_id": "c1",
                    "text": "Refunds are issued to the original payment method within 5 business days.",
                    "support": [["returns-v4#refunds-3"]],
                }
            ],
        },
        {
            "case_id": "free-shipping",
            "question": "Which orders ship free?",
            "claims": [
                {
                    "claim_id": "c1",
                    "text": "Orders over $50 ship free within the continental US.",
                    "support": [["shipping-v2#free-2"], ["shipping-v9#gone"]],
                }
            ],
        },
        {"case_id": "staff-discount", "question": "Do employees get a discount on devices?", "expect": "abstain"},
    ]
    gold = load_gold(out)
    assert gold.errors == [] and gold.warnings == []
    assert gold.corpus["returns-v4#refunds-3"].text.startswith("Refunds are issued")  # from --corpus
    assert gold.corpus["shipping-v9#gone"].text == ""  # a stub, said on stderr
    # the imported set is usable as it is: the demo's traces join its cases by question
    result = analyze(tmp_path / "s.duckdb", gold=out, traces=[demo_traces])
    verdicts = {(r["case_id"], r["gold_claim_id"], r["bucket"]) for r in result.claims.to_dicts()}
    assert ("refund-speed", "c1", "ok") in verdicts
    assert ("free-shipping", "c1", "ok") in verdicts


@pytest.mark.integration
def test_an_unknown_dataset_or_server_is_one_clear_line(phoenix: PhoenixServer, tmp_path: Path) -> None:
    run = cli("gold", "import", "--phoenix", phoenix.url, "--phoenix-dataset", "no-such-set", cwd=tmp_path)
    assert run.returncode == 2
    assert (
        run.stderr.strip()
        == f"citeline: Phoenix at {phoenix.url} has no dataset named 'no-such-set'; check --phoenix-dataset"
    )


@pytest.mark.slow
def test_a_draft_from_real_traces_validates_with_warnings_and_reproduces_the_demo(
    demo_traces: Path, tmp_path: Path
) -> None:
    traces = tmp_path / "traces"
    shutil.copytree(demo_traces, traces)
    out = tmp_path / "draft.yaml"
    run = cli("gold", "draft", "--traces", str(traces), "--out", str(out), cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    text = out.read_text()
    assert text.startswith("# DRAFT gold set by citeline")
    gold = load_gold(out)
    assert gold.errors == []
    # every case is a draft, and validate says so for each (exit 0: drafts are usable)
    assert {c.status for c in gold.cases.values()} == {"draft"}
    check = cli("validate", str(out), cwd=tmp_path)
    assert check.returncode == 0
    assert check.stdout.count("warning: ") == len(gold.cases) == 11
    assert "then delete 'status: draft'" in check.stdout
    # a case drafted from the newest trace of its question: the answer's claims with what each cited
    refund = gold.cases["refund-speed"]
    assert [(c.text, c.support) for c in refund.claims] == [
        ("Refunds are issued to the original payment method within 5 business days.", [["returns-v4#refunds-3"]])
    ]
    assert gold.corpus["returns-v4#refunds-3"].text.startswith("Refunds are issued")  # text from the trace
    assert gold.corpus["returns-v4#refunds-3"].version == "v4"
    # a question the app declined: the draft expects an abstention
    assert gold.cases["accessory-discount"].expect == "abstain"
    # a run on a draft gold set says so, once, and keeps the warnings with the run
    result = analyze(tmp_path / "s.duckdb", gold=out, traces=[traces])
    assert len(result.warnings) == 11
    assert result.to_json()["warnings"] == result.warnings
