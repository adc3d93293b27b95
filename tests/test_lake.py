"""Trace files in object storage: ``--traces s3://bucket/prefix/`` against a real S3 server on loopback.

The server is moto's (``moto_server``, started here on a free port and stopped by its pid); the
client is s3fs with credentials from the environment only, as a user's job has them. The demo's
traces are written in the Collector's time-partitioned layout, one trace split across two objects,
part of them gzipped; read from the bucket they give the same claim rows as the same files on disk.
"""

from __future__ import annotations

import gzip
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest

from citeline.analyzer.cli.main import main
from citeline.analyzer.run.analyze import analyze
from citeline.examples.demo import SCENARIOS, gold_path
from tests.analysis_helpers import run_and_analyze
from tests.extras import needs

boto3 = needs("boto3", "puts the objects into the loopback S3")
needs("s3fs", "the S3 driver of --traces s3://; also 'citeline[lake]'")
needs("moto", "the loopback S3 server")

ROWS = "case_id, gold_claim_id, bucket, stage, span_id, reason, claim_text"
LAYOUT = "traces/year=2026/month=12/day=01/hour=03/minute={m:02d}/traces_{n}.json"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def s3(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[str]:
    """A fresh S3 server on loopback, the environment pointing at it (test credentials)."""
    port = _free_port()
    exe = Path(sys.executable).parent / "moto_server"
    log = open(tmp_path / "moto.log", "wb")  # noqa: SIM115
    proc = subprocess.Popen([str(exe), "-H", "127.0.0.1", "-p", str(port)], stdout=log, stderr=subprocess.STDOUT)
    endpoint = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):  # 30 s: moto_server imports much of boto, slow on a loaded machine
            try:
                urllib.request.urlopen(endpoint + "/moto-api/", timeout=1)
                break
            except OSError:
                time.sleep(0.05)
        else:
            pytest.fail("moto_server did not start")
        for k, v in {
            "AWS_ENDPOINT_URL": endpoint,
            "AWS_ACCESS_KEY_ID": "citeline-test",
            "AWS_SECRET_ACCESS_KEY": "citeline-test-secret",
            "AWS_DEFAULT_REGION": "us-east-1",
        }.items():
            monkeypatch.setenv(k, v)
        for k in ("AWS_PROFILE", "AWS_SESSION_TOKEN"):
            monkeypatch.delenv(k, raising=False)
        yield endpoint
    finally:
        os.kill(proc.pid, 15)
        proc.wait(timeout=10)
        log.close()


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> list[bytes]:
    """The demo's trace lines, one OTLP request per line, as the instrumentation wrote them."""
    tmp = tmp_path_factory.mktemp("demo")
    run_and_analyze(tmp, SCENARIOS)
    [f] = (tmp / "traces").glob("*.jsonl")
    return f.read_bytes().splitlines()


def _split(line: bytes) -> tuple[bytes, bytes]:
    """One request as two, each with half of every scope's spans: a trace across two objects."""
    doc = json.loads(line)
    first, second = json.loads(line), json.loads(line)
    for r, rs in enumerate(doc["resourceSpans"]):
        for s, ss in enumerate(rs["scopeSpans"]):
            half = len(ss["spans"]) // 2
            first["resourceSpans"][r]["scopeSpans"][s]["spans"] = ss["spans"][:half]
            second["resourceSpans"][r]["scopeSpans"][s]["spans"] = ss["spans"][half:]
    return json.dumps(first).encode(), json.dumps(second).encode()


def _collector_objects(lines: list[bytes]) -> dict[str, bytes]:
    """The lines in the Collector's layout: a few traces per object, every third object gzipped, and the
    first trace's spans split between the first and the last object."""
    head, tail = _split(lines[0])
    batches = [[head, *lines[1:4]]] + [lines[i : i + 4] for i in range(4, len(lines), 4)]
    batches[-1] = [*batches[-1], tail]
    objects = {}
    for n, batch in enumerate(batches):
        key = LAYOUT.format(m=n % 3, n=n)
        body = b"\n".join(batch) + b"\n"
        if n % 3 == 2:
            key, body = key + ".gz", gzip.compress(body)
        objects[key] = body
    return objects


def _write_local(objects: dict[str, bytes], root: Path) -> Path:
    for key, body in objects.items():
        (root / key).parent.mkdir(parents=True, exist_ok=True)
        (root / key).write_bytes(body)
    return root / "traces"


def _upload(objects: dict[str, bytes], bucket: str = "lake") -> Any:
    client = boto3.client("s3")
    client.create_bucket(Bucket=bucket)
    for key, body in objects.items():
        client.put_object(Bucket=bucket, Key=key, Body=body)
    return client


def _said(problems: list[Any], root: str) -> list[tuple[str, ...]]:
    return sorted((p.source.removeprefix(root), p.place, p.field, p.message, str(p.skipped)) for p in problems)


def _rows(db: Path) -> list[tuple[Any, ...]]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return sorted(con.execute(f"SELECT {ROWS} FROM claim_results").fetchall(), key=repr)
    finally:
        con.close()


