"""How a time budget is spent: the whole run — start-up, baselines, search, confirmation — ends inside it.

``--budget 90s`` bounds the run from the command's start, start-up included; ``--budget 12s/shape`` bounds each
shape's baselines and search and the run at 12 s × shapes from the first shape's start (the start-up — imports, device
context, workers — is paid once and reported apart, ``phases`` in the run's report).
When the run confirms its finalists (a device that claims timing, ``KERNTUNE_CONFIRM_ROUNDS`` > 0), the search
gets ``1 − CONFIRM_SHARE`` of each bound and confirmation the rest; confirmation then stops before a comparison
that the time left cannot hold (its cost: the slowest comparison so far, a fresh worker's start before a round)
and says what it cut. The plan is the estimate ``tune`` prints before it starts."""

from __future__ import annotations

from dataclasses import dataclass, field

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
    """One shape's baselines and search, from the shape's start."""
    search_run_s: float | None
    """Every search of the run together, on ``run_s``'s clock: the rest is confirmation's."""
    counts_start_up: bool = True
    """The run's clock starts with the command (a budget for the run), else with the first shape."""
    evaluations: int = 0
    """Evaluations planned (search, baselines, confirmation), for the estimate of a run without a time bound."""
    earlier_evaluation_s: float | None = None
    """The mean seconds of an evaluation in earlier runs of this spec on this device (None: no earlier run)."""

    @classmethod
    def of(cls, budget: Budget, shapes: int, confirms: bool) -> TimePlan:
        run_s = (
            budget.seconds
            if budget.seconds is not None
            else (budget.shape_seconds * shapes if budget.shape_seconds is not None else None)
        )
        keep = 1.0 - CONFIRM_SHARE if confirms else 1.0
        return cls(
            run_s,
            None if budget.shape_seconds is None else budget.shape_seconds * keep,
            None if run_s is None else run_s * keep,
            counts_start_up=budget.seconds is not None,
        )

    def search_limit(self, per_shape: bool) -> str:
        """Which search bound was reached, in words: ``2 s per shape``, or ``9 s of 12 s for the run to search``."""
        limit, whole = (
            (
                self.search_shape_s,
                None
                if self.run_s is None or self.search_run_s is None
                else self.search_shape_s and self.search_shape_s * self.run_s / self.search_run_s,
            )
            if per_shape
            else (self.search_run_s, self.run_s)
        )
        unit = "per shape" if per_shape else "for the run"
        if limit is None or whole is None or abs(whole - limit) < 1e-9:
            return f"{(whole or limit or 0):.3g} s {unit}"
        return f"{limit:.3g} s of {whole:.3g} s {unit} to search, the rest to confirm"

    def estimate(self) -> dict[str, object] | None:
        """Seconds the run will take: at most, by phase, under a time bound (``basis`` budget); else about, from
        earlier runs' evaluation times (``basis`` earlier runs); None when neither is known."""
        if self.run_s is not None and self.search_run_s is not None:
            return {
                "run_s": self.run_s,
                "search_s": self.search_run_s,
                "confirm_s": self.run_s - self.search_run_s,
                "basis": "budget",
            }
        if self.earlier_evaluation_s is None or not self.evaluations:
            return None
        return {
            "run_s": round(self.evaluations * self.earlier_evaluation_s, 1),
            "search_s": None,
            "confirm_s": None,
            "basis": f"earlier runs: {self.evaluations} evaluations × {self.earlier_evaluation_s:.2g} s",
        }

    def describe(self) -> str:
        found = self.estimate()
        if found is None:
            return "no time bound (a budget of evaluations) and no earlier run to estimate from"
        if found["basis"] != "budget":
            return f"about {found['run_s']:.0f} s ({found['basis']}), start-up apart; no time bound"
        confirm = f", confirmation {found['confirm_s']:.0f} s" if found["confirm_s"] else ""
        return f"ends within {found['run_s']:.0f} s: search {found['search_s']:.0f} s{confirm}"


def first_comparison_s(full_evaluation_s: float, second_timer: bool) -> float:
    """What confirmation's first comparison likely costs before one is timed: two candidates' full evaluations (a
    new worker compiles both and makes the shape's inputs), each timed twice where the second timer runs.
    Estimated from the search's mean evaluation instead (screening included), a PoCL comparison of 4.6 s was
    priced at 1.8 s and a 12 s bound overrun by 1.4 s."""
    return 2 * full_evaluation_s * (2 if second_timer else 1)


FULL = None
"""The kind of an evaluation at the full measurement protocol (a race's screening rungs are 0, 1, ...)."""
SCREENING = -1
"""The kind of a screening evaluation whose rung the recorder does not know (the run; its shape search does)."""


@dataclass
class Durations:
    """Wall seconds of evaluations by kind (a race's screening rung, or ``FULL``): what the next one likely costs,
    and what a strategy still winding down will."""

    seen: dict[int | None, list[float]] = field(default_factory=dict)

    def add(self, kind: int | None, seconds: float) -> None:
        self.seen.setdefault(kind, []).append(seconds)

    def mean(self, kind: int | None) -> float:
        """The mean of that kind (0 before the first)."""
        times = self.seen.get(kind)
        return sum(times) / len(times) if times else 0.0

    @property
    def overall(self) -> float:
        """The mean over every kind (0 before the first)."""
        times = [t for kind in self.seen.values() for t in kind]
        return sum(times) / len(times) if times else 0.0
