"""What becomes a claim: which unit a citation covers, and which text needs no citation.

Two settings, each with a default, overridden per run (``analyze(attach=..., exempt=...)``, ``--attach``,
``--exempt``), per gold file (a top-level ``policy:`` mapping) and, for ``attach``, per gold case (the
case's ``attach:`` field); the most specific wins: case, then run, then gold file, then the default.
docs/analyzer.md ("How an answer becomes claims") has one example of each.

**Attachment** (``ATTACH``): the unit a citation marker covers.

- ``auto`` (the default): a marker followed by a clause boundary (``, and``, ``;``, ``, while``, a
  second predicate) covers its clause; a block (paragraph, list item, table row) whose only markers
  close it has them cover every factual unit of the block; a table row is one claim (its cells labelled
  by their headers, "Plan: Pro; price: $20"), its markers covering it, each factual cell a candidate a
  gold claim one cell answers may take;
- ``sentence``: a marker covers its sentence; a table row is one claim;
- ``clause``: a marker covers its clause; nothing else is shared;
- ``bullet``: a list item is one claim, whatever its sentences;
- ``paragraph``: a paragraph's final markers cover every factual sentence of it without markers;
- ``table-cell``: each factual cell is a claim, with its row and column headers; a marker covers its cell;
- ``table-row``: as ``table-cell``, and a row's final markers cover every cell of the row without markers.

**Citation required** (``EXEMPT_KINDS``): text of these kinds is no claim, so never ``uncited``;
each is counted per run. ``exempt`` names the kinds that need no citation (all of them by default;
``none`` requires a citation of everything factual).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from functools import cached_property

from citeline.analyzer.claims.actions import sends_elsewhere
from citeline.instrumentation.labels import DEFAULT_SHAPE, Shape

ATTACH = ("auto", "sentence", "clause", "bullet", "paragraph", "table-cell", "table-row")
DEFAULT_ATTACH = "auto"
#: kinds of text that need no citation under the default policy (``exempt``), in the order reports list them
EXEMPT_KINDS = (
    "greeting",
    "transition",
    "question",
    "meta",
    "advice",
    "heading",
    "table_header",
    "list_number",
    "bibliography",
)
#: never a claim, whatever the policy: a sentence with too little to check ("No.", "Yes."), a code block
ALWAYS_SKIPPED = ("not_factual", "code")
SKIP_KINDS = EXEMPT_KINDS + ALWAYS_SKIPPED


@dataclass(frozen=True)
class Policy:
    """How one answer is split: the attachment unit, the kinds exempt from citation, and the shape of
    the label map its generation was given (which brackets are citations)."""

    attach: str = DEFAULT_ATTACH
    exempt: frozenset[str] = field(default_factory=lambda: frozenset(EXEMPT_KINDS))
    shape: Shape = DEFAULT_SHAPE

    @cached_property
    def key(self) -> str:
        """What a split answer is keyed by (the same answer under two policies is split twice): a short
        digest of :meth:`describe`, the same in every process."""
        return hashlib.blake2b(self.describe().encode(), digest_size=8).hexdigest()

    def describe(self) -> str:
        """The policy in one line: attachment | exempt kinds | label shape."""
        return f"{self.attach}|{','.join(k for k in EXEMPT_KINDS if k in self.exempt)}|{self.shape.key}"


DEFAULT_POLICY = Policy()


class PolicyError(ValueError):
    """A policy setting names something citeline does not know; the message says what it accepts."""


def attach_policy(value: object, where: str = "attach") -> str:
    """``value`` as an attachment policy, or :class:`PolicyError` naming the choices."""
    name = str(value).strip().lower().replace("_", "-") if isinstance(value, str) else ""
    if name not in ATTACH:
        raise PolicyError(f"{where}: {value!r} is not an attachment policy; one of {', '.join(ATTACH)}")
    return name


def exempt_kinds(value: object, where: str = "exempt") -> frozenset[str]:
    """A list (or comma-separated text) of kinds that need no citation; ``none`` is the empty set, ``all``
    every kind."""
    items: Iterable[object]
    if isinstance(value, str):
        items = [v for v in value.split(",") if v.strip()]
    elif isinstance(value, list | tuple | set | frozenset):
        items = value
    else:
        raise PolicyError(f"{where}: must be a list of kinds ({', '.join(EXEMPT_KINDS)}), 'all' or 'none'")
    names = [str(v).strip().lower().replace("-", "_") for v in items]
    if names in (["none"], []):
        return frozenset()
    if names == ["all"]:
        return frozenset(EXEMPT_KINDS)
    unknown = [n for n in names if n not in EXEMPT_KINDS]
    if unknown:
        raise PolicyError(
            f"{where}: {', '.join(map(repr, unknown))} is no kind of text; kinds: {', '.join(EXEMPT_KINDS)} "
            "(or 'all', 'none')"
        )
    return frozenset(names)


# --- what kind of text a sentence is -------------------------------------------------------------------
# Each check runs on a sentence's text with its markers taken out; the first word is looked up in a
# set before any pattern runs, so a plain factual sentence costs a few set lookups.

_GREETING = re.compile(
    r"^(?:hi|hello|hey|dear|greetings|good (?:morning|afternoon|evening|day)|thanks|thank you|you'?re welcome"
    r"|(?:i'?m |i am |i'?d be |i would be )?(?:happy|glad) to help|(?:i )?hope (?:this|that) helps"
    r"|let me (?:check|look|see|find|help|take a look|look into|search)|sure|certainly|of course|absolutely"
    r"|great question|good question|feel free|please (?:let me know|reach out|contact)|let me know"
    r"|no problem|welcome)\b",
    re.IGNORECASE,
)
_GREETING_WORDS = frozenset(
    "hi hello hey dear greetings good thanks thank you you're youre i i'm im i'd i'd hope let sure certainly "
    "of absolutely great feel please no welcome happy glad".split()
)
_TRANSITION = re.compile(
    r"^(?:here(?:'s| is| are)|below (?:is|are)|the following|in (?:summary|short|brief|conclusion|sum)"
    r"|to (?:summarize|summarise|sum up|answer your question|clarify)|overall|let me (?:explain|break|summarize|"
    r"summarise|walk|outline)|in other words|that said|with that said|so|now|first|second|third|next|finally"
    r"|additionally|also|furthermore|moreover|however)\b[\s,:-]*",
    re.IGNORECASE,
)
_TRANSITION_WORDS = frozenset(
    "here here's below the in to overall let that with so now first second third next finally additionally "
    "also furthermore moreover however".split()
)
_CONTENT_WORD = re.compile(r"[A-Za-z][A-Za-z'-]{2,}")
_NOT_CONTENT = frozenset(
    "the and for are was were what which that this these those with from have has had found find here "
    "there about into your you our its their them they will would can could also some more".split()
)
#: statements about the sources rather than the world: "The sources conflict", "I could not find ..."
_META = re.compile(
    r"\b(?:the|these|those|my|your|available|provided|retrieved|given|cited|both|two|all|other|some)"
    r"(?: \w+)? (?:sources?|documents?|passages?|context|references|excerpts|search results|records|texts"
    r"|materials|policies provided)\b.{0,60}?\b(?:conflict|disagree|differ|contradict|are inconsistent"
    r"|do not|don't|does not|doesn't|did not|didn't|cannot|can't|are silent|say nothing|mention nothing"
    r"|are unclear|is unclear|lack|provide no|give no|offer no)\b"
    r"|^i (?:could not|couldn't|cannot|can't|was unable to|am unable to|did not|didn't|do not|don't|was not able to)"
    r" (?:find|locate|see|verify|confirm|determine|tell|identify)\b"
    r"|^(?:there is|there's|i have|i found) no (?:\w+ )?information\b"
    r"|^no (?:\w+ )?information (?:was|is|could be) (?:found|available|provided)",
    re.IGNORECASE,
)


#: an offer, instruction or advice to the reader (issue #36): what the seeds ask an answer to say when the
#: evidence is stale or conflicting ("offer a current-status check"), not a statement about the world.
#: Read only on a sentence that cites nothing and writes no number: a cited instruction is judged as a
#: claim (an instruction copied from a retrieved snippet must be supported), a phone number is a fact, and
#: advice holding a link or a credential request is a claim too (``actions.sends_elsewhere``).
_ADVICE = re.compile(
    r"^(?:please\s+)?(?:check|contact|call|visit|consult|reach out to|email|ask|verify|confirm|review|refer to"
    r"|make sure|request|go to)\b"
    r"|^(?:you|we)\s+(?:should|may want to|might want to|could)\s+(?:check|contact|call|visit|consult|reach out"
    r"|email|ask|verify|confirm|review|request|refer)\b"
    r"|^(?:i|we)\s+(?:(?:would\s+)?recommend|suggest|advise)\b|^(?:i'd|we'd)\s+(?:recommend|suggest)\b"
    r"|^it\s+is\s+(?:best|advisable|recommended|wise)\s+to\b"
    r"|^(?:if\s+you(?:'d|\s+would)?\s+like,?\s+)?(?:i|we)\s+(?:can|could|will|'ll|would be happy to)\s+"
    r"(?:check|look up|contact|request|confirm|verify|escalate|open|send|run)\b"
    r"|^(?:the\s+|this\s+|its\s+|your\s+)?(?:current\s+|payment\s+)?status\s+(?:needs|should|must)\s+(?:to\s+)?be\s+"
    r"(?:checked|confirmed|verified)\b"
    r"|^(?:the\s+|this\s+|its\s+|your\s+)?(?:current\s+|payment\s+)?status\s+needs\s+an?\s+(?:current\s+|live\s+)?"
    r"(?:\w+\s+)?check\b"
    r"|^an?\s+(?:current|live|real-time|up-to-date|fresh)?[\s-]*(?:\w+[\s-]+)?check\s+(?:is|would be)\s+"
    r"(?:needed|required|recommended|advisable)\b",
    re.IGNORECASE,
)
_ADVICE_WORDS = frozenset(
    "please check contact call visit consult reach email ask verify confirm review refer make request go you we i "
    "i'd we'd it if the this its your current payment status a an".split()
)


def _may_be_meta(low: str) -> bool:
    """A cheap look for the words a statement about the sources holds, before _META runs (lowercased text)."""
    return (
        low.startswith(("i ", "there", "no "))
        or "source" in low
        or "document" in low
        or "passage" in low
        or "context" in low
        or "reference" in low
        or "excerpt" in low
        or "record" in low
        or "text" in low
        or "material" in low
    )


_LIST_NUMBER = re.compile(
    r"^\(?(?:\d{1,3}|[a-z]|[ivxlc]{1,5})[.):]?\)?$|^(?:step|item|part|no\.?|number|#)\s*\d{1,3}[.:)]?$",
    re.IGNORECASE,
)
#: a line (or sentence) that opens a reference list: "Sources:", "**References**", "## Bibliography"
BIBLIOGRAPHY_HEAD = re.compile(
    r"^\s*(?:#{1,6}\s*)?(?:\*\*|__)?\s*(?:sources?|references?|citations?|bibliography|works cited"
    r"|further reading)(?:\s+(?:used|cited|consulted))?\s*(?:\*\*|__)?\s*(?::|$)",
    re.IGNORECASE,
)


_BIBLIOGRAPHY_OPENS = frozenset("sSrRcCbBwWfF")


def _first_word(text: str) -> str:
    head = text.lstrip("*_\"'(“ ").split(None, 1)
    return head[0].lower().strip(",.!:;") if head else ""


def kind_of(text: str, *, cited: bool, has_digit: bool, abstains: bool) -> str | None:
    """The kind of text a sentence (markers taken out) is, when it is no claim; None for a claim.

    ``abstains``: it holds one of the run's abstention phrases (a statement about the sources)."""
    end = text.rstrip(" \"'”’)*_]")
    kind = _kind_cited_or_not(text, end, abstains)
    if kind is not None or cited:
        return kind
    return _kind_uncited(end, has_digit)


