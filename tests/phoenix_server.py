"""A real Phoenix server for integration tests: ``phoenix serve`` on free loopback ports.

Started once per test session with a temporary working directory and
stopped by its process id. Missing Phoenix is a failure, never a skip.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class PhoenixServer:
    url: str
    pid: int
    workdir: Path
    log: Path


def _phoenix_command() -> list[str]:
    exe = Path(sys.executable).with_name("phoenix")
    if exe.exists():
        return [str(exe), "serve"]
    found = shutil.which("phoenix")
    if found:
        return [found, "serve"]
    pytest.fail("the `phoenix` command is missing: install the test extras (pip install -e '.[test]')")


@contextlib.contextmanager
def running_phoenix(extra_env: dict[str, str] | None = None) -> Iterator[PhoenixServer]:
    """Start ``phoenix serve`` on free loopback ports; stop it by its pid on exit."""
    workdir = Path(tempfile.mkdtemp(prefix="citeline-phoenix-"))
    port, grpc = free_port(), free_port()
    env = {
        **os.environ,
        "PHOENIX_WORKING_DIR": str(workdir),
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(grpc),
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_TELEMETRY_ENABLED": "false",
        **(extra_env or {}),
    }
    log = workdir / "phoenix.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(_phoenix_command(), env=env, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 180
    try:
        while True:
            if proc.poll() is not None:
                pytest.fail(f"phoenix serve exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(f"{url}/healthz", timeout=2) as resp:
                    if resp.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"phoenix serve did not become healthy in 180 s:\n{log.read_text()[-3000:]}")
            time.sleep(0.5)
        yield PhoenixServer(url, proc.pid, workdir, log)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        shutil.rmtree(workdir, ignore_errors=True)


@pytest.fixture(scope="session")
def phoenix() -> Iterator[PhoenixServer]:
    external = os.environ.get("CITELINE_TEST_PHOENIX_URL")
    if external:  # a server .ci/run or a developer started
        yield PhoenixServer(external.rstrip("/"), -1, Path(), Path())
        return
    with running_phoenix() as server:
        yield server


def fetch_spans(url: str, project: str) -> list[dict[str, Any]]:
    """Every span of a Phoenix project, through its REST API (paged; connections closed)."""
    import json
    import urllib.error
    import urllib.parse

    out: list[dict[str, Any]] = []
    cursor = None
    while True:
        query = {"limit": "1000", **({"cursor": cursor} if cursor else {})}
        try:
            with urllib.request.urlopen(
                f"{url}/v1/projects/{project}/spans?{urllib.parse.urlencode(query)}", timeout=30
            ) as resp:
                body = json.loads(resp.read())
        except urllib.error.HTTPError as exc:
            if exc.code == 404:  # the project appears with its first span
                exc.close()
                return []
            raise
        out += body["data"]
        cursor = body.get("next_cursor")
        if not cursor:
            return out


def wait_for_spans(url: str, project: str, expected: int, timeout: float = 60.0) -> list[dict[str, Any]]:
    """The project's spans once at least ``expected`` are there (Phoenix persists asynchronously),
    or whatever is there after ``timeout`` seconds: the caller asserts the count."""
    deadline = time.monotonic() + timeout
    while True:
        spans = fetch_spans(url, project)
        if len(spans) >= expected or time.monotonic() > deadline:
            return spans
        time.sleep(0.3)
