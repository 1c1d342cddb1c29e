"""Explore, then refine around the best: a first round of configs drawn at random (seeded), after which each
proposal is an untried one-parameter move from one of the ``TOP`` best configs so far (taken in turn), with
every ``EXPLORE_EVERY``-th proposal still random so the search can leave a local optimum. It proposes only
valid configs and costs microseconds per proposal, so it can run far ahead of results (compile workers) and
is the race's default screening order. Kernel spaces reward this: a tile size or a stage count next to a fast
config is usually fast too."""

from __future__ import annotations

import random
from collections.abc import Sequence

from kerntune.model import Config
from kerntune.search.base import Strategy
from kerntune.search.neighbourhood import one_parameter_moves, parameter_names

TOP = 4
EXPLORE_EVERY = 4


class LocalSearch(Strategy):
    name = "local"

    def __init__(
        self,
        configs: Sequence[Config],
        seed: int,
        start: Config | None = None,
        first: Sequence[Config] = (),
        explore: int | None = None,
    ) -> None:
        super().__init__(configs, seed, start, first)
        leading = [c for c in (self.start, *self.first) if c is not None]
        self._random = [c for c in self.configs if c not in leading]
        random.Random(seed).shuffle(self._random)
        self._random.extend(reversed(leading))  # taken from the end: the start, then the seeds, then at random
        self._explore = explore if explore is not None else max(8, min(32, len(self.configs) // 20))
        self._names = parameter_names(self.configs)
        self._asked: set[str] = set()
        self._results: dict[str, float] = {}
        self._turn = 0
        self._by_key = {c.key: c for c in self.configs}

    def ask(self) -> Config | None:
        if len(self._asked) >= len(self.configs):
            return None
        self._turn += 1
        if len(self._asked) >= self._explore and self._turn % EXPLORE_EVERY:
            move = self._move()
            if move is not None:
                return self._take(move)
        while self._random:
            config = self._random.pop()
            if config.key not in self._asked:
                return self._take(config)
        return None

    def _take(self, config: Config) -> Config:
        self._asked.add(config.key)
        return config

    def _move(self) -> Config | None:
        best = sorted(self._results, key=lambda k: self._results[k])[:TOP]
        names = (
            self._names[self._turn % len(self._names) :] + self._names[: self._turn % len(self._names)]
            if self._names
            else []
        )
        for i in range(len(best)):
            centre = self._by_key[best[(self._turn + i) % len(best)]]
            for name in names:  # a different parameter first each time: every axis gets explored
                for move in one_parameter_moves(centre, self.configs, name):
                    if move.key not in self._asked:
                        return move
        return None

    def tell(self, config: Config, median_ms: float | None) -> None:
        if median_ms is not None:
            self._results[config.key] = median_ms
