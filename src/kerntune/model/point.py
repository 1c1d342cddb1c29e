"""Points: ``Config`` (one point of a Space) and ``Shape`` (one problem size), with stable text keys."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

Scalar = int | float | str | bool
Meta = dict[str, Any]
"""Shape fields, config values and derived values merged in one dict (what a grid function sees)."""


def _scalar_text(value: Scalar) -> str:
    return repr(value) if isinstance(value, str) else str(value)


@dataclass(frozen=True)
class _Point:
    """An ordered, immutable name → scalar mapping with a stable text form (used as a store key)."""

    items: tuple[tuple[str, Scalar], ...]

    @classmethod
    def of(cls, values: Mapping[str, Scalar]) -> _Point:
        return cls(tuple((str(k), v) for k, v in values.items()))

    def as_dict(self) -> dict[str, Scalar]:
        return dict(self.items)

    def __getitem__(self, name: str) -> Scalar:
        for key, value in self.items:
            if key == name:
                return value
        raise KeyError(name)

    def get(self, name: str, default: Scalar | None = None) -> Scalar | None:
        return self.as_dict().get(name, default)

    def names(self) -> tuple[str, ...]:
        return tuple(k for k, _ in self.items)

    @property
    def key(self) -> str:
        """Stable text form, e.g. ``BLOCK_M=128,BLOCK_N=64``: equal points give equal keys."""
        return ",".join(f"{k}={_scalar_text(v)}" for k, v in self.items)

    def __str__(self) -> str:
        return self.key


class Config(_Point):
    """One point of a Space: parameter name → value."""

    @classmethod
    def of(cls, values: Mapping[str, Scalar]) -> Config:
        return cls(tuple((str(k), v) for k, v in values.items()))


class Shape(_Point):
    """One problem size: field name → value (e.g. M, N, K)."""

    @classmethod
    def of(cls, values: Mapping[str, Scalar]) -> Shape:
        return cls(tuple((str(k), v) for k, v in values.items()))
