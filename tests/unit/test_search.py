from __future__ import annotations

import pytest

from kerntune.errors import UsageError
from kerntune.model import Config
from kerntune.pipeline.search import make_strategy

CONFIGS = [Config.of({"X": i}) for i in range(20)]


def _drain(name: str, seed: int = 0) -> list[Config]:
    strategy = make_strategy(name, CONFIGS, seed)
    out = []
    while (c := strategy.ask()) is not None:
        strategy.tell(c, 1.0)
        out.append(c)
    return out


def test_exhaustive_visits_every_config_in_order() -> None:
    assert _drain("exhaustive") == CONFIGS


def test_random_is_a_seeded_permutation() -> None:
    first = _drain("random", seed=3)
    assert sorted(first, key=lambda c: c["X"]) == CONFIGS
    assert first == _drain("random", seed=3)
    assert first != _drain("random", seed=4)
    assert first != CONFIGS


def test_unknown_strategy() -> None:
    with pytest.raises(UsageError, match="unknown strategy"):
        make_strategy("annealing-by-hand", CONFIGS, 0)
