"""The SQLite store of runs, candidates, samples and verdicts."""

from kerntune.store.sqlite import CandidateResult, Store

__all__ = ["CandidateResult", "Store"]
