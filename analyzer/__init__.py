"""citeline.analyzer: traces + gold evidence -> one failure bucket per claim.

from citeline.analyzer import analyze
result = analyze("citeline.duckdb", gold="gold.yaml", traces=["traces/"])
result.claims      # polars DataFrame, one row per claim
result.summary     # {bucket: count}

What a run is can be one value, handed to either engine (one process, or partitions on Dask):
options = RunOptions(gold="gold.yaml", traces=["traces/"], attach="sentence")
result = analyze("citeline.duckdb", options)
"""

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
