"""Arize Phoenix: spans pulled into the store, verdicts written back as span annotations."""