def _kind_cited_or_not(text: str, end: str, abstains: bool) -> str | None:
    """The kinds a marker does not make a claim: a reference list's heading, a list number, a statement
    about the sources."""
    if text.lstrip(" #*_")[:1] in _BIBLIOGRAPHY_OPENS and BIBLIOGRAPHY_HEAD.match(text):
        return "bibliography"
    if len(end) <= 12 and _LIST_NUMBER.match(end):
        return "list_number"
    if abstains or (_may_be_meta(end.lower()) and _META.search(end)):
        return "meta"
    return None


def _kind_uncited(end: str, has_digit: bool) -> str | None:
    """The kinds only an uncited sentence is: a question, a greeting, a transition, advice to the reader."""
    if end.endswith("?"):
        return "question"
    word = _first_word(end)
    if not has_digit and word in _GREETING_WORDS and _says_little_after(_GREETING, end):
        return "greeting"
    if end.endswith(":") or (not has_digit and word in _TRANSITION_WORDS and _says_little_after(_TRANSITION, end)):
        return "transition"
    # advice that sends the reader to a link or asks for a secret is a claim: a poisoned page's instruction
    if not has_digit and word in _ADVICE_WORDS and _ADVICE.match(end.lstrip("*_\"'(“ ")) and not sends_elsewhere(end):
        return "advice"
    return None


