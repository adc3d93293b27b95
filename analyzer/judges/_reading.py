"""What the rules judge reads in a text, once per text: its sentences' words, values, tokens, names and
negation / may / must cues (``Text``), a passage's sentences and vocabulary, and the evidence window a claim
sentence is compared with (``align``: a greedy cover of its words and values).

The decisions made from these readings are the judge's own (``_rules``); what is read here depends on the
text alone, so it is read once per distinct text and cached.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from functools import cached_property, lru_cache
from typing import NamedTuple

from citeline.analyzer.text import _STOP, Value, _stem, _values_of_folded, fold, led_by, sentences

_TOKEN = re.compile(r"[a-z0-9][a-z0-9\-']*")
_WORDISH = re.compile(r"[a-z][a-z\-']{2,}")
# a capitalised span: Joey Cape, Rebel Heart Tour, University of Texas, McDonald's
_NAME = re.compile(
    r"(?<![\w'])[A-Z][\w'’\-.]*(?:\s+(?:(?:of|the|de|del|da|van|von|der|la|le|and|&)\s+)?[A-Z][\w'’\-.]*)*"
)
_NAME_GLUE = frozenset("of the de del da van von der la le and &".split())
# capitalised because they open a sentence or are titles of address, not because they name something
_NOT_NAMES = _STOP | frozenset(
    "a an in on at as by to of if it he she we i is be or so no yes however although though after before "
    "since during while when where there here this that these those then thus also but and yet what which "
    "who whom whose why how sure well oh hi hello yeah okay ok mr mrs ms dr st both either each every many "
    "most some such other another moreover furthermore additionally similarly likewise nonetheless "
    "nevertheless therefore hence thus overall finally firstly secondly thirdly lastly instead meanwhile "
    "consequently ultimately generally typically specifically notably importantly alternatively conversely "
    "otherwise accordingly besides still today currently recently historically traditionally "
    # months and days are read as dates (values), not as names
    "january february march april may june july august september october november december jan feb mar apr "
    "jun jul aug sep sept oct nov dec monday tuesday wednesday thursday friday saturday sunday".split()
)
# v3: closed classes that are never names when capitalised alone: prepositions ("Upon announcing his
# retirement", "Following the premiere") and number words ("One of the first...")
_NOT_NAMES_V3 = _NOT_NAMES | frozenset(
    "aboard about above across against along alongside amid amidst among amongst around atop behind below "
    "beneath beside besides beyond despite down following from inside into near off onto opposite outside over "
    "past per regarding round through throughout toward towards under underneath unlike until unto upon versus "
    "via within without according including excluding concerning considering "
    "one two three four five six seven eight nine ten first second third fourth fifth".split()
)
# words a reply adds around its content (dialogue, chat): not evidence for or against anything
_FILLER = frozenset(
    "yes yeah sure well okay think know like really actually great good nice love lot lots just kind "
    "sort maybe probably heard hear guess believe pretty quite indeed definitely absolutely certainly "
    "interesting fun cool awesome".split()
)
_NEGATOR = re.compile(r"\b(?:not|no|never|none|nobody|nothing|neither|nor|cannot|without)\b|n't\b")
_MAY = re.compile(r"\b(?:may|might|can|could|optional|optionally|allowed|permitted)\b")
_MUST = re.compile(r"\b(?:must|required|requires|require|shall|mandatory|obliged|have to|has to|need to|needs to)\b")
_SCOPE = 6  # a negator or modal governs the next few content words of its clause ("and", "or" continue it)
_CLAUSE_END = re.compile(r"[,.;:!?()\[\]\"“”]|\b(?:but|which|that|because|while|although|though|whereas|if|when)\b")


class Text:
    """One sentence (or claim sentence), read once: words and values at once (a window is chosen by them),
    tokens and negation/modality cues when first asked (most evidence sentences never are)."""

    def __init__(self, folded: str) -> None:
        self.text = folded
        self.words: frozenset[str] = frozenset(map(word_key, _WORDISH.findall(folded))) - NOT_A_WORD
        self.values: tuple[Value, ...] = _values_of_folded(folded)
        # what a window is chosen by: words and value keys
        self.units: frozenset[str] = self.words.union(*(_value_keys(v) for v in self.values))

    @cached_property
    def tokens(self) -> frozenset[str]:
        """Every folded token, and each pair run together (a name written "Tech Crunch" is found as "TechCrunch")."""
        toks = [w.strip("-'.").removesuffix("'s") for w in _TOKEN.findall(self.text.replace("’", "'"))]
        return frozenset(toks) | frozenset(a + b for a, b in itertools.pairwise(toks))

    @cached_property
    def _cues(self) -> dict[str, list[int]]:
        """Where each kind of cue ends (one scan); the words each governs are read when first asked."""
        return _cue_ends(self.text)

    # the words each kind of cue governs, read when first asked (most evidence sentences never are)
    @cached_property
    def negated(self) -> frozenset[str]:  # stemmed words a negator governs
        return _governed_after(self.text, self._cues.get("negated"))

    @cached_property
    def may(self) -> frozenset[str]:
        return _governed_after(self.text, self._cues.get("may"))

    @cached_property
    def must(self) -> frozenset[str]:
        return _governed_after(self.text, self._cues.get("must"))


NOT_A_WORD = frozenset({""})


@lru_cache(maxsize=300_000)
def word_key(w: str) -> str:
    """A content word's stem; "" for a stop word or a chat filler."""
    if w in _STOP or w in _FILLER:
        return ""
    return _stem(w.strip("-'"))


