"""One lever at a time (the hipfire rule): from the start config, every value of one parameter with all
others held, then the next parameter, never two changes at once. Every result is attributable to one
change; the tuner's report ranks them."""

from __future__ import annotations

from collections.abc import Sequence

from kerntune.model import Config
from kerntune.search.base import Strategy
from kerntune.search.neighbourhood import one_parameter_moves, parameter_names


class OneLever(Strategy):
    name = "lever"

    def __init__(
        self, configs: Sequence[Config], seed: int, start: Config | None = None, first: Sequence[Config] = ()
    ) -> None:
        super().__init__(configs, seed, start, first)
        base = self.start
        self._order: list[Config] = [base] if base is not None else []
        if base is not None:
            for name in parameter_names(self.configs):
                self._order += one_parameter_moves(base, self.configs, name)

    def ask(self) -> Config | None:
        return self._order.pop(0) if self._order else None
