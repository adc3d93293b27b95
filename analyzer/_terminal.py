"""Text bound for a terminal: untrusted fields never carry escape or control sequences."""

from __future__ import annotations

import re

# CSI / OSC / other ESC sequences, then any C0/C1 control character left (newlines and tabs included)
_ESCAPES = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-Z\\-_])|\x9b[0-?]*[ -/]*[@-~]")
_CONTROLS = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def for_terminal(text: object) -> str:
    """``text`` on one line, with terminal escape sequences removed and control characters shown as spaces
    (bidirectional overrides too: a claim cannot reorder what the reader sees)."""
    return _CONTROLS.sub(" ", _ESCAPES.sub("", str(text)))
