"""The run's clock under a time budget (``model.time_plan``): how long it has run, when a shape's search must
stop so that every shape keeps its turn and confirmation its first pass, and what the next evaluation or a fresh
worker likely costs, from this slot's own measured wall times."""

from __future__ import annotations

import time

from kerntune.model import Run
from kerntune.model.time_plan import FULL, SCREENING, Durations, TimePlan, first_comparison_s
from kerntune.settings import Settings


class RunClock:
    """One slot's clock and costs: its phases' wall time, its evaluations' wall times by kind, the plan."""

    def __init__(self, run: Run, settings: Settings, plan: TimePlan, started: float | None = None) -> None:
        self.run, self.settings, self.plan = run, settings, plan
        self.started = time.monotonic() if started is None else started  # the command's start
        # This slot's wall time by phase: its timing worker's start (imports, device context), the wait for its
        # compile pool past the first shape's baselines, the shapes' baselines and searches, confirmation.
        self.phases = {"start_up_s": 0.0, "pool_start_s": 0.0, "search_s": 0.0, "confirm_s": 0.0}
        self.durations = Durations()  # this slot's evaluations' wall times: FULL, or SCREENING for a race rung

    def elapsed(self) -> float:
        """The run's clock (``model.time_plan``): from the command's start under a budget for the run, else from
        this slot's first shape; a resumed run adds what its earlier sessions spent."""
        start_up = self.phases["start_up_s"] + self.phases["pool_start_s"]
        start = self.started + (0.0 if self.plan.counts_start_up else start_up)
        return self.run.elapsed_s + (time.monotonic() - start)

    def search_end_s(self) -> float | None:
        """On the run's clock, when every search must have ended (None: no time bound): the searches' share of
        the bound, or earlier where what is left after it could not hold confirmation's first pass at the costs
        measured here."""
        seconds, run_s = self.plan.search_run_s, self.plan.run_s
        if seconds is None or run_s is None or seconds >= run_s:
            return seconds  # no confirmation planned
        # Hazard guarded: a fixed share for confirmation assumes this device's costs; where a fresh worker's start
        # and a comparison take longer (a slow or loaded host), the first pass — every shape's likely winner timed
        # beside its reference — would be cut and a winner left unconfirmed. It is costed as a start as long as
        # this slot's own, the first comparison as confirmation first prices it, and a full evaluation for each
        # further shape (a worker that has compiled and made inputs once compares faster).
        first = first_comparison_s(self.full_evaluation_s, bool(self.settings.second_timer))
        return min(seconds, run_s - self.start_up_s - first - (len(self.run.shapes) - 1) * self.full_evaluation_s)

    def search_spent(self, begun_s: float, later: int, next_s: float, predicted: bool = True) -> str:
        """Why a shape's search stops before an evaluation of ``next_s`` seconds (its likely cost, and what
        winding down would add), or "". The shape began at ``begun_s`` on the run's clock with ``later`` of this
        slot's shapes still to come: it has the per-shape bound, and at most its even part of the time the
        searches have left — a shape that overran never takes a later one's turn (each later one still gets
        its baselines and a search). ``predicted``: the searches end where confirmation's first pass still fits
        at the costs measured so far (``search_end_s``); else at the plan's fixed search share.

        Hazard guarded: a run's first full evaluation carries the worker's one-time costs, and confirmation's
        first pass priced from it alone (five of them on two shapes) moved the searches' end so early that the
        first shape searched nothing (PoCL on a 2-core host, 6 s/shape: its winner the untuned default)."""
        now = self.elapsed() + next_s
        per_shape = self.plan.search_shape_s
        if per_shape is not None and now - begun_s >= per_shape:
            return f"time budget reached ({self.plan.search_limit(per_shape=True)})"
        end = self.search_end_s() if predicted else self.plan.search_run_s
        if end is not None and now >= begun_s + (end - begun_s) / (1 + later):
            return f"time budget reached ({self.plan.search_limit(per_shape=False)})"
        return ""

    def add_start_up(self, seconds: float, begun_s: float) -> float:
        """Count ``seconds`` spent inside a shape's turn waiting for start-up work (the compile pool coming up) as
        start-up, not as that shape's share; return the shape's start moved on accordingly on the run's clock
        (a per-shape budget's clock excludes start-up, so there the clock itself moves back instead)."""
        self.phases["pool_start_s"] += seconds
        self.phases["search_s"] -= seconds  # the search phase is timed around the shapes' turns
        return begun_s + seconds if self.plan.counts_start_up else begun_s

    @property
    def start_up_s(self) -> float:
        """This slot's measured start (a worker's imports, device context, setup): what a fresh one costs."""
        return self.phases["start_up_s"]

    @property
    def evaluation_s(self) -> float:
        return self.durations.overall

    @property
    def full_evaluation_s(self) -> float:
        """The mean wall time of this slot's full-protocol evaluations (baselines, a race's finalists)."""
        return self.durations.mean(FULL)

    @property
    def screening_evaluation_s(self) -> float:
        """The mean wall time of this slot's screening evaluations (a race's shortened rungs, all shapes)."""
        return self.durations.mean(SCREENING)

    def time_left(self) -> float | None:
        """Seconds until the run's time bound (None: unbounded); confirmation fits itself into them."""
        return None if self.plan.run_s is None else self.plan.run_s - self.elapsed()
