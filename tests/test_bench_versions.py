"""The benches clean up after themselves: the synthetic traces and stores a bench makes in a temp dir (1.3-1.5 GB
at the default 100,000 traces) are gone when it exits, unless ``--workdir`` asked to keep them (bench/workdirs.py);
bench/versions.py also removes the other commit's worktree and its folder. bench/versions.py is run on a few
traces against this tree's own HEAD."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _run(tmp: Path, argv: list[str]) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TMPDIR": str(tmp)}  # every temp dir the bench makes lands here
    env.pop("PYTHONPATH", None)
    return subprocess.run(
        [sys.executable, *argv], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=False
    )


def test_a_bench_work_folder_goes_at_exit_unless_it_was_given(tmp_path: Path) -> None:
    temp, given = tmp_path / "temp", tmp_path / "given"
    temp.mkdir()
    code = (
        "import sys; sys.path.insert(0, 'bench'); from workdirs import workdir; "
        f"made = workdir(None, 'citeline-bench-'); kept = workdir({str(given)!r}, 'x-'); "
        "(made / 'traces').mkdir(); (made / 'traces' / 'a.jsonl').write_text('{}'); (kept / 'k').write_text('k'); "
        "print(made)"
    )
    done = _run(temp, ["-c", code])
    assert done.returncode == 0, done.stderr
    made = Path(done.stdout.strip())
    assert made.parent == temp and made.name.startswith("citeline-bench-")
    assert not made.exists() and list(temp.iterdir()) == []
    assert (given / "k").read_text() == "k"  # a folder the user named is theirs


@pytest.mark.slow
def test_the_versions_bench_leaves_nothing_behind_and_keeps_a_workdir(tmp_path: Path) -> None:
    temp, work = tmp_path / "temp", tmp_path / "work"
    temp.mkdir()
    argv = ["bench/versions.py", "--ref", "HEAD", "--n", "40", "--rounds", "1"]
    done = _run(temp, argv)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "claim rows that differ between the two runs: 0" in done.stdout
    assert list(temp.iterdir()) == []
    worktrees = subprocess.run(["git", "-C", str(ROOT), "worktree", "list"], capture_output=True, text=True, check=True)
    assert str(temp) not in worktrees.stdout
    kept = _run(temp, [*argv, "--workdir", str(work)])
    assert kept.returncode == 0, kept.stderr[-2000:]
    assert (work / "traces").is_dir() and (work / "gold.json").is_file()
    assert list(temp.iterdir()) == []
