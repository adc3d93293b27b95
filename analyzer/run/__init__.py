"""One run, as its named steps: ingest -> join -> split/match -> judge -> classify -> store (docs/design.md)."""
