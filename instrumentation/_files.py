"""The embedded default: OTLP/JSON lines files, one trace per line where possible.

:class:`OTLPJsonFileExporter` is a plain ``SpanExporter`` (usable under any
span processor). :class:`TraceFileProcessor` is what ``configure(trace_dir=)``
installs: ``on_end`` only appends to a list, a worker thread groups spans by
trace, waits for the trace's local root to end (or ``max_wait`` seconds) and
writes each trace as one line. Lines are written whole and flushed, so a
reader sees complete lines while the file grows; files rotate by size.

:class:`OTLPJsonLogExporter` writes log records the same way, one
``resourceLogs`` line per batch, into files of their own (``<prefix>-logs-...``)
in the same folder: the analyzer reads both from there and joins them by ids.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import BinaryIO, ClassVar

from opentelemetry.context import Context
from opentelemetry.sdk._logs import ReadableLogRecord
from opentelemetry.sdk._logs.export import LogRecordExporter, LogRecordExportResult
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from . import _guard
from .otlp_json import encode_line, encode_logs_line

DEFAULT_MAX_BYTES = 64 * 1024 * 1024
DEFAULT_MAX_QUEUE = 1_000_000


class _RotatingWriter:
    """Append-only ``.jsonl`` files under one folder, rotated by size."""

    def __init__(self, directory: Path, prefix: str, max_bytes: int) -> None:
        self.directory = directory
        self.prefix = prefix
        self.max_bytes = max_bytes
        self._file: BinaryIO | None = None
        self._size = 0
        self._seq = 0
        self._torn = False
        self.paths: list[Path] = []

    def _open(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
        self._seq += 1
        path = self.directory / f"{self.prefix}-{stamp}-{os.getpid()}-{self._seq:04d}.jsonl"
        # unbuffered: a failed write leaves nothing queued to be written again later
        self._file = open(path, "ab", buffering=0)  # noqa: SIM115 - kept open across writes
        self._size = 0
        self._torn = False
        self.paths.append(path)

    def write(self, data: bytes) -> None:
        """Append whole lines; on a failed write, take back the part that got out.

        A full disk can take the first bytes of a write and refuse the rest. The
        torn tail is truncated away (the file ends at its last whole line), or, if
        even that fails, the next write starts on a new line, so the torn piece
        never swallows the next whole trace.
        """
        if self._file is None or (self._size and self._size + len(data) > self.max_bytes):
            self.close()
            self._open()
        f = self._file
        assert f is not None
        if self._torn:
            data = b"\n" + data
        view = memoryview(data)
        done = 0
        try:
            while done < len(data):
                done += f.write(view[done:]) or 0
        except OSError:
            if done or self._torn:
                try:
                    os.truncate(f.fileno(), self._size)
                    self._torn = False
                except OSError:
                    self._torn = True
            raise
        self._size += len(data)
        self._torn = False

    def write_lines(self, lines: Sequence[bytes]) -> None:
        """Write whole lines, batching them into few writes, rotating between lines."""
        buf: list[bytes] = []
        size = 0
        for line in lines:
            room = self.max_bytes - self._size - size
            if buf and len(line) > room:
                self.write(b"".join(buf))
                buf, size = [], 0
            buf.append(line)
            size += len(line)
        if buf:
            self.write(b"".join(buf))

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


def _safe_prefix(name: str) -> str:
    keep = "".join(c if c.isalnum() or c in "-_." else "-" for c in name)
    return keep.strip("-") or "traces"


class _JsonLinesSink:
    """A rotating OTLP/JSON lines file sink: what the span and the log record exporters share.

    Lines are written under a lock until :meth:`shutdown`; a failed write (full disk) loses what it
    carried, logged once per failure episode and again, with the count lost, when writing works again.
    Each exporter names its files (``_suffix`` after the prefix; ``_files`` in log lines) and what they
    hold (``_items``, counted in ``_unit``), and exposes the lost count under its own public name.
    """

    _suffix: ClassVar[str] = ""
    _files: ClassVar[str]
    _items: ClassVar[str]
    _unit: ClassVar[str]

    def __init__(
        self,
        directory: str | os.PathLike[str],
        *,
        prefix: str = "citeline",
        max_bytes: int = DEFAULT_MAX_BYTES,
    ) -> None:
        self._writer = _RotatingWriter(Path(directory), _safe_prefix(prefix) + self._suffix, max_bytes)
        self._lock = threading.Lock()
        self._closed = False
        self._lost = 0

    @property
    def paths(self) -> list[Path]:
        """Files written so far, oldest first."""
        return list(self._writer.paths)

    def _write_lines(self, lines: Sequence[bytes], count: int) -> bool:
        """Write ``lines`` (``count`` items); False when the write failed (once shut down, nothing is written)."""
        with self._lock:
            if self._closed:
                return True
            try:
                self._writer.write_lines(lines)
            except OSError as exc:
                if not self._lost:
                    _guard.log.warning(
                        "citeline: writing %s under %s failed (%s); %s are lost until writing "
                        "works again, which will be logged",
                        self._files,
                        self._writer.directory,
                        exc,
                        self._items,
                    )
                self._lost += count
                return False
            if self._lost:
                _guard.log.warning(
                    "citeline: writing %s works again; %d %s were lost", self._files, self._lost, self._unit
                )
                self._lost = 0
            return True

    def shutdown(self) -> None:
        with self._lock:
            self._closed = True
            self._writer.close()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


class OTLPJsonFileExporter(_JsonLinesSink, SpanExporter):
    """Writes spans as OTLP/JSON lines, one line per trace in each batch."""

    _files = "trace files"
    _items = "traces"
    _unit = "trace(s)"

    @property
    def lost_traces(self) -> int:
        """Traces lost to failed writes in the current failure episode (0 while writing works)."""
        return self._lost

    def export_traces(self, traces: Sequence[Sequence[ReadableSpan]]) -> bool:
        """Write each group of spans (one trace) as one line; False when the write failed.

        A trace that cannot be encoded is left out alone (the others are written).
        A failed write (full disk) loses this batch; it is logged once per failure
        episode, and again when writing works again, with the count lost.
        """
        if not traces:
            return True
        lines = []
        for spans in traces:
            if not spans:
                continue
            try:
                lines.append(encode_line(spans))
            except Exception as exc:  # noqa: BLE001 - one bad trace must not cost the batch
                _guard.warn_once(
                    f"encode:{type(exc).__name__}", f"citeline: a trace could not be encoded and was left out: {exc!r}"
                )
        return self._write_lines(lines, len(lines))

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        groups: dict[int, list[ReadableSpan]] = {}
        for s in spans:
            groups.setdefault(s.context.trace_id if s.context else 0, []).append(s)
        ok = self.export_traces(list(groups.values()))
        return SpanExportResult.SUCCESS if ok else SpanExportResult.FAILURE


def _is_local_root(span: ReadableSpan) -> bool:
    return span.parent is None or span.parent.is_remote


class TraceFileProcessor(SpanProcessor):
    """Buffers ended spans and writes them trace by trace from a worker thread.

    ``on_end`` costs one list append under a lock. Nothing is dropped until
    ``max_queue`` spans wait unwritten (a disk far slower than the app);
    then the overflow is counted and logged once.
    """

    def __init__(
        self,
        exporter: OTLPJsonFileExporter,
        *,
        interval: float = 0.5,
        max_wait: float = 5.0,
        max_queue: int = DEFAULT_MAX_QUEUE,
    ) -> None:
        self.exporter = exporter
        self.interval = interval
        self.max_wait = max_wait
        self.max_queue = max_queue
        self.dropped = 0
        self._queue: list[ReadableSpan] = []
        self._cond = threading.Condition()
        self._flush_requests = 0
        self._flushed = 0
        self._stopping = False
        self._pending: dict[int, list[ReadableSpan]] = {}
        self._pending_since: dict[int, float] = {}
        self._thread = threading.Thread(target=self._run, name="citeline-trace-files", daemon=True)
        self._thread.start()

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        return None

    def on_end(self, span: ReadableSpan) -> None:
        with self._cond:
            if self._stopping:
                return
            if len(self._queue) >= self.max_queue:
                self.dropped += 1
                if self.dropped == 1:
                    _guard.log.warning(
                        "citeline: trace file queue full (%d spans); dropping spans until the writer catches up",
                        self.max_queue,
                    )
                return
            self._queue.append(span)
            if _is_local_root(span) and len(self._queue) >= 4096:
                self._cond.notify()

    def _run(self) -> None:
        while True:
            with self._cond:
                if not self._queue and not self._stopping and self._flush_requests == self._flushed:
                    self._cond.wait(self.interval)
                batch, self._queue = self._queue, []
                flush_to = self._flush_requests
                stopping = self._stopping
            try:
                self._write(batch, flush_all=stopping or flush_to != self._flushed)
            except Exception as exc:  # noqa: BLE001 - the worker must survive a bad batch
                _guard.log.warning("citeline: writing trace file failed: %r", exc)
            with self._cond:
                self._flushed = flush_to
                self._cond.notify_all()
                if stopping and not self._queue:
                    return

    def _write(self, batch: list[ReadableSpan], *, flush_all: bool) -> None:
        now = time.monotonic()
        complete: list[list[ReadableSpan]] = []
        pending, since = self._pending, self._pending_since
        for span in batch:
            tid = span.context.trace_id if span.context else 0
            group = pending.get(tid)
            if group is None:
                group = pending[tid] = []
                since[tid] = now
            group.append(span)
            if _is_local_root(span):
                complete.append(pending.pop(tid))
                del since[tid]
        if flush_all:
            complete.extend(pending.values())
            pending.clear()
            since.clear()
        else:
            for tid, t0 in list(since.items()):
                if now - t0 < self.max_wait:
                    break  # insertion order is age order
                complete.append(pending.pop(tid))
                del since[tid]
        self.exporter.export_traces(complete)

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        deadline = time.monotonic() + timeout_millis / 1000
        with self._cond:
            if not self._thread.is_alive():
                return False
            self._flush_requests += 1
            target = self._flush_requests
            self._cond.notify_all()
            while self._flushed < target:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(left)
        return True

    def shutdown(self) -> None:
        with self._cond:
            if self._stopping:
                return
            self._stopping = True
            self._cond.notify_all()
        self._thread.join(timeout=30)
        self.exporter.shutdown()


class OTLPJsonLogExporter(_JsonLinesSink, LogRecordExporter):
    """Writes log records as OTLP/JSON lines (``resourceLogs``), one line per batch, beside the trace
    files (same folder, ``<prefix>-logs-`` files rotated by size)."""

    _suffix = "-logs"
    _files = "log files"
    _items = "log records"
    _unit = "record(s)"

    @property
    def lost_records(self) -> int:
        """Log records lost to failed writes in the current failure episode (0 while writing works)."""
        return self._lost

    def export(self, batch: Sequence[ReadableLogRecord]) -> LogRecordExportResult:
        if not batch:
            return LogRecordExportResult.SUCCESS
        try:
            line = encode_logs_line(batch)
        except Exception as exc:  # noqa: BLE001 - a record that cannot be encoded must not stop the app
            _guard.warn_once(
                f"encode-logs:{type(exc).__name__}",
                f"citeline: log records could not be encoded and were left out: {exc!r}",
            )
            return LogRecordExportResult.FAILURE
        ok = self._write_lines([line], len(batch))
        return LogRecordExportResult.SUCCESS if ok else LogRecordExportResult.FAILURE
