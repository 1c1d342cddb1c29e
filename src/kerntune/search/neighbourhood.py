"""Configs that differ from a start config in one parameter only: the moves of coordinate search and of
the one-lever rule (change one thing at a time, so a difference can be attributed to it)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from kerntune.model import Config


def one_parameter_moves(start: Config, configs: Iterable[Config], name: str) -> list[Config]:
    """Valid configs equal to ``start`` except in parameter ``name`` (in the space's order)."""
    others = {k: v for k, v in start.items if k != name}
    return [c for c in configs if c.get(name) != start.get(name) and {k: v for k, v in c.items if k != name} == others]


def parameter_names(configs: Sequence[Config]) -> list[str]:
    """Names of the parameters that take more than one value among ``configs``, in config order."""
    if not configs:
        return []
    names = [k for k, _ in configs[0].items]
    return [n for n in names if len({c.get(n) for c in configs}) > 1]
