"""Analyze spans held in memory (a test's capture) with the very ``analyze`` the CLI runs.

The spans (citeline's and the instrumentors') are written as one OTLP/JSON
file, one line per trace, as the embedded exporter writes them; the log
records captured beside them (GenAI content emitted as events) as one
``resourceLogs`` line in a file of their own, as citeline's log exporter
writes them. Both go to a folder the caller owns, a pytest ``tmp_path`` for
instance, and are analyzed as any trace folder is, into a DuckDB store in
memory that lives as long as the :class:`CapturedStore`: nothing is shared
between two tests or two xdist workers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import duckdb
from opentelemetry.sdk.trace import ReadableSpan

from citeline.analyzer.run.analyze import analyze
from citeline.analyzer.run.result import AnalysisResult
from citeline.analyzer.store import connect
from citeline.instrumentation.otlp_json import encode_line, encode_logs_line


def write_traces(spans: Sequence[ReadableSpan], path: Path) -> Path:
    """``spans`` as an OTLP/JSON lines file, one line per trace in the order traces started."""
    by_trace: dict[int, list[ReadableSpan]] = {}
    for s in spans:
        if s.context is not None:
            by_trace.setdefault(s.context.trace_id, []).append(s)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as f:
        for group in by_trace.values():
            f.write(encode_line(group))
    return path


class CapturedStore:
    """A store in memory for the analyses of one test (or one perturbation run)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.con: duckdb.DuckDBPyConnection | None = None
        self._files = 0

    def analyze(
        self,
        spans: Sequence[ReadableSpan],
        gold: str | Path,
        *,
        judge: Any = "rules",
        judge_options: Mapping[str, Any] | None = None,
        labels: str | Path | None = None,
        logs: Sequence[Any] = (),
    ) -> AnalysisResult:
        """One analyze run over ``spans`` (everything captured so far) and the ``logs`` records emitted
        beside them (``ReadableLogRecord``s) against ``gold``."""
        self._files += 1
        path = write_traces(spans, self.folder / f"captured-{self._files}.jsonl")
        files = [path]
        if logs:
            files.append(self.folder / f"captured-{self._files}-logs.jsonl")
            files[-1].write_bytes(encode_logs_line(logs))
        if self.con is None:
            self.con = connect(":memory:")
        return analyze(
            ":memory:",
            gold=gold,
            traces=files,
            judge=judge,
            judge_options=judge_options,
            labels=labels,
            con=self.con,
        )

    def close(self) -> None:
        if self.con is not None:
            self.con.close()
            self.con = None
