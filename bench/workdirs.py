"""A bench's working folder: the one ``--workdir`` names (kept, so its traces serve the next run), or a temp folder
removed when the bench exits (a 100,000-trace bench writes 1.3-1.5 GB of traces and stores; each run used to leave
its copy in the temp dir)."""

from __future__ import annotations

import atexit
import shutil
import tempfile
from pathlib import Path


def workdir(given: str | None, prefix: str) -> Path:
    """``given`` (made if missing, kept), or a new temp folder named ``prefix...``, removed at exit."""
    if given:
        path = Path(given)
        path.mkdir(parents=True, exist_ok=True)
        return path
    path = Path(tempfile.mkdtemp(prefix=prefix))
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    return path
