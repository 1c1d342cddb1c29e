"""Coordinate (pattern) search: from the start config, try every value of one parameter with the others
held; move to the best; go on with the next parameter; stop after a full pass over the parameters brings no
improvement. Cheap on spaces whose parameters act nearly independently (tile sizes, then warps, then
stages); the tuner's budget caps it like any other strategy."""

from __future__ import annotations

from collections.abc import Sequence

from kerntune.model import Config
from kerntune.search.base import Strategy
from kerntune.search.neighbourhood import one_parameter_moves, parameter_names


class CoordinateSearch(Strategy):
    name = "coordinate"

    def __init__(
        self, configs: Sequence[Config], seed: int, start: Config | None = None, first: Sequence[Config] = ()
    ) -> None:
        super().__init__(configs, seed, start, first)
        self._names = parameter_names(self.configs)
        self._results: dict[str, float | None] = {}
        self._queue: list[Config] = [self.start] if self.start is not None else []
        self._pending: set[str] = set()
        self._current = self.start
        self._axis = 0
        self._since_improvement = 0

    def _best(self, candidates: Sequence[Config]) -> Config | None:
        timed = [(self._results[c.key], c) for c in candidates if self._results.get(c.key) is not None]
        return min(timed, key=lambda t: t[0])[1] if timed else None  # type: ignore[arg-type,return-value]

    def _plan_next_axis(self) -> None:
        while self._current is not None and self._since_improvement < len(self._names):
            name = self._names[self._axis % len(self._names)]
            self._axis += 1
            self._since_improvement += 1
            moves = [c for c in one_parameter_moves(self._current, self.configs, name) if c.key not in self._results]
            if moves:
                self._queue = moves
                return

    def ask(self) -> Config | None:
        if not self._queue and not self._pending:
            if self._current is not None and self._current.key in self._results:
                best = self._best([c for c in self.configs if c.key in self._results])
                if best is not None and best.key != self._current.key:
                    self._current = best
                    self._since_improvement = 0
            self._plan_next_axis()
        if not self._queue:
            return None
        config = self._queue.pop(0)
        self._pending.add(config.key)
        return config

    def tell(self, config: Config, median_ms: float | None) -> None:
        self._pending.discard(config.key)
        self._results[config.key] = median_ms
