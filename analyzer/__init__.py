"""citeline.analyzer: traces + gold evidence -> one failure bucket per claim.

from citeline.analyzer import analyze
result = analyze("citeline.duckdb", gold="gold.yaml", traces=["traces/"])
result.claims      # polars DataFrame, one row per claim
result.summary     # {bucket: count}
"""

from . import judges
from ._analyze import DEFAULT_ABSTAIN_PHRASES, analyze
from ._calibrate import Agreement, calibrate
from ._claims import Claim, Split, markers, split_answer, split_claims
from ._gold import GoldError, GoldSet, load_gold
from ._policy import ATTACH, EXEMPT_KINDS, Policy
from ._result import AnalysisResult
from ._store import BUCKETS, DEFAULT_DB, STAGES
from .judges import Judge, Judgment, RulesJudge

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
