"""citeline.analyzer: traces + gold evidence -> one failure bucket per claim.

from citeline.analyzer import analyze
result = analyze("citeline.duckdb", gold="gold.yaml", traces=["traces/"])
result.claims      # polars DataFrame, one row per claim
result.summary     # {bucket: count}
"""

from citeline.analyzer import judges
from citeline.analyzer.claims.policy import ATTACH, EXEMPT_KINDS, Policy
from citeline.analyzer.claims.splitter import Claim, Split, markers, split_answer, split_claims
from citeline.analyzer.gold.goldset import GoldError, GoldSet, load_gold
from citeline.analyzer.judges import Judge, Judgment, RulesJudge
from citeline.analyzer.labels.calibrate import Agreement, calibrate
from citeline.analyzer.run.analyze import DEFAULT_ABSTAIN_PHRASES, analyze
from citeline.analyzer.run.result import AnalysisResult
from citeline.analyzer.store import BUCKETS, DEFAULT_DB, STAGES

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
    "Split",
    "analyze",
    "calibrate",
    "judges",
    "load_gold",
    "markers",
    "split_answer",
    "split_claims",
]
