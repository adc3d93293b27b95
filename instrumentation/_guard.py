"""Keep citeline's own failures away from the host app.

Telemetry errors are logged once per place and swallowed; the host
function's own exceptions are never touched here. With ``CITELINE_STRICT=1``
(set by our test suite) citeline's internal errors re-raise so our bugs fail
tests; errors raised by user hooks such as ``to_chunks=`` are always
swallowed, because they belong to the app, not to us.
"""

from __future__ import annotations

import logging
import threading

from . import settings

log = logging.getLogger("citeline")

_seen: set[tuple[str, str]] = set()
_lock = threading.Lock()


def strict() -> bool:
    """True when internal errors should propagate (our own test suite)."""
    return settings.STRICT.get() == "1"


def report(where: str, exc: BaseException, *, user_hook: bool = False) -> None:
    """Log an instrumentation failure once per (place, error type); maybe re-raise."""
    if strict() and not user_hook:
        raise exc
    key = (where, type(exc).__name__)
    with _lock:
        first = key not in _seen
        _seen.add(key)
    if first:
        log.warning(
            "citeline: %s failed (%s: %s); the app carries on, this stage's telemetry is "
            "incomplete. Further errors of this kind are logged at DEBUG.",
            where,
            type(exc).__name__,
            exc,
        )
    else:
        log.debug("citeline: %s failed again: %r", where, exc)


def warn_once(key: str, message: str) -> None:
    """Log a warning about how the app is wired, once per process for each ``key``.

    For things the app can fix (a chunk without an id, a prompt with no chunks
    to look for), never raised, not even under ``CITELINE_STRICT``.
    """
    with _lock:
        first = ("warn", key) not in _seen
        _seen.add(("warn", key))
    if first:
        log.warning(message)