@pytest.mark.slow
def test_a_prefix_in_the_collectors_layout_reads_as_the_same_files_on_disk(
    s3: str, demo: list[bytes], tmp_path: Path
) -> None:
    objects = _collector_objects(demo)
    _upload(objects)
    local = analyze(tmp_path / "local.duckdb", gold=gold_path(), traces=[_write_local(objects, tmp_path / "disk")])
    remote = analyze(tmp_path / "lake.duckdb", gold=gold_path(), traces=["s3://lake/traces/"])
    assert remote.summary == local.summary
    assert _rows(tmp_path / "lake.duckdb") == _rows(tmp_path / "local.duckdb")
    assert len(_rows(tmp_path / "lake.duckdb")) == sum(local.summary.values()) > 0
    # the same notes (the demo's adapter bug), each naming the object where the file on disk is named
    disk = str(tmp_path / "disk") + "/"
    assert _said(remote.ingest.problems, "s3://lake/") == _said(local.ingest.problems, disk) != []
    assert remote.ingest.files == len(objects)
    con = duckdb.connect(str(tmp_path / "lake.duckdb"), read_only=True)
    try:
        paths = sorted(p for (p,) in con.execute("SELECT path FROM ingested_files").fetchall())
        sources = {s for (s,) in con.execute("SELECT DISTINCT source_file FROM spans").fetchall()}
        files_of = {s for (s,) in con.execute("SELECT DISTINCT source_file FROM file_traces").fetchall()}
    finally:
        con.close()
    # the store names each object by its URL, never by the temporary copy
    assert paths == sorted(f"s3://lake/{k}" for k in objects)
    assert sources <= set(paths) and files_of == set(paths)
    # a second run downloads nothing: every object is held at its size; the same rows again
    again = analyze(tmp_path / "lake.duckdb", gold=gold_path(), traces=["s3://lake/traces/"])
    assert (again.ingest.files, again.ingest.files_skipped_unchanged) == (0, len(objects))
    assert again.summary == local.summary


@pytest.mark.slow
def test_a_missing_bucket_is_named_and_the_rest_is_read(s3: str, demo: list[bytes], tmp_path: Path) -> None:
    objects = _collector_objects(demo)
    _upload(objects)
    local = analyze(tmp_path / "local.duckdb", gold=gold_path(), traces=[_write_local(objects, tmp_path / "disk")])
    r = analyze(tmp_path / "lake.duckdb", gold=gold_path(), traces=["s3://lake/traces/", "s3://no-such-bucket/x/"])
    assert r.summary == local.summary
    assert [(p.source, p.message) for p in r.ingest.problems if p.skipped] == [
        ("s3://no-such-bucket/x/", "does not exist: The specified bucket does not exist; skipped")
    ]


def test_nothing_readable_in_object_storage_exits_2_naming_it(
    s3: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        [
            "analyze",
            "--traces",
            "s3://no-such-bucket/traces/",
            "--gold",
            str(gold_path()),
            "--db",
            str(tmp_path / "s.duckdb"),
        ]
    )
    err = capsys.readouterr().err
    assert code == 2
    assert "nothing readable in object storage: s3://no-such-bucket/traces/:-: -: does not exist" in err
    assert "citeline-test-secret" not in err
    empty = boto3.client("s3")
    empty.create_bucket(Bucket="empty")
    assert (
        main(
            [
                "analyze",
                "--traces",
                "s3://empty/traces/",
                "--gold",
                str(gold_path()),
                "--db",
                str(tmp_path / "s.duckdb"),
            ]
        )
        == 2
    )
    assert "s3://empty/traces/:-: -: no such bucket or prefix; skipped" in capsys.readouterr().err


@pytest.mark.slow
def test_a_forbidden_key_and_a_truncated_object_are_named_and_the_rest_is_read(
    s3: str, demo: list[bytes], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    objects = _collector_objects(demo)
    keys = sorted(objects)
    secret, cut = keys[1], next(k for k in keys if k.endswith(".gz"))
    bad = dict(objects)
    bad[cut] = objects[cut][: len(objects[cut]) // 2]  # a gzip object that breaks off
    _upload(bad)
    # the expected rows: the same files on disk without the two that cannot be read
    kept = {k: v for k, v in objects.items() if k not in (secret, cut)}
    local = analyze(tmp_path / "local.duckdb", gold=gold_path(), traces=[_write_local(kept, tmp_path / "disk")])
    # a reader whose policy denies one key; the server checks credentials from here on
    iam = boto3.client("iam")
    iam.create_user(UserName="nightly")
    deny = {"Effect": "Deny", "Action": "s3:GetObject", "Resource": f"arn:aws:s3:::lake/{secret}"}
    allow = {"Effect": "Allow", "Action": "s3:*", "Resource": ["arn:aws:s3:::lake", "arn:aws:s3:::lake/*"]}
    policy = {"Version": "2012-10-17", "Statement": [allow, deny]}
    iam.put_user_policy(UserName="nightly", PolicyName="read-traces", PolicyDocument=json.dumps(policy))
    key = iam.create_access_key(UserName="nightly")["AccessKey"]
    req = urllib.request.Request(s3 + "/moto-api/reset-auth", data=b"0", headers={"Content-Type": "text/plain"})
    urllib.request.urlopen(req, timeout=5)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", key["AccessKeyId"])
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", key["SecretAccessKey"])

    r = analyze(tmp_path / "lake.duckdb", gold=gold_path(), traces=["s3://lake/traces/"])
    problems = {p.source: p.message for p in r.ingest.problems if p.skipped}
    assert set(problems) == {f"s3://lake/{secret}", f"s3://lake/{cut}"}
    assert problems[f"s3://lake/{secret}"].startswith("access denied: the credentials in the environment")
    assert "gzip" in problems[f"s3://lake/{cut}"] and problems[f"s3://lake/{cut}"].endswith("file skipped")
    assert not any("citeline-lake-" in m for m in problems.values())  # no temporary path leaks out
    # nothing lost from the rest: every trace of the readable objects, row for row
    assert _rows(tmp_path / "lake.duckdb") == _rows(tmp_path / "local.duckdb")
    assert r.summary == local.summary