# every cue opens with one of these letters (negators: n, c, w; n't: n; may: m, c, o, a, p; must: m, r, s, o, h, n)
CUES = led_by("ncwmoaprsh", f"(?P<negated>{_NEGATOR.pattern})|(?P<may>{_MAY.pattern})|(?P<must>{_MUST.pattern})")
_NOTHING = frozenset[str]()


def _cue_ends(t: str) -> dict[str, list[int]]:
    """For negators and may/must words: where each one ends, by kind."""
    found: dict[str, list[int]] = {}
    for m in CUES.finditer(t):
        found.setdefault(m.lastgroup or "", []).append(m.end())
    return found


def _governed_after(t: str, ends: list[int] | None) -> frozenset[str]:
    """The stemmed words cues ending at ``ends`` govern: the next few content words of each one's clause."""
    if not ends:
        return _NOTHING
    out: set[str] = set()
    for at in ends:
        end = _CLAUSE_END.search(t, at, at + 80)
        following = [w for w in _WORDISH.findall(t, at, end.start() if end else at + 80) if w not in _STOP]
        out.update(_stem(w) for w in following[:_SCOPE])
    return frozenset(out)


def read(sentence: str, folded: bool = False) -> Text:
    return Text(sentence if folded else fold(sentence))


@lru_cache(maxsize=65536)
def read_passage(text: str) -> tuple[Text, ...]:
    return tuple(read(s, folded=True) for s in sentences(fold(text)))


@lru_cache(maxsize=65536)
def passage_vocab(text: str) -> frozenset[str]:
    read = read_passage(text)
    return frozenset().union(*(s.tokens for s in read), *(s.words for s in read))


class Vocab:
    """Every token and word of the cited texts, without building their union for each citation."""

    def __init__(self, evidence: Sequence[str]) -> None:
        self.texts = evidence
        self.sets = [passage_vocab(e) for e in evidence]

    def __contains__(self, token: object) -> bool:
        return any(token in s for s in self.sets)


@lru_cache(maxsize=100_000)
def _token(word: str) -> str:
    return fold(word).replace("’", "'").strip("-'.").removesuffix("'s")


class Name(NamedTuple):
    shown: str
    tokens: frozenset[str]
    loose: bool  # a lone word opening the sentence: any of its forms will do
    joined: str  # the words run together: "Tech Crunch" is found as "techcrunch"


@lru_cache(maxsize=4096)
def names(claim: str, v3: bool = False) -> tuple[Name, ...]:
    """Capitalised spans of the claim, each with the folded tokens that must be found.

    A lone capitalised word that opens a list item or a heading, or follows a colon, is usually an
    ordinary word written with a capital: it is not taken for a name. One that opens a sentence is
    ("Norway set the record"): news and encyclopedia prose open sentences with names.
    """
    not_names = _NOT_NAMES_V3 if v3 else _NOT_NAMES
    out = []
    for m in _NAME.finditer(claim):
        words = m.group(0).split()
        tokens = {t for t in map(_token, words) if t and t not in _NAME_GLUE}
        if len(words) == 1 and (
            not tokens or tokens <= not_names or _opens(claim, m.start()) or _discourse(claim, m.start(), m.end())
        ):
            continue
        tokens -= not_names
        if tokens:
            loose = len(words) == 1 and _opens_sentence(claim, m.start())  # "Returns within 30 days" may be a verb
            if loose:
                tokens |= {_stem(t) for t in tokens}
            joined = "".join(t for t in map(_token, words) if t and t not in _NAME_GLUE and t not in not_names)
            out.append(Name(m.group(0).strip(".,;:"), frozenset(tokens), loose, joined))
    return tuple(out)


def _opens(text: str, at: int) -> bool:
    """Does the word at ``at`` open a list item, a heading or what follows a colon (markdown answers)?"""
    return text[:at].rstrip(" \t").endswith(("*", "-", "•", ":", "#", "_", "\n"))


# endings of ordinary words, on words of eight letters or more: shorter ones with these endings are often
# names (Italy, Beijing, France, Portugal, Lakers), so they stay names
_COMMON_ENDINGS = (
    "ly",
    "ing",
    "ed",
    "ive",
    "ous",
    "ment",
    "ness",
    "ity",
    "tion",
    "sion",
    "able",
    "ible",
    "ful",
    "less",
)
_NAME_SHAPE = re.compile(r".[A-Z]|\d|^[A-Z]{2,}")  # WhatsApp, McDonald, F1, NASA


