"""The interface every search strategy implements.

The tuner asks for the next config and tells each result (median milliseconds, or None for a failed or
untimed candidate). Strategies are deterministic for a given seed and sequence of results, which is what
lets ``--resume`` replay finished candidates from the store instead of measuring them again.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

from kerntune.model import Config


class Strategy(ABC):
    name = ""

    def __init__(self, configs: Sequence[Config], seed: int, start: Config | None = None) -> None:
        self.configs = list(configs)
        self.seed = seed
        self.start = start if start is not None and start in self.configs else (self.configs[0] if self.configs
                                                                                 else None)
        """Where local strategies begin: the space's default config when valid, else the first valid one."""

    @abstractmethod
    def ask(self) -> Config | None:
        """The next config to evaluate, or None when the strategy has nothing left to try."""

    def tell(self, config: Config, median_ms: float | None) -> None:  # noqa: B027 - optional for static orders
        """The result of a config the strategy proposed (None: failed or not timed)."""
