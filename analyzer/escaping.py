"""Untrusted text made safe for the medium it is written to, in one place per medium.

Trace files, chunk texts, ids, answers and gold files come from other people's systems;
citeline stores them as they came and escapes them once, where they are written:

- :func:`term` for a terminal: escape sequences (colours, OSC-8 links, clear-screen) and
  every other control or bidirectional-override character removed, line breaks as spaces;
- :func:`md` for Markdown (a PR comment, a chat message, GitHub's renderer): no HTML, no
  link, image or autolink, no emphasis, no table pipe survives; URLs are shown as code;
- HTML is escaped by ``_report_html`` (``html.escape`` on every field, links only to
  http(s) Phoenix URLs).

Ids become link or annotation targets only when they are what OTLP says they are:
:func:`is_span_id` (16 hex digits) and :func:`is_trace_id` (32).
"""

from __future__ import annotations

import html
import re
import unicodedata

_SPAN_ID = re.compile(r"[0-9a-f]{16}")
_TRACE_ID = re.compile(r"[0-9a-f]{32}")


def is_span_id(value: object) -> bool:
    """A span id as OTLP/JSON writes it (16 lowercase hex digits, not all zero)."""
    return isinstance(value, str) and _SPAN_ID.fullmatch(value) is not None and value != "0" * 16


def is_trace_id(value: object) -> bool:
    """A trace id as OTLP/JSON writes it (32 lowercase hex digits, not all zero)."""
    return isinstance(value, str) and _TRACE_ID.fullmatch(value) is not None and value != "0" * 32


# ESC followed by a CSI, OSC, DCS/SOS/PM/APC string or a single-character sequence; 8-bit CSI/OSC too
_ESCAPES = re.compile(
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]"  # CSI: colours, cursor moves, clear-screen
    r"|(?:\x1b\]|\x9d)[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"  # OSC: titles, OSC-8 hyperlinks
    r"|(?:\x1b[PX^_]|[\x90\x98\x9e\x9f])[^\x1b\x9c]*(?:\x1b\\|\x9c)?"  # DCS, SOS, PM, APC strings
    r"|\x1b[ -~]?"  # any other escape
)
_BREAKS = re.compile(r"[\t\n\r\v\f\x85\u2028\u2029]+")


def _unsafe(ch: str) -> bool:
    cat = unicodedata.category(ch)
    # Cc: controls; Cf covers bidi overrides/isolates (U+202A-202E, U+2066-2069) and other
    # invisible formatting that can make text read other than it is
    return cat == "Cc" or (cat == "Cf" and ch not in "\u200d")


def term(text: object) -> str:
    """``text`` for a terminal: one line, no escape sequence, no control character."""
    s = _ESCAPES.sub("", str(text))
    s = _BREAKS.sub(" ", s)
    if s.isascii() and s.isprintable():
        return s
    return "".join(ch for ch in s if not _unsafe(ch))


# what GitHub's renderer would turn into a link without any syntax (GFM autolinks)
# (and the schemes other renderers link or that only an attacker writes in prose)
_AUTOLINK = re.compile(
    r"(?:\b(?:https?|ftp|file)://[^\s<>]*|\b(?:mailto|xmpp|javascript|vbscript|data):[^\s<>]*"
    r"|\bwww\.[^\s<>]+|[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,})",
    re.IGNORECASE,
)
# the ASCII punctuation that makes emphasis, code, links, images, strikethrough or a table cell
# anywhere in a line (a cell never starts a line, so list, heading and rule markers are plain text)
_MD_PUNCT = re.compile(r"([\\`*_\[\]!|~])")


def _md_plain(s: str) -> str:
    s = s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    s = _MD_PUNCT.sub(r"\\\1", s)
    # an underscore inside a word never emphasises (GFM): ids such as unknown_case_id stay readable
    return _INTRAWORD.sub("_", s)


_INTRAWORD = re.compile(r"(?<=[A-Za-z0-9])\\_(?=[A-Za-z0-9])")


def _md_code(s: str) -> str:
    """``s`` as an inline code span: literal text, never a link (pipes escaped for tables)."""
    longest = max((len(m) for m in re.findall(r"`+", s)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if s.startswith("`") or s.endswith("`") else ""
    return f"{fence}{pad}{s.replace('|', chr(92) + '|')}{pad}{fence}"


def md(text: object) -> str:
    """``text`` for a Markdown table cell or line: shown as written, never interpreted.

    HTML is entity-escaped, Markdown punctuation backslash-escaped, and anything GitHub would
    autolink (a URL, ``www.``, an e-mail address) becomes inline code, so no link and no image
    reaches the reader from a trace."""
    s = term(text)
    out: list[str] = []
    pos = 0
    for m in _AUTOLINK.finditer(s):
        out.append(_md_plain(s[pos : m.start()]))
        out.append(_md_code(m.group(0)))
        pos = m.end()
    out.append(_md_plain(s[pos:]))
    return "".join(out)


_HTML_CONTROLS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def html_text(text: object, quote: bool = True) -> str:
    """``text`` for HTML: entity-escaped (quotes too, so it is safe in an attribute), with control,
    escape and bidi-override characters removed (a browser shows them as nothing or as boxes)."""
    return html.escape(_HTML_CONTROLS.sub("", _ESCAPES.sub("", str(text))), quote=quote)


__all__ = ["html_text", "is_span_id", "is_trace_id", "md", "term"]
