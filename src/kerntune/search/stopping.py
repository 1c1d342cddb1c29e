"""Stopping rules a search checks between evaluations (the budgets are the tuner's own).

``Plateau``: the seeds' rule — three consecutive rounds that improve the best time by under 2% mean the
space has plateaued; going on buys little. A round is a fixed number of evaluations. Exhaustive search
never stops on a plateau (its user asked for every config).

The register-boundary rule (applied by the search loop with compiled resources): when the best config's
occupancy is limited by registers and it sits within ``REGISTER_BOUNDARY_MARGIN`` registers per thread of the
next block, one round under 2% gain is enough to stop — more config search will not help, the kernel needs
restructuring (fewer live values), which the stop reason says."""

from __future__ import annotations

from dataclasses import dataclass, field

REGISTER_BOUNDARY_MARGIN = 8
"""Registers per thread above an occupancy step that count as "sitting at the boundary"."""


@dataclass
class Plateau:
    round_size: int
    rounds: int = 3
    gain: float = 0.02
    best: float | None = None
    _round_start_best: float | None = None
    _in_round: int = 0
    _stale: int = 0
    history: list[float] = field(default_factory=list)

    @property
    def stale_rounds(self) -> int:
        """Consecutive finished rounds under the gain, so far."""
        return self._stale

    def add(self, median_ms: float | None) -> str | None:
        """Record one evaluation; return the reason to stop, or None to go on."""
        if median_ms is not None and (self.best is None or median_ms < self.best):
            self.best = median_ms
        self._in_round += 1
        if self._in_round < self.round_size:
            return None
        self._in_round = 0
        before, now = self._round_start_best, self.best
        self._round_start_best = now
        if before is None or now is None:
            return None
        improvement = before / now - 1.0
        self.history.append(improvement)
        self._stale = self._stale + 1 if improvement < self.gain else 0
        if self._stale >= self.rounds:
            return (
                f"plateau: {self.rounds} rounds of {self.round_size} configs improved the best by under "
                f"{self.gain:.0%} (best {now:.4g} ms)"
            )
        return None
