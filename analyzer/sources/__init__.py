"""Trace sources: OTLP/JSON files and object storage read into the store (ingest), and the text work each
source needs beside the SQL that decodes it (OpenInference documents, prompt context, JSON answers)."""
