"""Hooks for test harnesses: capture the spans of the code under test in memory, perturb what a stage hands on.

A supported, public module of ``citeline.instrumentation``, for the pytest plugin and the
perturbation harness of ``citeline.analyzer.testing`` (and any harness of the app's own). The
machinery stays private (``_capture``, ``_perturb``); these are the names a harness uses:

- :func:`capture` points the decorators at an in-memory exporter for a ``with`` block, takes over
  the app's SDK tracer and logger providers (``handle.provider`` / ``handle.logger_provider``, the
  global ones) so an instrumentor's spans and log records made in the block are captured too, and
  puts the app's own setup back after it (:class:`Captured` holds the spans and records;
  :class:`CaptureError` says the code under test called ``configure()`` inside the block).
- :func:`perturbing` makes one :class:`Change` active for the code run inside a ``with`` block:
  the stage it targets hands on the changed value, and its span says so
  (``citeline.perturbation``). A change sees what the request showed so far as a
  :class:`RequestView`. Off everywhere else.

Standard library and OpenTelemetry only, like the rest of ``citeline.instrumentation``.
"""

from ._capture import Captured, CaptureError, capture
from ._perturb import Change, RequestView, perturbing

__all__ = ["CaptureError", "Captured", "Change", "RequestView", "capture", "perturbing"]
