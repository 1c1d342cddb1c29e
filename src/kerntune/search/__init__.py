"""Search strategies, one module each behind ``Strategy`` (ask for a config, tell its result)."""

from __future__ import annotations

from collections.abc import Sequence

from kerntune.errors import UsageError
from kerntune.model import Config
from kerntune.search.base import Strategy
from kerntune.search.cmaes import CMAESSearch
from kerntune.search.coordinate import CoordinateSearch
from kerntune.search.exhaustive import Exhaustive
from kerntune.search.lever import OneLever
from kerntune.search.local import LocalSearch
from kerntune.search.race import Race
from kerntune.search.random import RandomSearch
from kerntune.search.tpe import TPESearch

STRATEGIES: dict[str, type[Strategy]] = {
    "exhaustive": Exhaustive,
    "random": RandomSearch,
    "coordinate": CoordinateSearch,
    "lever": OneLever,
    "tpe": TPESearch,
    "cmaes": CMAESSearch,
    "race": Race,
    "local": LocalSearch,
}


AUTO_EXHAUSTIVE_MAX = 64
"""``auto`` times every config of spaces up to this size: racing a small space saves little and can drop a
config whose short screening measurement was unlucky."""


def resolve_strategy(name: str, valid: int, timed: bool) -> str:
    """The strategy ``auto`` stands for at one shape: ``race`` over more than ``AUTO_EXHAUSTIVE_MAX`` valid
    configs on a device whose timings are claimed, ``exhaustive`` otherwise (a race ranks by time)."""
    if name != "auto":
        return name
    return "race" if timed and valid > AUTO_EXHAUSTIVE_MAX else "exhaustive"


def make_strategy(
    name: str, configs: Sequence[Config], seed: int, start: Config | None = None, first: Sequence[Config] = ()
) -> Strategy:
    """The strategy ``name`` over ``configs`` (the valid ones), seeded; ``start`` seeds local strategies;
    ``first`` (the spec's seeds) are tried right after the start by local, race and random (exhaustive keeps
    its order; TPE, CMA-ES, coordinate and lever let their own rule decide)."""
    name = resolve_strategy(name, len(configs), True)
    if name not in STRATEGIES:
        raise UsageError(f"unknown strategy {name!r}: choose one of auto, {', '.join(STRATEGIES)}")
    return STRATEGIES[name](configs, seed, start, first)


__all__ = ["STRATEGIES", "Strategy", "make_strategy", "resolve_strategy"]