def _opens_sentence(text: str, at: int) -> bool:
    return not text[:at].strip() or text[:at].rstrip()[-1] in ".!?"


def _discourse(text: str, start: int, end: int) -> bool:
    """A lone word opening a sentence that reads as an ordinary word: followed by a comma ("Similarly,"),
    or shaped like one ("Enhancing", "Numerous", "Improved") and not like a name (WhatsApp, NASA)."""
    word = text[start:end]
    if not _opens_sentence(text, start) or _NAME_SHAPE.search(word):
        return False
    return text[end : end + 1] == "," or (len(word) >= 8 and word.lower().endswith(_COMMON_ENDINGS))


def _acronym_in(acronym: str, evidence: str) -> bool:
    """UN in "United Nations", EEOC in "Equal Employment Opportunity Commission"."""
    letters = acronym.upper()
    if not 2 <= len(letters) <= 6 or not letters.isalpha():
        return False
    glue = r"(?:\s+(?:of|the|and|for|on|&)){0,2}\s+"
    return re.search(r"\b" + glue.join(f"{c}[\\w'-]*" for c in letters) + r"\b", evidence) is not None


def name_found(name: Name, all_tokens: Vocab, w_tokens: frozenset[str], evidence: str) -> bool:
    """Every word of the name in the evidence (an acronym spelled out counts), and one of them in the window.

    Every word, not most: "The Walt Disney Company" against "The Walt Warner Bros Company" differs in one.
    A lone word opening the sentence is ``loose``: any one of its forms (returns, return) will do.
    """
    tokens = name.tokens
    if name.loose:
        return any(t in all_tokens for t in tokens)
    if name.joined in all_tokens:
        return True
    if not all(t in all_tokens or _acronym_in(t, evidence) for t in tokens):
        return False
    return bool(tokens & w_tokens) or not all(t in all_tokens for t in tokens)


def states_something(sentence: str, t: Text, v3: bool) -> bool:
    return len(t.words) >= 2 or bool(t.values) or bool(names(sentence, v3))


@lru_cache(maxsize=100_000)
def _value_keys(v: Value) -> frozenset[str]:
    """What a value is looked up by when choosing a window: its amount (a date's month and day), and a year."""
    if v[0] == "date" and v[1]:
        return frozenset((f"\0{v[0]}:{v[2]:g}", f"\0num:{v[1]}"))
    return frozenset((f"\0{v[0]}:{v[2]:g}",))


class Window:
    """The evidence sentences a claim sentence is compared with (one is made per claim sentence: a plain class)."""

    __slots__ = ("sentences",)

    def __init__(self, sentences: tuple[Text, ...]) -> None:
        self.sentences = sentences

    # a window is most often one sentence: its sets are then that sentence's own, not a union
    @property
    def words(self) -> frozenset[str]:
        ss = self.sentences
        return ss[0].words if len(ss) == 1 else frozenset().union(*(s.words for s in ss))

    @property
    def tokens(self) -> frozenset[str]:
        ss = self.sentences
        return ss[0].tokens if len(ss) == 1 else frozenset().union(*(s.tokens for s in ss))

    @property
    def values(self) -> list[Value]:
        return [v for s in self.sentences for v in s.values]

    def governed(self, attr: str) -> frozenset[str]:
        ss = self.sentences
        if len(ss) == 1:
            got: frozenset[str] = getattr(ss[0], attr)
            return got
        return frozenset().union(*(getattr(s, attr) for s in ss))


def align(claim: Text, passage: Sequence[Text], most: int) -> Window:
    """Greedy cover: the evidence sentences that add the most of the claim's words and values, up to ``most``."""
    target = claim.units
    units = [(i, u) for i, u in ((i, s.units & target) for i, s in enumerate(passage)) if u]
    if len(units) == 1 and most >= 1:  # one sentence shares anything with the claim (most claims): it is the window
        return Window((passage[units[0][0]],))
    return Window(tuple(passage[i] for i in cover(units, target, most)))


def cover(units: list[tuple[int, frozenset[str]]], target: frozenset[str], most: int) -> list[int]:
    """The sentences (by index) the greedy cover takes, in order, from each one's units shared with the claim."""
    covered: set[str] = set()
    chosen: list[int] = []
    shared = dict(units)
    for _ in range(most):
        best, gain = -1, 0
        for i, u in units:
            g = len(u - covered)
            if g > gain:
                best, gain = i, g
        # a further sentence must add two things (or a value): one shared word is coincidence
        picked = shared[best] if best >= 0 else frozenset()
        if best < 0 or (chosen and gain < 2 and not any(x.startswith("\0") for x in picked - covered)):
            break
        chosen.append(best)
        covered |= picked
        if covered >= target:
            break
    return sorted(chosen)


def words_of(text: str) -> frozenset[str]:
    return frozenset(map(word_key, _WORDISH.findall(text))) - NOT_A_WORD
