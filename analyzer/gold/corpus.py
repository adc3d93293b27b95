"""The corpus a run reads without (or beside) gold cases: ``analyze --corpus FILE``.

A corpus file is any of: a JSON-lines file of corpus records (one chunk a line, the fields of a gold
file's ``corpus:`` entries: docs/gold-format.md), a gold folder (its ``corpus.jsonl``; ``cases.jsonl``
is not read), or a YAML/JSON gold file (its ``corpus:`` list; its ``cases:`` are not read). With
``--gold`` too, the corpus file's chunks join the gold set's corpus: a chunk both hold alike is
read once (a gold set's corpus is usually a part of the full one), a chunk id both hold with other
fields (text, version, dates, ACL) is named once and the gold set's entry is kept.
"""

from __future__ import annotations

from pathlib import Path

from citeline.analyzer.gold.goldset import GoldError, GoldSet, _fill_corpus, _jsonl, _Records, load_gold


def load_corpus(path: str | Path) -> GoldSet:
    """The chunks of a corpus file as a gold set with no cases; problems in ``.errors`` (file, line, field)."""
    path = Path(path)
    if not path.exists():
        gold = GoldSet(source=str(path))
        gold.errors.append(GoldError(str(path), "-", "-", "no such file or folder"))
        gold.unreadable = "no such file or folder"
        return gold
    if path.is_file() and path.suffix == ".jsonl":
        gold = GoldSet(source=str(path))
        r = _Records(str(path))
        _fill_corpus(gold, r, list(_jsonl(path, r)))
        gold.errors.extend(r.errors)
        return gold
    if path.is_dir() and not (path / "cases.jsonl").exists() and (path / "corpus.jsonl").is_file():
        return load_corpus(path / "corpus.jsonl")
    loaded = load_gold(path)
    return GoldSet(corpus=loaded.corpus, errors=loaded.errors, source=str(path), unreadable=loaded.unreadable)


def merge(gold: GoldSet, corpus: GoldSet) -> None:
    """Add ``corpus``'s chunks to ``gold``'s corpus (the gold set's entry wins a shared id; named when the two
    entries differ)."""
    for cid, chunk in corpus.corpus.items():
        if cid in gold.corpus and gold.corpus[cid] == chunk:
            continue
        if cid in gold.corpus:
            gold.errors.append(
                GoldError(
                    corpus.source,
                    "-",
                    "chunk_id",
                    f"{cid!r} is also in the gold set's corpus, with other fields; the gold set's entry is kept",
                )
            )
            continue
        gold.corpus[cid] = chunk
    gold.errors.extend(corpus.errors)


__all__ = ["load_corpus", "merge"]
