"""How a time budget is spent: the whole run — start-up, baselines, search, confirmation — ends inside it.

``--budget 90s`` bounds the run from the command's start, start-up included; ``--budget 12s/shape`` bounds each
shape's search and the run at 12 s × shapes from the first shape's start (the start-up — imports, device
context, workers — is paid once and reported apart, ``phases`` in the run's report).
When the run confirms its finalists (a device that claims timing, ``KERNTUNE_CONFIRM_ROUNDS`` > 0), the search
gets ``1 − CONFIRM_SHARE`` of each bound and confirmation the rest; confirmation then stops before a comparison
that the time left cannot hold (its cost: the slowest comparison so far, a fresh worker's start before a round)
and says what it cut. The plan is the estimate ``tune`` prints before it starts."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kerntune.model.run import Budget

CONFIRM_SHARE = 0.25
"""Of a time budget, the share kept for confirmation when the run confirms (3 rounds of 3 finalists and the
baselines, interleaved with the reference, fit in about a quarter of a search of 12 s a shape on the H200)."""


@dataclass(frozen=True)
class TimePlan:
    """The wall-time bounds of one run; None where the budget sets none."""

    run_s: float | None
    """The whole run: from the command's start (a budget for the run), or from the first shape's (per shape)."""
    search_shape_s: float | None
    """One shape's search, from its first proposal."""
    search_run_s: float | None
    """Every search of the run together, on ``run_s``'s clock: the rest is confirmation's."""
    counts_start_up: bool = True
    """The run's clock starts with the command (a budget for the run), else with the first shape."""

    @classmethod
    def of(cls, budget: Budget, shapes: int, confirms: bool) -> TimePlan:
        run_s = budget.seconds if budget.seconds is not None else (
            budget.shape_seconds * shapes if budget.shape_seconds is not None else None)
        keep = 1.0 - CONFIRM_SHARE if confirms else 1.0
        return cls(run_s, None if budget.shape_seconds is None else budget.shape_seconds * keep,
                   None if run_s is None else run_s * keep, counts_start_up=budget.seconds is not None)

    def search_limit(self, per_shape: bool) -> str:
        """Which search bound was reached, in words: ``2 s per shape``, or ``9 s of 12 s for the run to search``."""
        limit, whole = ((self.search_shape_s, None if self.run_s is None or self.search_run_s is None else
                         self.search_shape_s and self.search_shape_s * self.run_s / self.search_run_s)
                        if per_shape else (self.search_run_s, self.run_s))
        unit = "per shape" if per_shape else "for the run"
        if limit is None or whole is None or abs(whole - limit) < 1e-9:
            return f"{(whole or limit or 0):.3g} s {unit}"
        return f"{limit:.3g} s of {whole:.3g} s {unit} to search, the rest to confirm"

    def estimate(self) -> dict[str, Any] | None:
        """Seconds the run will take at most, by phase (None: a budget of evaluations only, no time bound)."""
        if self.run_s is None or self.search_run_s is None:
            return None
        return {"run_s": self.run_s, "search_s": self.search_run_s, "confirm_s": self.run_s - self.search_run_s}

    def describe(self) -> str:
        found = self.estimate()
        if found is None:
            return "no time bound (a budget of evaluations): the run takes what its evaluations take"
        confirm = f", confirmation {found['confirm_s']:.0f} s" if found["confirm_s"] else ""
        return f"ends within {found['run_s']:.0f} s: search {found['search_s']:.0f} s{confirm}"
