"""``citeline export``: the demo's verdicts reach an OTLP/HTTP receiver as gen_ai.evaluation.result records on
the spans the store names, once, with the credentials nowhere in the output.

The receiver (tests/otlp_receiver.py) decodes the real protobuf with opentelemetry-proto; the export goes
through the OpenTelemetry SDK's own OTLP/HTTP log exporter in a real ``citeline`` process."""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import duckdb
import pytest

from citeline.analyzer.run.analyze import analyze
from citeline.analyzer.sources.ingest import ingest
from citeline.analyzer.store import connect
from citeline.examples.demo import gold_path
from tests.otlp_receiver import otlp_receiver

CITELINE = str(Path(sys.executable).with_name("citeline"))
SECRET = "s3cret-token-4711"
EVENT = "gen_ai.evaluation.result"


def cli(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, **(env or {})}
    return subprocess.run(
        [CITELINE, *args], check=False, cwd=cwd, capture_output=True, text=True, timeout=300, env=full
    )


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``citeline demo`` once: its store and its trace files."""
    work = tmp_path_factory.mktemp("export")
    done = cli("demo", "--db", "demo.duckdb", "--traces", "traces", cwd=work)
    assert done.returncode == 0, done.stderr
    return work


def _copy_store(demo: Path, tmp_path: Path) -> Path:
    """A fresh copy of the demo store: each test starts with nothing exported."""
    db = tmp_path / "store.duckdb"
    db.write_bytes((demo / "demo.duckdb").read_bytes())
    return db


def _claims(db: Path) -> list[tuple[Any, ...]]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(
            "SELECT trace_id, span_id, bucket, stage, gold_claim_id, claim_text FROM claim_results"
        ).fetchall()
    finally:
        con.close()


def _request_spans(db: Path) -> dict[str, str]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return dict(con.execute("SELECT trace_id, span_id FROM spans WHERE stage = 'request'").fetchall())
    finally:
        con.close()


def test_every_failing_claim_arrives_once_on_its_breaking_span(demo: Path, tmp_path: Path) -> None:
    db = _copy_store(demo, tmp_path)
    claims = _claims(db)
    failing = [c for c in claims if c[2] != "ok"]
    assert len(failing) == 21 and {c[1] is not None for c in failing} == {True}  # the demo's failures, each on a span
    env = {"OTEL_EXPORTER_OTLP_HEADERS": f"authorization=Bearer {SECRET}"}
    with otlp_receiver() as receiver:
        first = cli("export", "--otlp", receiver.url, "--db", str(db), cwd=tmp_path, env=env)
        assert first.returncode == 0, first.stderr
        sent = list(receiver.records)
        second = cli("export", "--otlp", receiver.url, "--db", str(db), cwd=tmp_path, env=env)
        assert second.returncode == 0, second.stderr
        assert receiver.records == sent, "a second export of the same run sends nothing new"
        assert all(h["authorization"] == f"Bearer {SECRET}" for h in receiver.requests)  # the header arrived
    assert len(receiver.requests) == 1  # one batch the first time, nothing the second

    # every record is a GenAI evaluation event from citeline
    assert {r.event_name for r in sent} == {EVENT}
    assert {r.scope for r in sent} == {"citeline.analyzer.exporters.otel"}
    assert {r.resource["service.name"] for r in sent} == {"citeline"}
    claim_records = [r for r in sent if r.attributes["gen_ai.evaluation.name"] == "citeline"]
    trace_records = [r for r in sent if r.attributes["gen_ai.evaluation.name"] == "citeline.trace"]
    assert len(claim_records) + len(trace_records) == len(sent)

    # the failing claims, exactly: one record each, on the trace and span the store names, with its bucket
    got = Counter(
        (
            r.trace_id,
            r.span_id,
            r.attributes["gen_ai.evaluation.score.label"],
            r.attributes.get("citeline.verdict.stage"),
            r.attributes.get("citeline.claim.id"),
            r.attributes.get("citeline.claim.text"),
        )
        for r in claim_records
        if r.attributes["gen_ai.evaluation.score.label"] != "ok"
    )
    assert got == Counter(failing)
    # ok claims sit on their trace's request span (no span broke their chain), score 1.0
    requests = _request_spans(db)
    ok = [r for r in claim_records if r.attributes["gen_ai.evaluation.score.label"] == "ok"]
    assert Counter((r.trace_id, r.span_id) for r in ok) == Counter(
        (c[0], requests[c[0]]) for c in claims if c[2] == "ok"
    )
    assert {r.attributes["citeline.verdict.on_request_span"] for r in ok} == {True}
    # one trace verdict per trace, on its request span
    assert sorted((r.trace_id, r.span_id) for r in trace_records) == sorted(requests.items())

    # the attributes of one failing record, exhaustively
    record = next(r for r in claim_records if r.attributes["gen_ai.evaluation.score.label"] == "invalid_citation")
    attrs = dict(record.attributes)
    run_id = attrs.pop("citeline.run.id")
    assert attrs.pop("citeline.judge").startswith("rules")
    assert attrs.pop("gen_ai.evaluation.name") == "citeline"
    assert attrs.pop("gen_ai.evaluation.score.label") == "invalid_citation"
    assert attrs.pop("gen_ai.evaluation.score.value") == 0.0
    claim_id = attrs.pop("citeline.claim.id")
    text = attrs.pop("citeline.claim.text")
    case_id = attrs.pop("citeline.case.id")
    assert attrs.pop("gen_ai.evaluation.explanation").startswith(f'claim {claim_id} "{text}": cites ')
    assert attrs.pop("citeline.verdict.key") == f"claim/{case_id}/{claim_id}/{record.trace_id}"
    assert attrs.pop("citeline.verdict.stage") == "generation"
    assert attrs.pop("citeline.verdict.basis") == "gold"
    assert attrs.pop("citeline.verdict.on_request_span") is False
    con = duckdb.connect(str(db), read_only=True)
    flags = con.execute(
        "SELECT flags FROM claim_results WHERE trace_id = $t AND gold_claim_id = $c",
        {"t": record.trace_id, "c": claim_id},
    ).fetchall()[0][0]
    con.close()
    assert flags and attrs.pop("citeline.verdict.flags") == flags  # secondary findings, as the store has them
    assert attrs == {}
    assert record.severity == 13  # WARN: a failing verdict
    # not_evaluable carries no score: nothing was judged
    unjudged = [r for r in claim_records if r.attributes["gen_ai.evaluation.score.label"] == "not_evaluable"]
    assert unjudged and all("gen_ai.evaluation.score.value" not in r.attributes for r in unjudged)

    assert (
        f"{len(sent) - len(trace_records)} claim verdict(s) and {len(trace_records)} trace verdict(s)" in first.stdout
    )
    assert f"{len(sent)} verdict(s) were sent there before: not sent again" in second.stdout
    assert f"run {run_id}:" in second.stdout
    for out in (first.stdout, first.stderr, second.stdout, second.stderr):
        assert SECRET not in out


def test_a_refused_export_names_no_secret_and_leaves_nothing_marked_sent(demo: Path, tmp_path: Path) -> None:
    db = _copy_store(demo, tmp_path)
    env = {"OTEL_EXPORTER_OTLP_HEADERS": f"authorization=Bearer%20{SECRET}"}  # the spec's percent-encoded form
    with otlp_receiver() as receiver:
        receiver.status = 401
        url = f"http://user:{SECRET}@127.0.0.1:{receiver.url.rsplit(':', 1)[1]}"
        refused = cli("export", "--otlp", url, "--db", str(db), "--timeout", "5", cwd=tmp_path, env=env)
        assert refused.returncode == 2  # a backend that refuses us: the input cannot be used (design.md)
        assert "citeline: the OTLP endpoint http://***@127.0.0.1:" in refused.stderr
        assert "/v1/logs did not take the verdicts" in refused.stderr
        assert SECRET not in refused.stdout + refused.stderr
        receiver.status = 200
        again = cli("export", "--otlp", receiver.url, "--db", str(db), cwd=tmp_path, env=env)
    assert again.returncode == 0, again.stderr
    assert len(receiver.records) == 82  # everything: the refused attempt marked nothing as sent
    assert receiver.requests[-1]["authorization"] == f"Bearer {SECRET}"


def test_the_file_form_writes_otlp_json_log_lines_once(demo: Path, tmp_path: Path) -> None:
    """The file form, read back as OTLP/JSON (resourceLogs: the Collector file exporter's shape) and by
    citeline's own ingest, which reads every record and finds nothing wrong in it."""
    db = _copy_store(demo, tmp_path)
    out = tmp_path / "verdicts.jsonl"
    first = cli("export", "--out", str(out), "--db", str(db), cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    second = cli("export", "--out", str(out), "--db", str(db), cwd=tmp_path)
    assert second.returncode == 0 and "82 verdict(s) were sent there before" in second.stdout
    lines = out.read_bytes().splitlines()
    assert len(lines) == 1  # 82 records in one request; the second export appended nothing
    records = [
        rec
        for line in lines
        for rl in json.loads(line)["resourceLogs"]
        for sl in rl["scopeLogs"]
        for rec in sl["logRecords"]
    ]
    assert len(records) == 82 and {r["eventName"] for r in records} == {EVENT}
    failing = Counter(
        (
            r["traceId"],
            r["spanId"],
            a["gen_ai.evaluation.score.label"]["stringValue"],
        )
        for r in records
        for a in [{x["key"]: x["value"] for x in r["attributes"]}]
        if a["gen_ai.evaluation.name"]["stringValue"] == "citeline"
        and a["gen_ai.evaluation.score.label"]["stringValue"] != "ok"
    )
    assert failing == Counter((c[0], c[1], c[2]) for c in _claims(db) if c[2] != "ok")
    assert {type(r["timeUnixNano"]) for r in records} == {str}  # OTLP/JSON: 64-bit integers as strings
    # citeline's ingest reads the file as a log file: every record counted, none a problem (evaluation
    # results carry no GenAI content to join, so none is stored)
    report = ingest(connect(tmp_path / "readback.duckdb"), [out])
    assert (report.files, report.log_records, report.log_content, report.skipped, report.problems) == (
        1,
        82,
        0,
        0,
        [],
    )


def test_a_verdict_never_lands_on_a_span_of_another_trace(demo: Path, tmp_path: Path) -> None:
    """A hostile trace reuses the id of an honest trace's breaking span: neither trace's verdict is sent to
    that span id (a backend that looks a span up by id alone would put one on the other), each named."""
    lines = Path(glob.glob(str(demo / "traces" / "*" / "*.jsonl"))[0]).read_text().splitlines()
    claims = {c[0]: c for c in _claims(demo / "demo.duckdb")}
    honest = next(c for c in claims.values() if c[2] == "invalid_citation")
    victim = next(c for c in claims.values() if c[2] == "retrieval_miss")
    folder = tmp_path / "traces"
    folder.mkdir()
    (folder / "honest.jsonl").write_text(next(x for x in lines if honest[0] in x) + "\n")
    hostile = next(x for x in lines if victim[0] in x).replace(victim[1], honest[1])
    (folder / "hostile.jsonl").write_text(hostile + "\n")
    db = tmp_path / "h.duckdb"
    analyze(db, gold=gold_path(), traces=[folder], judge="rules", progress=None)
    rows = _claims(db)
    assert sorted((r[0], r[1], r[2]) for r in rows) == sorted(
        [(honest[0], honest[1], "invalid_citation"), (victim[0], honest[1], "retrieval_miss")]
    )
    with otlp_receiver() as receiver:
        done = cli("export", "--otlp", receiver.url, "--db", str(db), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert [r for r in receiver.records if r.span_id == honest[1]] == []
    assert {r.attributes["gen_ai.evaluation.name"] for r in receiver.records} == {"citeline.trace"}
    assert (
        f"citeline: otlp:trace {victim[0]}: span {honest[1]}: is also the id of a span of trace {honest[0]}: "
        "its verdict was not written there"
    ) in done.stderr
    assert (
        f"citeline: otlp:trace {honest[0]}: span {honest[1]}: is also the id of a span of trace {victim[0]}: "
        "its verdict was not written there"
    ) in done.stderr