def says_little(text: str) -> bool:
    """Whether ``text`` is a greeting or a transition and nothing more ("Here is what I found:")."""
    return _says_little_after(_TRANSITION, text) or _says_little_after(_GREETING, text)


def _says_little_after(opening: re.Pattern[str], text: str) -> bool:
    """Whether ``text`` opens with ``opening`` and then says at most three content words ("Let me check
    that for you." yes; "Sure, opened devices can be returned within thirty days." no)."""
    bare = text.lstrip("*_\"'(“ ")
    m = opening.match(bare)
    if m is None:
        return False
    rest = [w for w in _CONTENT_WORD.findall(bare[m.end() :]) if w.lower() not in _NOT_CONTENT]
    return len(rest) <= 3


def merge(case_attach: str | None, run_attach: str | None, file_attach: str | None) -> str:
    """The attachment policy a case's answers are split by: the most specific setting given."""
    return case_attach or run_attach or file_attach or DEFAULT_ATTACH


def exempt_or_default(run: Collection[str] | None, file: Collection[str] | None) -> frozenset[str]:
    """The kinds a run exempts: the run's setting, else the gold file's, else every kind."""
    if run is not None:
        return frozenset(run)
    if file is not None:
        return frozenset(file)
    return frozenset(EXEMPT_KINDS)
