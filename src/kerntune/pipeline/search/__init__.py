"""Search strategies, one module each behind ``Strategy`` (ask for a config, tell its result)."""

from __future__ import annotations

from collections.abc import Sequence

from kerntune.errors import UsageError
from kerntune.model import Config
from kerntune.pipeline.search.base import Strategy
from kerntune.pipeline.search.coordinate import CoordinateSearch
from kerntune.pipeline.search.exhaustive import Exhaustive
from kerntune.pipeline.search.lever import OneLever
from kerntune.pipeline.search.random import RandomSearch
from kerntune.pipeline.search.tpe import TPESearch

STRATEGIES: dict[str, type[Strategy]] = {
    "exhaustive": Exhaustive, "random": RandomSearch, "coordinate": CoordinateSearch, "lever": OneLever,
    "tpe": TPESearch,
}


def make_strategy(name: str, configs: Sequence[Config], seed: int, start: Config | None = None) -> Strategy:
    """The strategy ``name`` over ``configs`` (the valid ones), seeded; ``start`` seeds local strategies."""
    if name not in STRATEGIES:
        raise UsageError(f"unknown strategy {name!r}: choose one of {', '.join(STRATEGIES)}")
    return STRATEGIES[name](configs, seed, start)


__all__ = ["STRATEGIES", "Strategy", "make_strategy"]
