"""The test suite runs from a lone clone: its data lives in tests/data, unchanged, with origin and licence."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

TESTS = Path(__file__).resolve().parent
SUMS = {
    "expertqa/rand_test.jsonl": "022d6c19bdd91fb33c3185ef59f9c18510655c15598061e631c434487aa07b28",
    "expertqa/domain_test.jsonl": "7a1895dbcf16c4fc135116996d1bdb22412b8d791e620241ac9e80729d55ea6b",
    "wice/claim_test.jsonl": "4c91b9e9590cfcd8f8a0f7288b5ff315af8ade946d7bf26f50fbd671bb86dbe8",
    "rgb/en_fact.jsonl": "92f4b2330ee407f74fbd923197028ef5140cfbc1f4b4092efec2d4d10ae6c9e5",
}


def test_vendored_files_are_unchanged_and_carry_origin_and_licence() -> None:
    for name, digest in SUMS.items():
        path = TESTS / "data" / name
        assert hashlib.sha256(path.read_bytes()).hexdigest() == digest, name
        assert (path.parent / "LICENSE").is_file()
        assert digest in (path.parent / "ORIGIN.md").read_text()


def test_no_test_reads_outside_the_repository() -> None:
    outside = re.compile(r"parents\[1\]\.parent|\.\./shared|\"shared\"")
    offenders = [p.name for p in TESTS.glob("*.py") if p.name != Path(__file__).name and outside.search(p.read_text())]
    assert offenders == []


def test_the_repository_cites_only_what_it_holds() -> None:
    """The design lives in docs/: nothing points at a DESIGN.md outside the repository."""
    root = TESTS.parent
    files = [
        *root.glob("*.md"),
        *root.glob("docs/*.md"),
        *root.glob("analyzer/**/*.py"),
        *root.glob("instrumentation/*.py"),
    ]
    files += [*root.glob("queries/*.sql"), *root.glob("examples/*.py")]
    assert [p.name for p in files if "DESIGN" in p.read_text()] == []
    for link in re.findall(r"\]\((docs/[\w.-]+\.md)", (root / "README.md").read_text()):
        assert (root / link).is_file(), link
