"""The demo: the policy assistant answering a bundled gold set, with faults on purpose.

Every failure bucket is triggered by two different scenarios, and each
scenario has an ``ok`` twin that differs only by the fix. The tests run the
same table, so what the demo shows is what the suite asserts.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Any

from .policy_bot import Faults, PolicyBot

PUBLIC = {"id": "bob", "groups": ["public"]}
STAFF = {"id": "alice", "groups": ["staff"]}
AS_OF = "2026-08-10"


@dataclass(frozen=True)
class Scenario:
    """One request of the demo: which case, what the app does, what must come out."""

    name: str
    case_id: str
    question: str
    script: Any
    bucket: str
    stage: str | None
    faults: Faults = field(default_factory=Faults)
    principal: Any = field(default_factory=lambda: dict(PUBLIC))


Q = {
    "returns-window": "Can opened electronics be returned after three weeks?",
    "shipping-cost": "How much does standard shipping cost?",
    "warranty-water": "Does the warranty cover water damage?",
    "free-shipping": "Which orders ship free?",
    "refund-speed": "How fast are refunds issued to my payment method?",
    "restocking-fee": "Is there a restocking fee for opened electronics?",
    "warranty-claim": "How do I file a warranty claim for a defect?",
    "price-match": "How long after purchase do you match a competitor price?",
    "staff-discount": "Do employees get a discount on devices?",
    "accessory-discount": "Is there a discount on accessories?",
    "refurbished-warranty": "What warranty do refurbished laptops carry?",
}

RIGHT = {
    "returns-window": "Yes, opened electronics may be returned within 30 days of delivery "
    "[[returns-v4#eligibility-2]].",
    "shipping-cost": "Standard shipping costs $4.99 [[shipping-v2#standard-1]].",
    "free-shipping": "Orders over $50 ship free within the continental US [[shipping-v2#free-2]].",
    "refund-speed": "Refunds are issued to the original payment method within 5 business days "
    "[[returns-v4#refunds-3]].",
    "restocking-fee": "A 15% restocking fee applies to opened electronics returned after 14 days "
    "[[restocking-v2#fee-1]].",
    "warranty-claim": "Warranty claims must be filed online with the order number and a photo of the defect "
    "[[warranty-v1#claims-3]].",
    "price-match": "We match a competitor's advertised price within 14 days of purchase [[price-match-v1#policy-1]].",
    "abstain": "I cannot verify that from the policies I have.",
}


def _structured(chunk: str, quote: str = "does not cover accidental damage") -> dict[str, Any]:
    return {
        "text": "The warranty does not cover water damage.",
        "claims": [
            {
                "text": "The warranty does not cover water damage.",
                "evidence": [{"chunk_id": chunk, "quote": quote}],
            }
        ],
        "abstained": False,
    }


def _pair(
    name: str,
    case: str,
    bucket: str,
    stage: str,
    broken: dict[str, Any],
    fixed: dict[str, Any],
    principal: Any = None,
) -> list[Scenario]:
    who = principal or dict(PUBLIC)
    return [
        Scenario(
            name=name,
            case_id=case,
            question=Q[case],
            script=broken["script"],
            bucket=bucket,
            stage=stage,
            faults=broken.get("faults", Faults()),
            principal=who,
        ),
        Scenario(
            name=f"{name}~fixed",
            case_id=case,
            question=Q[case],
            script=fixed["script"],
            bucket="ok",
            stage=None,
            faults=fixed.get("faults", Faults()),
            principal=who,
        ),
    ]


def _scenarios() -> list[Scenario]:
    s: list[Scenario] = []
    # 1. access_violation: restricted chunk retrieved (a) / also cited and shown (b)
    s += _pair(
        "acl-filter-off",
        "staff-discount",
        "access_violation",
        "retrieval",
        {"script": RIGHT["abstain"], "faults": Faults(skip_acl_filter=True)},
        {"script": RIGHT["abstain"]},
    )
    s += _pair(
        "acl-cited",
        "accessory-discount",
        "access_violation",
        "retrieval",
        {
            "script": "Employees receive a 25% discount on accessories [[staff-handbook#discount-1]].",
            "faults": Faults(skip_acl_filter=True),
        },
        {"script": RIGHT["abstain"]},
    )
    # 1b. not_evaluable: the app's adapter for a stage raised, so the trace cannot show that stage
    s += _pair(
        "retrieval-adapter-bug",
        "warranty-claim",
        "not_evaluable",
        "retrieval",
        {"script": RIGHT["warranty-claim"], "faults": Faults(buggy_adapter="retrieval")},
        {"script": RIGHT["warranty-claim"]},
    )
    s += _pair(
        "context-adapter-bug",
        "refund-speed",
        "not_evaluable",
        "context",
        {"script": RIGHT["refund-speed"], "faults": Faults(buggy_adapter="context")},
        {"script": RIGHT["refund-speed"]},
    )
    # 2. invalid_citation: a label the model never saw (a) / an invented chunk id (b)
    s += _pair(
        "unknown-label",
        "shipping-cost",
        "invalid_citation",
        "generation",
        {"script": "Standard shipping costs $4.99 [7]."},
        {"script": RIGHT["shipping-cost"]},
    )
    s += _pair(
        "invented-id",
        "warranty-water",
        "invalid_citation",
        "generation",
        {"script": _structured("warranty-v9#water")},
        {"script": _structured("warranty-v1#exclusions-2")},
    )
    # 3. freshness: cites an archived version (a, b)
    s += _pair(
        "archived-version",
        "shipping-cost",
        "freshness",
        "retrieval",
        {"script": "Standard shipping costs $4.99 [[shipping-v1#standard-1]]."},
        {"script": RIGHT["shipping-cost"]},
    )
    s += _pair(
        "superseded-policy",
        "returns-window",
        "freshness",
        "retrieval",
        {"script": "Yes, opened electronics may be returned within 30 days of delivery [[returns-v3#eligibility-2]]."},
        {"script": RIGHT["returns-window"]},
    )
    # 4. retrieval_miss: the index lost the supporting chunk (a, b)
    s += _pair(
        "index-lost-refunds",
        "refund-speed",
        "retrieval_miss",
        "retrieval",
        {"script": RIGHT["refund-speed"], "faults": Faults(hide=frozenset({"returns-v4#refunds-3"}))},
        {"script": RIGHT["refund-speed"]},
    )
    s += _pair(
        "index-lost-claims",
        "warranty-claim",
        "retrieval_miss",
        "retrieval",
        {"script": RIGHT["warranty-claim"], "faults": Faults(hide=frozenset({"warranty-v1#claims-3"}))},
        {"script": RIGHT["warranty-claim"]},
    )
    # 5. context_drop: retrieved, then cut before the prompt (a, b)
    s += _pair(
        "reranker-drop",
        "restocking-fee",
        "context_drop",
        "context",
        {
            "script": RIGHT["restocking-fee"],
            "faults": Faults(drop_from_context=frozenset({"restocking-v2#fee-1"})),
        },
        {"script": RIGHT["restocking-fee"]},
    )
    s += _pair(
        "budget-drop",
        "price-match",
        "context_drop",
        "context",
        {
            "script": RIGHT["price-match"],
            "faults": Faults(drop_from_context=frozenset({"price-match-v1#policy-1"})),
        },
        {"script": RIGHT["price-match"]},
    )
    # 6. grounding: wrong number against its evidence (a) / answers where it should abstain (b)
    s += _pair(
        "wrong-number",
        "returns-window",
        "grounding",
        "generation",
        {"script": "Yes, opened electronics may be returned within 60 days of delivery [[returns-v4#eligibility-2]]."},
        {"script": RIGHT["returns-window"]},
    )
    s += _pair(
        "should-abstain",
        "refurbished-warranty",
        "grounding",
        "generation",
        {"script": "Refurbished laptops carry a one-year limited warranty [[warranty-v1#coverage-1]]."},
        {"script": RIGHT["abstain"]},
    )
    # 7. uncited: right, but no marker (a, b)
    s += _pair(
        "no-marker-cost",
        "shipping-cost",
        "uncited",
        "generation",
        {"script": "Standard shipping costs $4.99."},
        {"script": RIGHT["shipping-cost"]},
    )
    s += _pair(
        "no-marker-free",
        "free-shipping",
        "uncited",
        "generation",
        {"script": "Orders over $50 ship free within the continental US."},
        {"script": RIGHT["free-shipping"]},
    )
    # 8. attribution: right claim, wrong paragraph (a, b)
    s += _pair(
        "wrong-paragraph",
        "shipping-cost",
        "attribution",
        "generation",
        {"script": "Standard shipping costs $4.99 [[shipping-v2#free-2]]."},
        {"script": RIGHT["shipping-cost"]},
    )
    s += _pair(
        "sibling-chunk",
        "warranty-water",
        "attribution",
        "generation",
        {"script": _structured("warranty-v1#coverage-1", quote="")},
        {"script": _structured("warranty-v1#exclusions-2", quote="")},
    )
    # 9. resolution: the resolver is off by one (a) / the page links another version (b)
    s += _pair(
        "resolver-off-by-one",
        "free-shipping",
        "resolution",
        "resolution",
        {"script": RIGHT["free-shipping"], "faults": Faults(resolver_offset=1)},
        {"script": RIGHT["free-shipping"]},
    )
    s += _pair(
        "page-links-old-version",
        "refund-speed",
        "resolution",
        "render",
        {
            "script": RIGHT["refund-speed"],
            "faults": Faults(render_uri={"returns-v4#refunds-3": "https://kb.example.com/returns/v3#refunds-3"}),
        },
        {"script": RIGHT["refund-speed"]},
    )
    return s


SCENARIOS: list[Scenario] = _scenarios()


def gold_path() -> Path:
    """The bundled gold set the scenarios are judged against."""
    return Path(str(resources.files("citeline.examples").joinpath("policy_gold.yaml")))


def check_fixes(fixed: set[str] | None) -> None:
    """``fixed`` names broken scenarios only (a KeyError naming the choices otherwise)."""
    by_name = {s.name for s in SCENARIOS}
    for name in fixed or ():
        if name not in by_name or f"{name}~fixed" not in by_name:
            broken = ", ".join(s.name for s in SCENARIOS if s.bucket != "ok")
            raise KeyError(f"no broken scenario {name!r}; choose from {broken}")


def run_scenarios(
    bot: PolicyBot | None = None,
    scenarios: list[Scenario] | None = None,
    tweak: Faults | None = None,
    fixed: set[str] | None = None,
) -> list[str]:
    """Ask every scenario's question once.

    ``fixed`` names broken scenarios to run with their fix instead (what a team does between
    two nightly runs); ``tweak`` overlays extra faults on each (for tests).
    """
    bot = bot or PolicyBot()
    chosen = list(scenarios if scenarios is not None else SCENARIOS)
    by_name = {s.name: s for s in SCENARIOS}
    check_fixes(fixed)
    for name in fixed or ():
        twin = by_name[f"{name}~fixed"]
        chosen = [replace(twin, name=name) if s.name == name else s for s in chosen]
    answers = []
    for sc in chosen:
        faults = sc.faults
        if tweak is not None:
            faults = replace(
                faults,
                shuffle_seed=tweak.shuffle_seed if tweak.shuffle_seed is not None else faults.shuffle_seed,
                label_offset=tweak.label_offset or faults.label_offset,
                hide=faults.hide | tweak.hide,
            )
        answers.append(
            bot.ask(sc.question, sc.script, case_id=sc.case_id, principal=sc.principal, as_of=AS_OF, faults=faults)
        )
    return answers
