"""One bad value or a full disk costs only what it must: every other trace reaches the file."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from citeline.instrumentation import request, retrieval
from tests.conftest import Tracing, read_trace_files


@retrieval
def search(q: str) -> list[dict[str, str]]:
    return [{"doc_id": "d", "chunk_id": f"d#{q}", "text": "Thirty days."}]


def test_a_lone_surrogate_costs_no_trace(tracing: Tracing) -> None:
    questions = [f"question {i}" for i in range(21)]
    questions[7] = "broken \ud800 decode"
    questions[8] = "split pair \ud83d\ude00 joined"
    for q in questions:
        with request(question=q):
            search(q)
    spans = tracing.file_spans()  # one flush: all 21 traces in one write batch
    asked = sorted(s["attributes"]["citeline.request.question"] for s in spans if s["name"] == "request")
    fixed = [q.replace("\ud800", "\ufffd").replace("\ud83d\ude00", "\U0001f600") for q in questions]
    assert asked == sorted(fixed)  # was: 0 of 21 written
    assert len(spans) == 42


FULL_DISK = textwrap.dedent(
    """
    import json, logging, resource, signal, sys
    from pathlib import Path
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="%(message)s")
    from citeline.instrumentation import configure, request, retrieval

    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG instead
    handle = configure(service_name="bot", trace_dir=sys.argv[1])

    @retrieval
    def search(q):
        return [{"doc_id": "d", "chunk_id": "d#" + q, "text": "chunk text " * 20}]

    def burst(tag, n):
        for i in range(n):
            with request(question=f"{tag}-{i}"):
                search(f"{tag}-{i}")
        handle.force_flush()

    burst("before", 5)
    (path,) = handle.trace_files
    size = path.stat().st_size
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (size + 700, hard))  # room for part of one line
    for k in range(3):
        burst(f"full{k}", 4)  # three batches while the disk is full
    resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))  # space again
    burst("after", 20)
    handle.shutdown()
    """
)


def test_after_a_full_disk_recovers_every_new_trace_survives_and_one_warning_per_episode(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-c", FULL_DISK, str(tmp_path / "t")],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    (path,) = (tmp_path / "t").glob("*.jsonl")
    lines = path.read_bytes().split(b"\n")
    assert lines[-1] == b""
    for line in lines[:-1]:
        json.loads(line)  # every line whole: the torn tail was taken back
    questions = [
        s["attributes"]["citeline.request.question"] for s in read_trace_files(tmp_path / "t") if s["name"] == "request"
    ]
    assert sorted(q for q in questions if q.startswith("after")) == sorted(f"after-{i}" for i in range(20))
    assert sorted(q for q in questions if q.startswith("before")) == sorted(f"before-{i}" for i in range(5))
    assert not [q for q in questions if q.startswith("full")]
    warnings = [line for line in out.stderr.splitlines() if line.startswith("citeline:")]
    assert len(warnings) == 2, warnings
    assert warnings[0].startswith(
        f"citeline: writing trace files under {tmp_path / 't'} failed ([Errno 27] File too large)"
    )
    assert warnings[1] == "citeline: writing trace files works again; 12 trace(s) were lost"
