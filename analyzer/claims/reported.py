"""Claims that state what a named source says, and the sources a name can mean (issue #36 item 5).

"The memo says the payment settled [1]" is not a claim that the payment settled: it reports what the
memo says, and is true when the memo says it, whatever the ledger beside it says. ``reported`` reads
such a sentence into what it says the source says (``content``) and the words that name the source
(``name``); ``names`` gives a source's own words (its title, document id, uri, chunk id), and a name
means a source when every word of the name is among them (``means``). A generic name ("the source",
"the document") means whatever the claim cites.

The reading is the sentence's frame only: "X says / states / shows / reports / notes ... [that] C",
"according to X, C", "C, according to X", "as per X, C", "as stated in X, C". A name that means no
source the claim was given is no attribution (the sentence is judged whole, as any other claim).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache
from typing import NamedTuple

from citeline.analyzer.text import fold

_PRESENT = (
    "says|states|shows|reports|notes|records|lists|indicates|confirms|claims|mentions|specifies|explains|describes"
    "|writes|suggests|warns|estimates|finds"
)
#: past forms read as adjectives too ("listed items may be returned"): a report only before "that" or a determiner
_PAST = (
    "said|stated|showed|reported|noted|recorded|listed|indicated|confirmed|claimed|mentioned|specified|explained"
    "|described|wrote|suggested|warned|estimated|found"
)
_VERBS = f"{_PRESENT}|{_PAST}"
_OPENS = r"that|the|a|an|it|its|this|these|those|their|his|her|no|all|some|every|each|there|only"
_NAME = r"(?P<name>[\w][\w'.#-]*(?:\s+[\w][\w'.#-]*){0,4}?)"
_FRAMES = (
    # "According to the ledger, C", "As stated in the memo, C", "As per the ledger, C"
    re.compile(
        r"^(?:according to|as per|per|as (?:stated|noted|recorded|shown|reported|described|listed|set out|written)"
        rf" (?:in|by))\s+{_NAME}\s*[,:]\s*(?P<content>.+)$",
        re.IGNORECASE,
    ),
    # "C, according to the ledger"
    re.compile(rf"^(?P<content>.+?),?\s+according to\s+{_NAME}$", re.IGNORECASE),
    # "The memo says (that) C", "The general ledger still shows C", "The memo stated that C"
    re.compile(
        rf"^{_NAME}\s+(?:(?:still|also|only|now|currently|clearly|explicitly)\s+)?"
        rf"(?:(?:{_PRESENT})\s+|(?:{_PAST})\s+(?=(?:{_OPENS})\b))(?:that\s+)?(?P<content>.+)$",
        re.IGNORECASE,
    ),
)
#: a subject holding one of these is a clause ("Refunds are reported ..."), not a source's name
_CLAUSE_WORDS = frozenset(
    "is are was were be been being has have had can could will would may might must should shall do does did "
    "not no never as".split()
)
#: words of a name that say which, not what: dropped before a name is matched
_DETERMINERS = frozenset("the a an our your their its this that these those latest current".split())
#: a name that is a pronoun or a clause's subject, not a source
_NOT_NAMES = frozenset("it he she they we i you there this that which who what one everyone someone".split())
#: names that mean the claim's own citation ("the source says ..."), whatever it is called
GENERIC = frozenset(
    "source document doc passage article text context snippet page excerpt record file result reference "
    "search citation cited retrieved provided given".split()
)
_WORDS = re.compile(r"[^\W_]+")
#: a word every frame holds: a sentence with none of them is read no further (most sentences)
_TRIGGERS = frozenset(_VERBS.split("|")) | {"according", "per"}


class Reported(NamedTuple):
    """What a sentence says a named source says, and the name's words (determiners dropped, singular)."""

    content: str
    name: frozenset[str]


def _singular(w: str) -> str:
    return w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w


def words(*fields: str) -> frozenset[str]:
    """The folded, singular words of ``fields`` (a title, a document id, a uri, a chunk id)."""
    return frozenset(_singular(w) for f in fields for w in _WORDS.findall(fold(f)))


@lru_cache(maxsize=65536)
def reported(text: str) -> Reported | None:
    """The source a sentence reports and what it says that source says; None for any other sentence."""
    t = text.strip().rstrip(".!;").strip()
    if _TRIGGERS.isdisjoint(t.lower().replace(",", " ").split()):
        return None
    for frame in _FRAMES:
        m = frame.match(t)
        if m is None:
            continue
        raw = fold(m.group("name")).split()
        if not raw or (raw[0] in _NOT_NAMES and len(raw) == 1) or not _CLAUSE_WORDS.isdisjoint(raw):
            continue
        name = frozenset(_singular(w) for r in raw for w in _WORDS.findall(r) if w not in _DETERMINERS)
        content = m.group("content").strip(" ,:")
        if name and _WORDS.search(content):
            return Reported(content[:1].upper() + content[1:] + ".", name)
    return None


def is_generic(name: frozenset[str]) -> bool:
    """Whether a name means the claim's citation ("the source", "the cited document")."""
    return name <= GENERIC


def means(name: frozenset[str], source: frozenset[str]) -> bool:
    """Whether a name (``Reported.name``) means a source, given the source's ``words``."""
    return bool(name) and name <= source


def named(name: frozenset[str], sources: Iterable[tuple[str, frozenset[str]]]) -> list[str]:
    """The ids of the sources (id, words) a name means, in their order."""
    return [i for i, w in sources if means(name, w)]
