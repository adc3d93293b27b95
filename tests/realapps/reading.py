"""How the two stand-in models read a prompt: numbered sources in, the best source per question part out.

A stand-in for a hosted model (none can run here), shared by both apps' fake models. It reads the
sources as a real model would see them (a label, a title or id line, the text), splits the question
on " and " into parts and answers each part with the source sharing the most words with it (at least
two); of two versions of one document that score alike it follows the newer one. With no part
answered it declines.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_WORD = re.compile(r"[a-z0-9$%.]*[a-z0-9$%]")
_STOP = frozenset(
    """a an the is are be can i my of on or to for in with what how do does it its by and there after
    much many when who which me you your our we at as from this that per each any need much long""".split()
)


def stem(word: str) -> str:
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def words(text: str) -> set[str]:
    return {stem(w) for w in _WORD.findall(text.lower()) if w not in _STOP}


def version_number(version: str) -> int:
    digits = re.findall(r"\d+", version)
    return int(digits[-1]) if digits else -1


@dataclass(frozen=True)
class Source:
    """One source as the prompt shows it."""

    label: str
    doc_id: str
    version: str
    text: str
    chunk_id: str = ""  # only when the prompt names it (the JSON mode's prompt does)


@dataclass(frozen=True)
class Pick:
    source: Source
    sentence: str  # the source's sentence, without its final full stop


def pick(question: str, sources: list[Source], min_shared: int = 2) -> list[Pick]:
    """The source answering each part of the question, in the order of the parts (each source once)."""
    picks: list[Pick] = []
    for part in re.split(r"\s+and\s+(?=how|what|when|which|who|is|are|can|do|does)", question, flags=re.I):
        q = words(part)
        best: tuple[int, int, int, Source] | None = None  # shared, -prompt position, version, source
        for position, s in enumerate(sources):
            shared = len(q & words(s.text))
            if shared < min_shared:
                continue
            key = (shared, -position, version_number(s.version), s)
            if best is None or key[0] > best[0]:
                best = key
            elif key[0] == best[0] and s.doc_id == best[3].doc_id and key[2] > best[2]:
                best = key  # the same passage in a newer version: follow it
        if best is not None and all(p.source != best[3] for p in picks):
            picks.append(Pick(best[3], best[3].text.strip().rstrip(".")))
    return picks
