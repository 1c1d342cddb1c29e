"""The search over one shape: ask the strategy ahead while compile workers build what it asked, prune what
the compiled resources rule out, time each distinct binary once, and stop on a budget, a target or a plateau.

Per config, in order: a deterministic failure from an earlier run (ledger) is skipped; the compile-ahead
result is awaited — a compile failure is recorded without touching the timing worker, a kernel that cannot
launch (or is under the minimum occupancy) is recorded as ``pruned`` with its reason, a kernel whose binaries
and grids equal an already-timed config's is recorded as ``duplicate`` of it; everything else is gated and
timed by the device worker, with the measurement a race rung asks for (``role = "screen"``) or the full
protocol (``role = "search"``).
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from kerntune.isa.occupancy import occupancy, prune_reason, registers_to_next_block
from kerntune.measure.pacing import BATCH_MS
from kerntune.measure.protocol import MeasureOptionsRecord
from kerntune.measure.speed_of_light import describe, speed_of_light
from kerntune.model import Config, FailureKind, Run, Shape
from kerntune.model.time_plan import FULL, Durations, TimePlan
from kerntune.search.base import Strategy
from kerntune.search.compile_ahead import CompileAhead
from kerntune.search.race import SCREEN_RUNGS, rung_fraction
from kerntune.search.stopping import REGISTER_BOUNDARY_MARGIN, Plateau
from kerntune.settings import Settings
from kerntune.store import CandidateResult, Store
from kerntune.store.ledger import LedgerRow


class Lines(Protocol):
    def finished(self, label: str, status: str, detail: str) -> None: ...


MIN_SCREENED = 8
"""Configs a shape's search times before predicted costs may stop it (``ShapeSearch._budget_spent``)."""


class SearchHost(Protocol):
    """What one shape's search needs from the run that hosts it (``kerntune.tune.run`` provides it): the run
    record, settings, store and progress lines, what the store already holds, and the timing worker's calls.
    The search never starts workers or confirms: it asks the host to evaluate one candidate at a time."""

    @property
    def run(self) -> Run: ...

    @property
    def settings(self) -> Settings: ...

    @property
    def store(self) -> Store: ...

    @property
    def progress(self) -> Lines: ...

    @property
    def compile_workers(self) -> int:
        """This slot's compile-ahead workers: the search asks twice as many configs ahead."""

    @property
    def finished(self) -> set[tuple[str, str, str, str]]:
        """(shape key, role, label, config key) of every candidate the store holds a result for."""

    @property
    def measure(self) -> MeasureOptionsRecord:
        """The full measurement protocol's options; a race rung shortens them (``rung_options``)."""

    def search_spent(self, begun_s: float, later: int, next_s: float, predicted: bool = True) -> str:
        """Why a shape's search stops before an evaluation of ``next_s`` seconds, or "": the shape began at
        ``begun_s`` on the run's clock with ``later`` shapes of this slot to come (``tune.run._Tuner``);
        ``predicted``: the searches' end moved by confirmation's predicted costs, else the plan's fixed share."""

    @property
    def full_evaluation_s(self) -> float:
        """The mean wall time of a full-protocol evaluation so far, baselines included (0 before the first)."""

    @property
    def screening_evaluation_s(self) -> float:
        """The mean wall time of a screening evaluation so far, every shape's (0 before the first)."""

    @property
    def evaluation_s(self) -> float:
        """The mean wall time of an evaluation so far (0 before the first): what the next one will likely take."""

    @property
    def plan(self) -> TimePlan:
        """The run's time bounds: one shape's search, all searches, the whole run (``model.time_plan``)."""

    def payload(
        self, shape: Shape, config: Config, baseline_kernel: str | None, measure: MeasureOptionsRecord | None = None
    ) -> Mapping[str, object]: ...

    def evaluate(
        self,
        shape: Shape,
        config: Config,
        role: str,
        label: str,
        baseline_kernel: str | None = None,
        *,
        measure: MeasureOptionsRecord | None = None,
        precompiled: Mapping[str, Any] | None = None,
    ) -> CandidateResult | None: ...

    def skip_known_bad(
        self, shape: Shape, config: Config, row: LedgerRow, role: str = "search", label: str = ""
    ) -> None: ...


