"""The bucket table: every failure bucket's name, repair order, flag, stages, reasons and colour, once.

``TABLE`` lists the buckets most urgent first (the repair order: the first raised flag in it is a
claim's primary bucket). Each names the ``is_*`` column of ``queries/classify.sql`` that raises it
and, per reason it can give, the stage where the chain broke and the reason's words; classify.sql
reads all of it from the store (``bucket_order``, ``bucket_reasons``, written from here whenever a
store is opened), reports take the order from the store and the colours from here. Nothing else
spells a bucket's name, its order or its words.

A reason's template names the row's details in braces (``{chunks}``); classify.sql fills them. A
reason's stage is a stage of the chain, or one the row names: ``first_reached`` (where a restricted
chunk first reached) or ``unreadable`` (the stage that could not be read; its span is the unreadable
span). The span of any other stage is that stage's span in the trace.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

#: stages a reason leaves to the row: where a restricted chunk first reached, the stage that could not be read
ROW_STAGES: Final = ("first_reached", "unreadable")


@dataclass(frozen=True)
class Reason:
    """One reason a bucket gives: its name (classify.sql picks it), the stage it blames, its words."""

    variant: str
    stage: str | None
    template: str


@dataclass(frozen=True)
class Bucket:
    name: str
    flag: str  # the classify.sql column that raises it ("" for ok: the bucket of a claim nothing flagged)
    color: str  # the report's colour
    fixes: str  # who fixes it (docs/design.md)
    reasons: tuple[Reason, ...]


ACCESS_VIOLATION: Final = "access_violation"
NOT_EVALUABLE: Final = "not_evaluable"
INVALID_CITATION: Final = "invalid_citation"
FRESHNESS: Final = "freshness"
RETRIEVAL_MISS: Final = "retrieval_miss"
CONTEXT_DROP: Final = "context_drop"
GROUNDING: Final = "grounding"
UNCITED: Final = "uncited"
ATTRIBUTION: Final = "attribution"
RESOLUTION: Final = "resolution"
OK: Final = "ok"

_RESTRICTED = "restricted {chunks} reached {reached}"
# the corpus basis cannot tell a retrieval miss or a context drop from the model's own invention
_NO_GOLD = (
    "; no gold case, so retrieval cannot be blamed (a retrieval_miss or context_drop needs one: add a case "
    "for this question)"
)
TABLE: Final = (
    Bucket(
        ACCESS_VIOLATION,
        "is_restricted",
        "#b91c1c",
        "permissions, retrieval filter",
        (
            Reason("reached", "first_reached", _RESTRICTED),
            # fail closed: a request whose groups nobody recorded is entitled to nothing restricted
            Reason(
                "unrecorded",
                "first_reached",
                _RESTRICTED + ", and the request recorded no principal groups, so it is entitled to none: record "
                'request(principal={"id": ..., "groups": [...]}) (an empty list of groups is a guest)',
            ),
        ),
    ),
    Bucket(
        NOT_EVALUABLE,
        "is_unobservable",
        "#6b7280",
        "the instrumentation or the judge",
        (
            Reason(
                "unseen",
                "retrieval",
                "the retrieval stage is not observed: the support is not in the context, and no span shows whether "
                "it was retrieved (a miss) or dropped after (a drop); add @retrieval",
            ),
            Reason("no_verdict", "generation", "judge {judge} gave no verdict for this claim"),
            Reason("undecided", "generation", "judge {judge} could not decide: {given_rationale}"),
            Reason("unknown_label", "generation", "judge {judge} answered '{label}', not one of {labels}"),
            Reason("not_observed", "unreadable", "the {unreadable} stage is {error}"),
            Reason(
                "unreadable",
                "unreadable",
                "the {unreadable} span could not be read ({error}); fix its adapter (to_chunks=) so the chain "
                "can be judged",
            ),
        ),
    ),
    Bucket(
        INVALID_CITATION,
        "is_miscited",
        "#c2410c",
        "generation output contract, source curation",
        (
            Reason("cites", "generation", "cites {invalid}, which the model was not given"),
            Reason(
                "untrusted",
                "generation",
                "cites {untrusted}, which the gold corpus marks untrusted (authority: untrusted): a source "
                "never to be cited",
            ),
            Reason(
                "invented",
                "generation",
                "names {invented}, which no supplied source has (no retrieved chunk's uri, title or locator, "
                "no gold corpus entry)",
            ),
            Reason(
                "untrusted_link",
                "generation",
                "links {links}, which only {link_sources} gives, a source the gold corpus marks untrusted",
            ),
        ),
    ),
    Bucket(
        FRESHNESS,
        "is_stale",
        "#b45309",
        "index lifecycle",
        (
            Reason("stale", "retrieval", "cites {stale}"),
            Reason("drift", "retrieval", "content drift: the index served {drift} (same id and version, other text)"),
        ),
    ),
    Bucket(
        RETRIEVAL_MISS,
        "is_unretrieved",
        "#7c3aed",
        "retrieval",
        (Reason("missed", "retrieval", "no support bundle was fully retrieved (needs one of {bundles})"),),
    ),
    Bucket(
        CONTEXT_DROP,
        "is_dropped",
        "#6d28d9",
        "reranking, token budget",
        (Reason("dropped", "context", "support was retrieved but not all of it reached the model"),),
    ),
    Bucket(
        GROUNDING,
        "is_unsupported",
        "#be185d",
        "prompt, model",
        (
            Reason("answered", "generation", "answered where it should abstain"),
            Reason("abstained", "generation", "abstained although the evidence was in context"),
            Reason("left_out", "generation", "required claim left out"),
            Reason("judged", "generation", "{label}: {rationale}"),
            Reason(
                "corpus_judged",
                "generation",
                "{label} by what it cites ({cited}), and nothing else in the context supports it: {rationale}"
                + _NO_GOLD,
            ),
            Reason(
                "corpus_uncited",
                "generation",
                "factual claim without a citation, and nothing in the context supports it" + _NO_GOLD,
            ),
            Reason(
                "corpus_reported",
                "generation",
                "{label} by {named}, the source it says it reports (a report of a named source is judged against "
                "that source alone): {rationale}" + _NO_GOLD,
            ),
            # seed 004: "Poisoned snippet adds link | Untrusted claim | Fail"
            Reason(
                "untrusted_action",
                "generation",
                "asks the reader to act ({action}) on the word of {low} alone, which the gold corpus rates below "
                "primary: a call to action must rest on a primary or unrated source",
            ),
        ),
    ),
    Bucket(
        UNCITED,
        "is_unmarked",
        "#0e7490",
        "generation output contract",
        (
            Reason("no_marker", "generation", "factual claim without a citation"),
            Reason(
                "corpus_no_marker",
                "generation",
                "factual claim without a citation; {supporting} in the context supports it",
            ),
        ),
    ),
    Bucket(
        ATTRIBUTION,
        "is_misattributed",
        "#0369a1",
        "evidence mapping",
        (
            Reason("elsewhere", "generation", "right claim, but cites {cited}, which is no support bundle"),
            Reason(
                "corpus_elsewhere",
                "generation",
                "cites {cited}, which does not support it ({label}); {supporting} in the context does",
            ),
            Reason(
                "corpus_joint",
                "generation",
                "cites {cited}, which supports it only in part ({label}); with {supporting} in the context it is "
                "supported: cite both",
            ),
        ),
    ),
    Bucket(
        RESOLUTION,
        "is_misresolved",
        "#4d7c0f",
        "resolver, UI",
        (Reason("resolved", "resolution", "{resolved}"), Reason("rendered", "render", "{rendered}")),
    ),
    Bucket(
        OK,
        "",
        "#15803d",
        "-",
        (
            Reason(
                "untraced",
                None,
                "supported and cited as the gold set says; resolution and render were not traced "
                "(add @resolution and @render to check the links the user got)",
            ),
            Reason("checked", None, "supported, cited and resolved as the gold set says"),
            Reason(
                "corpus_untraced",
                None,
                "supported by what it cites (corpus basis: no gold case); resolution and render were not traced "
                "(add @resolution and @render to check the links the user got)",
            ),
            Reason("corpus_checked", None, "supported by what it cites, and resolved (corpus basis: no gold case)"),
            Reason(
                "corpus_no_claim",
                None,
                "no factual claim to judge; access and every stage checked (corpus basis: no gold case)",
            ),
        ),
    ),
)

#: the buckets in repair order, most urgent first
BUCKETS: Final = tuple(b.name for b in TABLE)
#: each bucket's colour in reports
COLORS: Final = {b.name: b.color for b in TABLE}


def order_rows() -> list[tuple[str, int, str, str]]:
    """The store's bucket_order rows: (bucket, position, flag, colour)."""
    return [(b.name, i + 1, b.flag, b.color) for i, b in enumerate(TABLE)]


def reason_rows() -> list[tuple[str, str, str | None, str]]:
    """The store's bucket_reasons rows: (bucket, variant, stage, template)."""
    return [(b.name, r.variant, r.stage, r.template) for b in TABLE for r in b.reasons]
