"""Valid configs in a random order drawn from the run's seed, without repetition; the tuner's budget
(evaluations, seconds) decides how many are tried."""

from __future__ import annotations

import random
from collections.abc import Sequence

from kerntune.model import Config
from kerntune.search.base import Strategy


class RandomSearch(Strategy):
    name = "random"

    def __init__(
        self, configs: Sequence[Config], seed: int, start: Config | None = None, first: Sequence[Config] = ()
    ) -> None:
        super().__init__(configs, seed, start, first)
        self._order = [c for c in self.configs if c not in self.first]
        random.Random(seed).shuffle(self._order)
        self._order[:0] = self.first  # the spec's seeds, then at random

    def ask(self) -> Config | None:
        return self._order.pop(0) if self._order else None