def rung_options(full: MeasureOptionsRecord, rung: int | None) -> MeasureOptionsRecord:
    """Measurement options for a screening rung: warm-up, sampling budget, window and block length shortened by
    the rung's fraction, the interval target loosened by its square root (the interval narrows as √n).

    Hazard guarded: blocks left at the full protocol's 10 ms made every rung-0 screen take at least its five
    blocks, 50 ms, plus its warm-up, whatever its 1/16 budget said: on the H200 a screen took 79 ms (median)
    for kernels of 0.02-4.5 ms, and the timing worker, busy 91% of each shape's search, bounded the search at 8.3
    configs a second (the 20-shape bounded run of 2026-12-02, re-read from its candidates' times)."""
    if rung is None:
        return full.copy()
    f = rung_fraction(rung)
    return {
        **full,
        "warmup_ms": full["warmup_ms"] * f,
        "budget_ms": full["budget_ms"] * f,
        "block_ms": full.get("block_ms", BATCH_MS) * f,
        "min_window_ms": full["min_window_ms"] * f,
        "ramp_limit_ms": full.get("ramp_limit_ms", 1000.0) * f,
        "ci_target": min(0.05, full["ci_target"] / math.sqrt(f)),
    }


@dataclass
class ShapeSearch:
    tuner: SearchHost
    shape: Shape
    strategy: Strategy
    ahead: CompileAhead | None
    baselines: Mapping[str, str]
    """Config key → baseline name of the baselines that are points of the space: timed as baselines, not again."""
    known_bad: Mapping[str, LedgerRow]
    known: dict[tuple[str, str, str], float | None] = field(default_factory=dict)
    """Medians already in the store, by (role, label, config key): a resumed run replays them."""
    signatures: dict[tuple[str, str, str], tuple[str, float | None]] = field(default_factory=dict)
    """(signature, role, label) → (config key, median) of the config timed for those binaries."""
    evaluated: set[str] = field(default_factory=set)
    begun_s: float = 0.0
    """Where the shape began (its baselines included) on the run's clock."""
    later: int = 0
    """This slot's shapes still to come when it began: each keeps its even part of the searches' time."""
    best_full: tuple[float, Mapping[str, object], Mapping[str, int]] | None = None
    """The fastest full measurement so far with its compiled resources and the device's limits."""
    durations: Durations = field(default_factory=Durations)
    """This shape's evaluations' wall times by rung (``FULL``: the full protocol): what winding down will cost."""

    def run(self) -> str:
        """Search until the strategy ends or a stopping rule fires; return why it stopped ("" if it ran out)."""
        tuner = self.tuner
        window: deque[Config] = deque()
        lookahead = 2 * self.tuner.compile_workers if self.ahead is not None else 1
        plateau = None
        if not self.strategy.stops_itself and self.strategy.name != "exhaustive" and tuner.settings.plateau_rounds:
            size = tuner.settings.plateau_round or max(8, len(self.strategy.configs) // 20)
            plateau = Plateau(size, tuner.settings.plateau_rounds)
        target_ms = tuner.run.options.get("target_ms")
        ended = ""
        while True:
            reason = "" if ended else self._budget_spent()
            if reason:
                if not self.strategy.wind_down(reason):
                    return reason
                # The race measures its survivors before it ends: a run out of budget still has a result.
                ended = reason
                for config in [c for c in window if c.key not in self.evaluated]:
                    window.remove(config)
                    self.strategy.tell(config, None)
            while len(window) < lookahead and (proposed := self.strategy.ask()) is not None:
                window.append(proposed)
                self._submit(proposed)
            if not window:
                return ended or self.strategy.stop_reason
            config = window.popleft()
            rung = self.strategy.rung(config)
            median = self.evaluate(config, rung)
            self.strategy.tell(config, median)
            if rung is None and median is not None and target_ms is not None and median <= float(target_ms):
                return f"target met: {median:.4g} ms <= {float(target_ms):g} ms"
            near = self._near_limit(median) if rung is None else None
            if near is not None:
                return near
            plateaued = plateau.add(median) if plateau is not None else None
            if plateaued is not None:
                return plateaued
            boundary = self.register_boundary(plateau.stale_rounds) if plateau is not None else None
            if boundary is not None:
                return boundary

    def register_boundary(self, stale_rounds: int) -> str | None:
        """The seeds' last stopping rule: the best config is register-bound just past an occupancy step and a
        round brought under 2%: tuning parameters will not move it; restructuring the kernel would."""
        if stale_rounds < 1 or self.best_full is None:
            return None
        median, resources, limits = self.best_full
        fewer = registers_to_next_block(resources, limits)
        if fewer is None or fewer > REGISTER_BOUNDARY_MARGIN:
            return None
        occ = occupancy(resources, limits)
        blocks = occ.blocks_per_sm if occ else 0
        return (
            f"register pressure at an occupancy boundary: the best config ({median:.4g} ms) uses "
            f"{resources.get('registers')} registers per thread, {blocks} block(s) per multiprocessor; "
            f"{fewer} fewer would allow {blocks + 1} — restructure the kernel, more config search will not help"
        )

    def _near_limit(self, median: float | None) -> str | None:
        """Stop when a config runs within KERNTUNE_SOL_STOP of the roofline: nothing faster is left to find."""
        options, limit = self.tuner.run.options, self.tuner.settings.sol_stop
        cost = (options.get("costs") or {}).get(self.shape.key)
        if median is None or not limit or not cost or not options.get("ceilings"):
            return None
        sol = speed_of_light(cost, median, options["ceilings"])
        if sol["bound"] == "latency" or sol["roofline_fraction"] < limit:
            return None
        return f"near the hardware limit: {describe(sol)} (KERNTUNE_SOL_STOP={limit:g})"

    def _budget_spent(self) -> str:
        budget = self.tuner.run.budget
        if budget.evaluations is not None and len(self.evaluated) >= budget.evaluations:
            return f"evaluation budget reached ({budget.evaluations} per shape)"
        # Hazard guarded: a race told to stop still times its survivors (a quarter at rung 1, up to 8 at the full
        # protocol); checked against the next evaluation alone, a shape overran its share by those (on the H200,
        # 15 s shares ended 2-10 s late and left confirmation no time). So the search stops where they still fit.
        # Second hazard: those costs are predicted from the evaluations so far, and a run's first ones pay one-time
        # costs (the timing worker's first kernel load and launcher build); priced from them, the wind-down of a
        # run's first shape looked as long as its share (on the H200 at 12 s/shape, twice in a day, that shape
        # stopped after one config: a winner 5.9x and 6.3x the best one's time). Before MIN_SCREENED configs only
        # the share itself, reached, stops a search — the plan's share, not one moved by predicted confirmation
        # costs (``RunClock.search_spent``).
        if len(self.evaluated) < MIN_SCREENED:
            return self.tuner.search_spent(self.begun_s, self.later, 0.0, predicted=False)
        return self.tuner.search_spent(self.begun_s, self.later, self.tuner.evaluation_s + self._wind_down_s())

    def _rung_s(self, rung: int | None) -> float:
        """The likely wall time of one evaluation at ``rung``: this shape's mean there; else, for the full
        protocol, the run's full evaluations' mean (the baselines are some); else between the screening mean
        (this shape's rung 0, or the run's screening) and the full one, geometrically by the rung's place (a rung
        measures ETA times longer than the one before, on a fixed overhead); 0 where nothing is known yet."""
        seen = self.durations.mean(rung)
        if seen:
            return seen
        full = self.durations.mean(FULL) or self.tuner.full_evaluation_s
        if rung is FULL:
            return full
        # Hazard guarded: a shape's first rungs priced at the full protocol before it has screened anything made a
        # fresh race's wind-down (1 config through every rung) cost 3 full evaluations; after 5 s of baselines that
        # left no search at all in a 9 s share (14 of 20 shapes on the H200 at 12 s/shape).
        screen = self.durations.mean(0) or self.tuner.screening_evaluation_s
        if not screen or not full:
            return full or screen
        return screen * (full / screen) ** (rung / SCREEN_RUNGS) if full > screen else screen

    def _wind_down_s(self) -> float:
        """What winding down costs once the next evaluation is done (it is priced before that one runs)."""
        return sum(count * self._rung_s(rung) for rung, count in self.strategy.wind_down_evaluations(1).items())

    def _submit(self, config: Config) -> None:
        if self.ahead is None or config.key in self.baselines or config.key in self.known_bad:
            return
        self.ahead.submit(self.shape.key, config.key, self.tuner.payload(self.shape, config, None))

    def evaluate(self, config: Config, rung: int | None) -> float | None:
        """Evaluate one proposal (or replay it from the store); return the median to tell the strategy."""
        tuner, shape = self.tuner, self.shape
        role, label = ("screen", f"rung {rung}") if rung is not None else ("search", "")
        if config.key in self.baselines:
            return self.known.get(("baseline", self.baselines[config.key], config.key))
        self.evaluated.add(config.key)  # before the replay check: a resumed run counts what it already did
        if (shape.key, role, label, config.key) in tuner.finished:
            return self.known.get((role, label, config.key))
        if config.key in self.known_bad:
            tuner.skip_known_bad(shape, config, self.known_bad[config.key], role, label)
            return None
        compiled: dict[str, Any] | None = None
        if self.ahead is not None and self.ahead.pending(shape.key, config.key):
            outcome = self.ahead.result(shape.key, config.key)
            if outcome.status == "failed" or (outcome.status == "error" and outcome.kind != "setup"):
                kind = outcome.kind if outcome.kind in FailureKind._value2member_map_ else FailureKind.COMPILE.value
                return self._record(
                    config,
                    role,
                    label,
                    CandidateResult(
                        "failed", failure=FailureKind(kind), reason=f"{outcome.reason} (compile-ahead worker)"
                    ),
                )
            if outcome.status == "ok":
                compiled = outcome.value
                assert compiled is not None
                skip = self._skip(config, role, label, compiled)
                if skip is not None:
                    return skip[0]
        began = time.monotonic()
        result = tuner.evaluate(
            shape, config, role, label, measure=rung_options(tuner.measure, rung), precompiled=compiled
        )
        self.durations.add(rung, time.monotonic() - began)
        median = result.measurement.median_ms if result is not None and result.measurement else None
        if rung is None and median is not None and compiled and (self.best_full is None or median < self.best_full[0]):
            self.best_full = (median, dict(compiled.get("resources") or {}), dict(compiled.get("limits") or {}))
        signature = compiled.get("signature") if compiled else None
        if signature and result is not None and result.status == "ok":
            self.signatures[(signature, role, label)] = (config.key, median)
        return median

    def _skip(self, config: Config, role: str, label: str, compiled: Mapping[str, Any]) -> tuple[float | None] | None:
        """Record a config that needs no timing (pruned or a duplicate) and return its median in a 1-tuple;
        None when it must be timed."""
        resources = dict(compiled.get("resources") or {})
        reasons = [
            prune_reason(r, compiled.get("limits") or {}, self.tuner.settings.min_occupancy)
            for r in [resources, *resources.get("kernels", [])[1:]]
        ]
        reason = next((r for r in reasons if r), None) or (
            f"cannot load: {resources['load_error']}" if resources.get("load_error") else None
        )
        compile_s, binary = compiled.get("compile_s"), compiled.get("binary_hash")
        if reason is not None:
            self._record(
                config,
                role,
                label,
                CandidateResult("pruned", reason=reason, compile_s=compile_s, binary_hash=binary, resources=resources),
            )
            return (None,)
        signature = compiled.get("signature")
        twin = self.signatures.get((signature, role, label)) if signature else None
        if twin is not None:
            self._record(
                config,
                role,
                label,
                CandidateResult(
                    "duplicate",
                    reason=f"same binaries and grids as {twin[0]}: timed once",
                    compile_s=compile_s,
                    binary_hash=binary,
                    resources=resources,
                ),
            )
            return (twin[1],)
        return None

    def _record(self, config: Config, role: str, label: str, result: CandidateResult) -> float | None:
        tuner = self.tuner
        cid = tuner.store.start_candidate(tuner.run.id, self.shape, config, role, label)
        tuner.store.finish_candidate(cid, result)
        tuner.progress.finished(config.key, result.status, result.reason)
        return None
