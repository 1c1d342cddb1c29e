"""Search strategies, one module each behind ``Strategy`` (ask for a config, tell its result)."""

from __future__ import annotations

from collections.abc import Sequence

from kerntune.errors import UsageError
from kerntune.model import Config
from kerntune.pipeline.search.base import Strategy
from kerntune.pipeline.search.exhaustive import Exhaustive
from kerntune.pipeline.search.random import RandomSearch

STRATEGIES: dict[str, type[Strategy]] = {"exhaustive": Exhaustive, "random": RandomSearch}


def make_strategy(name: str, configs: Sequence[Config], seed: int) -> Strategy:
    if name not in STRATEGIES:
        raise UsageError(f"unknown strategy {name!r}: choose one of {', '.join(STRATEGIES)}")
    return STRATEGIES[name](configs, seed)


__all__ = ["STRATEGIES", "Strategy", "make_strategy"]
