"""Valid configs in a random order drawn from the run's seed, without repetition; the tuner's budget
(evaluations, seconds) decides how many are tried."""

from __future__ import annotations

import random
from collections.abc import Sequence

from kerntune.model import Config
from kerntune.pipeline.search.base import Strategy


class RandomSearch(Strategy):
    name = "random"

    def __init__(self, configs: Sequence[Config], seed: int, start: Config | None = None) -> None:
        super().__init__(configs, seed, start)
        self._order = list(self.configs)
        random.Random(seed).shuffle(self._order)

    def ask(self) -> Config | None:
        return self._order.pop(0) if self._order else None
