"""Secrets never leave: URLs and texts made safe to print, store or link.

One definition, used by the instrumentation (an OTLP endpoint in a log line) and the
analyzer (a Phoenix or model endpoint in an error, a report link, the store): a supported,
public module of ``citeline.instrumentation`` (``citeline.instrumentation.redact``), so the
two halves cannot drift on what counts as a secret. Standard library only: this module runs
inside the host app.

- :func:`redact_url` is for people (messages, logs, the store): credentials become
  ``***`` so a reader sees that some were given, never what they were.
- :func:`public_url` is for links: credentials are removed, the link still works for
  someone who is signed in.
- :func:`redact_text` is for any text that may quote a secret (an error body, a model's
  reply): known secret values, bearer tokens and URL credentials become ``***``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

MASK = "***"
#: query parameter names that carry credentials (matched case-insensitively, anywhere in the name)
_SECRET_PARAM = re.compile(
    r"(key|token|secret|passw|pwd|auth|signature|sig$|credential|session|code$|jwt|bearer)", re.IGNORECASE
)
_URL = re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s\"'<>]+")
_BEARER = re.compile(r"\b(Bearer|Basic|Token)\s+[A-Za-z0-9._~+/=-]{4,}", re.IGNORECASE)
_KEYLIKE = re.compile(r"\b(sk|pk|rk|api|key)[-_][A-Za-z0-9_-]{12,}")


def _split(url: str, keep_credentials: bool) -> str:
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = parts.port
    except ValueError:
        return MASK  # not a URL we can take apart: show nothing of it
    netloc = parts.netloc
    if "@" in netloc:
        hostport = host + (f":{port}" if port is not None else "")
        if ":" in host:  # an IPv6 literal
            hostport = f"[{host}]" + (f":{port}" if port is not None else "")
        netloc = (f"{MASK}@" if keep_credentials else "") + hostport
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        safe = [
            (k, MASK if _SECRET_PARAM.search(k) else v)
            for k, v in pairs
            if keep_credentials or not _SECRET_PARAM.search(k)
        ]
        query = urlencode(safe, safe="*")
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def redact_url(url: str) -> str:
    """``url`` with its userinfo and credential-like query values shown as ``***``.

    A URL without credentials comes back unchanged, so it stays a stable key."""
    if "@" not in url and "?" not in url:
        return url
    return _split(url, keep_credentials=True)


def public_url(url: str) -> str:
    """``url`` without userinfo and without credential-like query parameters: safe as a link."""
    if "@" not in url and "?" not in url:
        return url
    return _split(url, keep_credentials=False)


def redact_text(text: str, secrets: Iterable[str | None] = ()) -> str:
    """``text`` with known secret values, bearer/basic tokens, key-like tokens and URL
    credentials replaced by ``***``."""
    for s in secrets:
        if s and len(s) >= 4:
            text = text.replace(s, MASK)
    text = _URL.sub(lambda m: redact_url(m.group(0)), text)
    text = _BEARER.sub(lambda m: f"{m.group(1)} {MASK}", text)
    return _KEYLIKE.sub(MASK, text)


__all__ = ["MASK", "public_url", "redact_text", "redact_url"]
