"""The gold evidence set: cases, claims, support bundles and the corpus, read from YAML, JSON or folders."""
