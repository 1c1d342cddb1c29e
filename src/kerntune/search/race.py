"""A successive-halving race: short measurements for many configs, longer ones for the survivors.

Rung 0 screens the configs an inner strategy proposes (``local``: random, then moves around the best) with a
measurement 1/16 as long as the full protocol; screening stops when the inner strategy is exhausted or its
results plateau (3 rounds under 2% gain, as the tuner's rule). The best quarter of the screened go on to rung 1
(1/4 as long), and the best of those — at most ``FULL_MAX`` — get the full protocol, which is what the tuner
ranks and confirms. A screening
median only decides who goes on: it is never reported as a result, because a short measurement of the best
of hundreds is biased low (the luckiest sample wins).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from kerntune.model import Config
from kerntune.search.base import Strategy
from kerntune.search.local import LocalSearch
from kerntune.search.stopping import Plateau

ETA = 4
"""Each rung keeps the best 1/ETA of the previous one and measures it ETA times longer."""
SCREEN_RUNGS = 2
"""Rungs shorter than the full protocol: 1/16 and 1/4 of its sampling budget."""
PLATEAU_ROUND_MAX = 32
"""Screened configs per plateau round: 5% of the space, at most this many (3 stale rounds end screening)."""
PLATEAU_TOP = 4
"""The plateau rule watches the mean of the best few screening medians, not the best one: the minimum of
hundreds of short, noisy measurements keeps falling by luck alone (it never plateaus on a 20 µs kernel)."""
SCREEN_MAX = 256
"""Most configs screened: past this, more screening rarely changes the winner (a budget of its own)."""
FULL_MAX = 8
"""Most configs given the full protocol; the finalists' fresh-process confirmation re-times the best of them."""


def rung_fraction(rung: int) -> float:
    """Share of the full protocol's warm-up and sampling budget that screening rung ``rung`` gets."""
    return float(ETA) ** (rung - SCREEN_RUNGS)


class Race(Strategy):
    name = "race"
    stops_itself = True

    def __init__(
        self,
        configs: Sequence[Config],
        seed: int,
        start: Config | None = None,
        first: Sequence[Config] = (),
        inner: type[Strategy] = LocalSearch,
    ) -> None:
        super().__init__(configs, seed, start, first)
        self._inner = inner(self.configs, seed, start, first)
        self._plateau = Plateau(max(8, min(PLATEAU_ROUND_MAX, len(self.configs) // 20)))
        self._screening = True
        self.stop_reason = ""
        self._current = 0
        self._results: list[dict[str, float | None]] = [{} for _ in range(SCREEN_RUNGS + 1)]
        self._queue: list[Config] = []
        self._pending: dict[str, int] = {}

    def rung(self, config: Config) -> int | None:
        r = self._pending.get(config.key, SCREEN_RUNGS)
        return r if r < SCREEN_RUNGS else None

    def ask(self) -> Config | None:
        if self._screening:
            config = self._inner.ask() if not self.stop_reason else None
            if config is not None:
                self._pending[config.key] = 0
                return config
            if self._pending:
                return None  # wait for the screened ones before ranking them
            self._screening = False
            self._promote()
        while not self._queue and not self._pending and self._current < SCREEN_RUNGS:
            self._promote()
        if not self._queue:
            return None
        config = self._queue.pop(0)
        self._pending[config.key] = self._current
        return config

    def _promote(self) -> None:
        """Rank the finished rung and queue its best for the next (longer) rung."""
        done = self._results[self._current]
        timed = sorted((m, k) for k, m in done.items() if m is not None)
        self._current += 1
        if self._current > SCREEN_RUNGS:
            return
        keep = math.ceil(len(timed) / ETA)
        if self._current == SCREEN_RUNGS:
            keep = min(keep, FULL_MAX)
        keep = max(keep, min(len(timed), 2))
        by_key = {c.key: c for c in self.configs}
        self._queue = [by_key[k] for _, k in timed[:keep]]

    def wind_down(self, reason: str) -> bool:
        """Stop screening and race what was screened: the run ends with full measurements of its best."""
        if self._screening and not self.stop_reason:
            self.stop_reason = f"screening ended: {reason}"
        return True

    def wind_down_evaluations(self, after: int = 0) -> dict[int | None, int]:
        """The rungs still to run were screening to end now, or after ``after`` more configs are screened: of the
        rung under way, what is queued or pending; then each later rung's share of the one before (the best
        quarter; at most ``FULL_MAX`` at the full protocol). Rung 0 under way counts none of its own: ending it
        proposes no more, and what was asked but not screened is dropped."""
        if self._current > SCREEN_RUNGS:
            return {}
        under_way = len(self._queue) + sum(1 for r in self._pending.values() if r == self._current)
        left: dict[int | None, int] = {}
        if self._current > 0:
            left[self._current if self._current < SCREEN_RUNGS else None] = under_way
            size = len(self._results[self._current]) + under_way  # the rung's size once it ends
        else:
            # Hazard guarded: the tuner asks a compile-ahead window of proposals (30 on the H200) before it tells
            # any; winding down drops the unscreened ones, so only what was screened goes on. Counted as if they
            # went on, a fresh shape's wind-down was priced at 8 configs of rung 1 and kept its search to one
            # config (the first shape of 20 at 12 s/shape on the H200).
            size = sum(1 for m in self._results[0].values() if m is not None) + (after if self._screening else 0)
        for rung in range(self._current + 1, SCREEN_RUNGS + 1):
            keep = math.ceil(size / ETA)
            if rung == SCREEN_RUNGS:
                keep = min(keep, FULL_MAX)
            size = max(keep, min(size, 2))
            left[rung if rung < SCREEN_RUNGS else None] = size
        return {rung: count for rung, count in left.items() if count}

    def tell(self, config: Config, median_ms: float | None) -> None:
        rung = self._pending.pop(config.key, None)
        if rung is None:
            return
        self._results[rung][config.key] = median_ms
        if rung == 0:
            self._inner.tell(config, median_ms)
            if not self.stop_reason:
                best = sorted(m for m in self._results[0].values() if m is not None)[:PLATEAU_TOP]
                reason = self._plateau.add(sum(best) / len(best) if best else None)
                if reason is not None:
                    self.stop_reason = f"screening {reason} (mean of the best {PLATEAU_TOP})"
                elif len(self._results[0]) >= SCREEN_MAX:
                    self.stop_reason = f"screened {SCREEN_MAX} configs (the race's screening limit)"
