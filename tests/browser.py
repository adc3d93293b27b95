"""Headless Debian Chromium for tests that look at a page as a person would."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ARTIFACTS = Path(__file__).resolve().parents[1] / "test-artifacts"


def chromium(profile: Path, *args: str, wait_ms: int = 0) -> subprocess.CompletedProcess[str]:
    """Run headless Chromium with a fresh profile and no background networking."""
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if not exe:
        pytest.fail("chromium is missing: .ci/run installs Debian's chromium package (apt-get install chromium)")
    flags = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={profile}",
    ]
    if wait_ms:
        flags.append(f"--virtual-time-budget={wait_ms}")
    return subprocess.run([exe, *flags, *args], capture_output=True, text=True, timeout=120, check=True)


def screenshot(profile: Path, url: str, name: str, size: str = "1280,2200", wait_ms: int = 0) -> Path:
    """Write ``test-artifacts/<name>`` and return its path."""
    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / name
    shot.unlink(missing_ok=True)
    chromium(profile, f"--screenshot={shot}", f"--window-size={size}", url, wait_ms=wait_ms)
    return shot
