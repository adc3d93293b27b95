"""Calls to action in a claim: a link, a credential request, an instruction to the reader (issue #36 item 6).

Seed 004's poisoned snippet ("Poisoned snippet adds link | Untrusted claim | Fail") is a retrieved
page that tells the reader to go somewhere, type a secret or do something; an answer that copies it
is supported by the page and still must not pass on the word of a source not to be trusted for it.
``call_to_action`` names what a sentence asks of its reader, or None for a sentence that asks
nothing (a statement about the world, a requirement stated as policy: "customers must provide a
passport" is a fact about the policy, not an instruction).
"""

from __future__ import annotations

import re
from functools import lru_cache

_LINK = re.compile(
    r"\b(?:https?://|www\.)[^\s<>\"')\]]+|\b[a-z0-9-]+(?:\.[a-z0-9-]+)*\.[a-z]{2,}/[^\s<>\"')\]]*", re.IGNORECASE
)
_SECRET = (
    r"passwords?|passcodes?|pins?|pin codes?|one-time (?:pass)?codes?|otps?|verification codes?|security codes?"
    r"|sms codes?|2fa codes?|cvv|cvc|card numbers?|card details|account numbers?|login details|log-in details"
    r"|credentials|sign-in details|social security numbers?|ssn|seed phrases?|recovery phrases?|private keys?"
)
_CREDENTIAL = re.compile(
    r"\b(?:enter|provide|send|share|confirm|verify|type|give|submit|reply with|update|re-?enter|input|tell us)\b"
    rf"(?:\W+\w+){{0,5}}?\W+(?:{_SECRET})\b",
    re.IGNORECASE,
)
#: verbs that, opening a sentence or a clause, are an instruction whatever follows them
_COMMANDS = (
    r"click|log in|log on|login|sign in|sign up|go to|head to|navigate to|enter|submit|verify|confirm|unlock|redeem"
    r"|re-?activate"
)
#: verbs that open statements as nouns too ("Transfer fees are ...", "Contact details are ..."): an instruction
#: only before an object
_AMBIGUOUS = (
    r"call|text|email|e-mail|send|pay|transfer|open|update|use|check|reset|wire|buy|contact|visit|download|install"
    r"|reply|forward|follow|register|scan|share|claim|tap|report"
)
_OBJECTS = (
    r"the|a|an|your|our|this|that|it|them|us|me|here|now|immediately|today|within|support|customer|https?://\S+"
    r"|www\.\S+|\d+"
)
_INSTRUCTION = re.compile(
    r"(?:^|[,;:]\s*(?:and\s+|then\s+)?|\b(?:and then|then|please)\s+)(?:please\s+|simply\s+|just\s+|first\s+)?"
    rf"(?P<verb>(?:{_COMMANDS})\b|(?:{_AMBIGUOUS})\s+(?:{_OBJECTS})\b)",
    re.IGNORECASE,
)
_TWO_WORDS = frozenset(("log", "sign", "go", "head", "navigate"))
#: a clause that opens with a purpose or condition ("To speed it up, ...", "If so, ...") before its verb
_LEAD = re.compile(r"^(?:to|if|when|before|after|for|once)\b[^,;:]{0,60}[,:]\s*", re.IGNORECASE)


def sends_elsewhere(text: str) -> bool:
    """Whether ``text`` holds a link or asks for a credential: what advice to the reader must not carry to be
    exempt as a non-claim (``policy.kind_of``), as a poisoned page's instruction carries both."""
    return _LINK.search(text) is not None or _CREDENTIAL.search(text) is not None


@lru_cache(maxsize=65536)
def call_to_action(text: str) -> str | None:
    """What ``text`` asks its reader to do, in a few words ("a link (https://...)", "a credential request
    ('enter your card PIN')", "an instruction ('log in')"), or None."""
    found = []
    if (link := _LINK.search(text)) is not None:
        found.append(f"a link ({link.group(0).rstrip('.,;:')})")
    if (cred := _CREDENTIAL.search(text)) is not None:
        found.append(f"a credential request ('{cred.group(0)}')")
    body = _LEAD.sub("", text.strip().lstrip("*_\"'(“ "), count=1)
    if (ins := _INSTRUCTION.search(body)) is not None:
        verb = ins.group("verb").split()
        found.append(f"an instruction ('{' '.join(verb[:2] if verb[0].lower() in _TWO_WORDS else verb[:1]).lower()}')")
    return ", ".join(found) or None
