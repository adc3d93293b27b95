"""citeline sample: a blind, seeded sheet; labels read back change only the sampled rows; the report
shows people's agreement with the judge per bucket. The demo app's real traces, a real store."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from citeline.analyzer.cli.main import main
from citeline.analyzer.gold.goldset import load_gold
from citeline.analyzer.labels.sample import COLUMNS
from citeline.examples.demo import SCENARIOS, gold_path
from tests.analysis_helpers import run_and_analyze


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("sample")
    run_and_analyze(tmp, SCENARIOS)
    return tmp


def _sheet(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def test_the_same_seed_draws_the_same_blind_sheet(store: Path, tmp_path: Path) -> None:
    db = str(store / "store.duckdb")
    for name, seed in (("a.csv", "7"), ("b.csv", "7"), ("c.csv", "8")):
        assert (
            main(
                [
                    "sample",
                    "--db",
                    db,
                    "--n",
                    "12",
                    "--stratify",
                    "bucket",
                    "--seed",
                    seed,
                    "--out",
                    str(tmp_path / name),
                ]
            )
            == 0
        )
    a, b, c = (tmp_path / n for n in ("a.csv", "b.csv", "c.csv"))
    assert a.read_bytes() == b.read_bytes()
    assert a.read_bytes() != c.read_bytes()
    rows = _sheet(a)
    assert len(rows) == 12 and tuple(rows[0]) == COLUMNS  # no bucket, label or reason: blind
    assert all(r["label"] == "" and r["question"] and r["claim_text"] for r in rows)
    corpus = load_gold(gold_path()).corpus
    cited = [r for r in rows if r["cited_chunks"]]
    assert cited
    for r in cited:  # each cited passage as the corpus holds it, with its version
        ids = r["cited_chunks"].split(" ")
        assert r["cited_text"] == "\n\n".join(
            corpus[i].text if i in corpus else "(text not in the corpus)" for i in ids
        )
        assert r["cited_versions"] == " ".join(corpus[i].version or "-" if i in corpus else "-" for i in ids)


@pytest.mark.slow
def test_labels_read_back_change_only_the_sampled_rows_and_the_report_shows_agreement(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(store / "store.duckdb")
    sheet = tmp_path / "sheet.csv"
    assert main(["sample", "--db", db, "--n", "6", "--seed", "3", "--out", str(sheet)]) == 0
    rows = _sheet(sheet)
    for r in rows[:4]:  # a person labels four rows and leaves two for later
        r["label"] = "contradicted"
    with open(sheet, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        w.writeheader()
        w.writerows(rows)
    capsys.readouterr()
    traces = str(store / "traces")
    assert main(["analyze", "--db", db, "--traces", traces, "--gold", str(gold_path()), "--format", "json"]) == 0
    plain = {
        (c["trace_id"], c["gold_claim_id"] or c["claim_text"]): c for c in json.loads(capsys.readouterr().out)["claims"]
    }
    args = ["analyze", "--db", db, "--traces", traces, "--gold", str(gold_path()), "--format", "json"]
    assert main([*args, "--labels", str(sheet)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["skipped"] == 0  # the two blank rows are not labels, not problems
    labelled = {(c["trace_id"], c["gold_claim_id"] or c["claim_text"]): c for c in out["claims"]}
    changed = {
        k for k in plain if (plain[k]["bucket"], plain[k]["reason"]) != (labelled[k]["bucket"], labelled[k]["reason"])
    }
    assert changed <= {(r["trace_id"], r["claim"]) for r in rows[:4]}
    assert main(["report", "--db", db, "--format", "json"]) == 0
    agreement = json.loads(capsys.readouterr().out)["agreement"]
    assert sum(a["labelled"] for a in agreement) == 4
    assert all(
        0 <= a["agreeing"] <= a["labelled"] and a["agreement"] == a["agreeing"] / a["labelled"] for a in agreement
    )
