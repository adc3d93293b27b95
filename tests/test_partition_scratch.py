"""A partition task's scratch folder outside a Dask worker is gone when its process exits.

Inside a worker the folder lives in the worker's local directory, which Dask removes when the worker closes.
Outside one (a task called directly, the synchronous scheduler) it is a plain temporary folder; it held the
run's labels file (people's verdicts on claims), and it used to stay in the temp dir after the process ended.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

CHILD = """
from citeline.analyzer.scaleout.tasks import _scratch
folder = _scratch()
(folder / "labels.csv").write_text("trace_id,claim,label\\n")
print(folder)
"""


def test_a_scratch_folder_made_outside_a_worker_is_removed_when_its_process_exits(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", CHILD],
        capture_output=True,
        text=True,
        check=True,
        env={"TMPDIR": str(tmp_path), "PATH": "/usr/bin:/bin"},
    )
    folder = Path(done.stdout.strip())
    assert folder.parent == tmp_path and folder.name.startswith("citeline-partition-")
    assert not folder.exists()
    assert list(tmp_path.iterdir()) == []
