"""Every valid config, in the space's order."""

from __future__ import annotations

from kerntune.model import Config
from kerntune.search.base import Strategy


class Exhaustive(Strategy):
    name = "exhaustive"
    _next = 0

    def ask(self) -> Config | None:
        if self._next >= len(self.configs):
            return None
        self._next += 1
        return self.configs[self._next - 1]
