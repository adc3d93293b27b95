"""Arize Phoenix both ways: spans pulled into the store (``pull``), verdicts written back as span
annotations (``annotate``), over the few REST calls in ``client``."""

from citeline.analyzer.phoenix.annotate import AnnotateReport, annotate
from citeline.analyzer.phoenix.client import PhoenixError
from citeline.analyzer.phoenix.pull import PullReport, pull

__all__ = ["AnnotateReport", "PhoenixError", "PullReport", "annotate", "pull"]
