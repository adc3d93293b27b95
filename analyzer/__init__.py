"""citeline.analyzer: traces + gold evidence -> one failure bucket per claim.

from citeline.analyzer import analyze
result = analyze("citeline.duckdb", gold="gold.yaml", traces=["traces/"])
result.claims      # polars DataFrame, one row per claim
result.summary     # {bucket: count}

What a run is can be one value, handed to either engine (one process, or partitions on Dask):
options = RunOptions(gold="gold.yaml", traces=["traces/"], attach="sentence")
result = analyze("citeline.duckdb", options)

Each name is imported when it is first asked for: a worker process of a run imports the splitter and
the judge it runs, not the whole analyzer (polars, the reports, the CLI's families).
"""

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from citeline.analyzer import judges
    from citeline.analyzer.claims.policy import ATTACH, EXEMPT_KINDS, Policy
    from citeline.analyzer.claims.splitter import Claim, Split, markers, split_answer, split_claims
    from citeline.analyzer.gold.goldset import GoldError, GoldSet, load_gold
    from citeline.analyzer.judges import Judge, Judgment, RulesJudge
    from citeline.analyzer.labels.calibrate import Agreement, calibrate
    from citeline.analyzer.run.analyze import analyze
    from citeline.analyzer.run.options import DEFAULT_ABSTAIN_PHRASES, RunOptions
    from citeline.analyzer.run.result import AnalysisResult
    from citeline.analyzer.store import BUCKETS, DEFAULT_DB, STAGES

#: each public name's module
_WHERE = {
    "judges": "citeline.analyzer.judges",
    **dict.fromkeys(("ATTACH", "EXEMPT_KINDS", "Policy"), "citeline.analyzer.claims.policy"),
    **dict.fromkeys(("Claim", "Split", "markers", "split_answer", "split_claims"), "citeline.analyzer.claims.splitter"),
    **dict.fromkeys(("GoldError", "GoldSet", "load_gold"), "citeline.analyzer.gold.goldset"),
    **dict.fromkeys(("Judge", "Judgment", "RulesJudge"), "citeline.analyzer.judges"),
    **dict.fromkeys(("Agreement", "calibrate"), "citeline.analyzer.labels.calibrate"),
    "analyze": "citeline.analyzer.run.analyze",
    **dict.fromkeys(("DEFAULT_ABSTAIN_PHRASES", "RunOptions"), "citeline.analyzer.run.options"),
    "AnalysisResult": "citeline.analyzer.run.result",
    **dict.fromkeys(("BUCKETS", "DEFAULT_DB", "STAGES"), "citeline.analyzer.store"),
}


def __getattr__(name: str) -> Any:
    """``citeline.analyzer.<name>``: the public name, imported from its module on first use."""
    if name not in _WHERE:
        raise AttributeError(f"module 'citeline.analyzer' has no attribute {name!r}")
    module = importlib.import_module(_WHERE[name])
    return module if name == "judges" else getattr(module, name)


__all__ = [
    "ATTACH",
    "BUCKETS",
    "DEFAULT_ABSTAIN_PHRASES",
    "DEFAULT_DB",
    "EXEMPT_KINDS",
    "STAGES",
    "Agreement",
    "AnalysisResult",
    "Claim",
    "GoldError",
    "GoldSet",
    "Judge",
    "Judgment",
    "Policy",
    "RulesJudge",
    "RunOptions",
    "Split",
    "analyze",
    "calibrate",
    "judges",
    "load_gold",
    "markers",
    "split_answer",
    "split_claims",
]
