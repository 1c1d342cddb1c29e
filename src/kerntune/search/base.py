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
    stops_itself = False
    stop_reason = ""
    """Why the strategy ended early, when it did (a strategy that stops itself sets it)."""
    """True when the strategy applies its own stopping rule (the tuner's plateau rule then stays out)."""

    def __init__(
        self, configs: Sequence[Config], seed: int, start: Config | None = None, first: Sequence[Config] = ()
    ) -> None:
        self.configs = list(configs)
        self.seed = seed
        self.start = (
            start if start is not None and start in self.configs else (self.configs[0] if self.configs else None)
        )
        """Where local strategies begin: the space's default config when valid, else the first valid one."""
        valid = {c.key for c in self.configs}
        self.first = [c for c in dict.fromkeys(first) if c.key in valid and c != self.start]
        """Configs to try right after ``start`` (the spec's seeds), where the strategy has a free order."""

    @abstractmethod
    def ask(self) -> Config | None:
        """The next config to evaluate, or None when the strategy has nothing left to try."""

    def tell(self, config: Config, median_ms: float | None) -> None:  # noqa: B027 - optional for static orders
        """The result of a config the strategy proposed (None: failed or not timed)."""

    def wind_down(self, reason: str) -> bool:
        """A budget ran out: propose no new config from now on. Return True to go on re-measuring configs
        already evaluated (a race's survivors), False to stop at once (the default)."""
        return False

    def wind_down_evaluations(self, after: int = 0) -> dict[int | None, int]:
        """What ``wind_down`` would still evaluate if a budget ran out now (or after ``after`` more proposals are
        evaluated): a count per rung (None: the full protocol). A budget stops the search early enough for these
        to fit. None left (the default)."""
        return {}

    def rung(self, config: Config) -> int | None:
        """The screening rung of a pending proposal (0: shortest measurement), or None for the full protocol.
        ``ask`` may be called again before earlier proposals are told (the tuner compiles ahead); a strategy
        that must wait for results returns None from ``ask`` until they are told, and None with nothing
        pending means it is done."""
        return None
