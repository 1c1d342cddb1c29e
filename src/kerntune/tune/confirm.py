"""Confirmation: every shape's finalists and baselines re-timed in fresh processes before a winner is declared,
each interleaved launch by launch with the shape's reference, so they are ranked by ratios measured side by side.

The best of many search-time medians is biased low (it is partly the luckiest sample), and one long-lived
process carries state (clocks, allocator placement, warm caches) that a real program does not share: each round
starts a new worker (one for all shapes) and alternates the candidates' order. Within a round, each candidate
is timed interleaved with the reference (the library baseline where the spec declares one, else the default
config: A B B A ..., the same flush before each launch), so the power state, the clocks and the neighbours of the
moment land on both: a block of one implementation, then a block of another, are not equal conditions under a
power cap. The round's ratio is the median over A B B A blocks of the samples' log ratios
(``stats.paired_log_ratio``: the launch before cancels within a block); it is stored with the candidate's
confirmation (``paired`` in its telemetry) and the report ranks by the ratios over rounds (``report.summary``).
Graph-mode measurements (interleaving is eager only) and a shape without a reference are confirmed one candidate
at a time, as before.

After the first round only the finalists within ``confirm_band`` (3%) of the best finalist's ratio are re-timed:
a clear loser keeps its first round's ratio, and the rounds that decide between close finalists cost less
(baselines are always re-timed: the report's speedups over them need every round).

Under a time budget (``model.time_plan``) confirmation runs round by round over every shape, so a cut keeps every
shape's earlier rounds: before each comparison it checks that the time left holds the slowest comparison so far
(and, before a round, the slowest worker start), and stops with a sentence saying what was cut.
"""

from __future__ import annotations

import math
import secrets
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Protocol

from kerntune.exec.pool import Outcome
from kerntune.exec.slots import Slot
from kerntune.measure.protocol import MeasureOptionsRecord
from kerntune.measure.second_timer import said
from kerntune.measure.stats import paired_log_ratio
from kerntune.model import Candidate, Config, FailureKind, Measurement, Run, Shape
from kerntune.model.time_plan import first_comparison_s
from kerntune.settings import Settings
from kerntune.store import Store
from kerntune.tune.inputs import EVALUATE, EVALUATE_PAIR
from kerntune.tune.outcomes import candidate_result
from kerntune.tune.request import Progress

if TYPE_CHECKING:
    from kerntune.tune.evaluate import CandidatePayload, PairPayload


class ConfirmHost(Protocol):
    """What confirmation needs of the run hosting it (``tune.run._Tuner``)."""

    run: Run
    store: Store
    settings: Settings
    progress: Progress
    worker: Slot
    measure: MeasureOptionsRecord

    def finalists(self, shape: Shape) -> list[Candidate]: ...

    def time_left(self) -> float | None:
        """Seconds left in the run's time bound; None: unbounded."""

    @property
    def start_up_s(self) -> float:
        """The run's own measured worker start: what a fresh worker is first expected to cost."""

    @property
    def full_evaluation_s(self) -> float:
        """The search's mean full-protocol evaluation wall time (compile, gate, measure): a comparison's first
        estimate is built from it."""

    def payload(
        self, shape: Shape, config: Config, baseline_kernel: str | None, measure: MeasureOptionsRecord | None = None
    ) -> CandidatePayload: ...


def reference(finalists: Sequence[Candidate]) -> Candidate | None:
    """What every finalist is timed beside: the library baseline (a callable, no config) if any, else the first
    baseline (the spec's default config)."""
    baselines = [c for c in finalists if c.role == "baseline" and c.id is not None]
    library = [c for c in baselines if not c.config.items]
    chosen = library or baselines
    return chosen[0] if chosen else None


class _OutOfTime(Exception):
    """A comparison stopped at the time bound: confirmation ends there (nothing is marked failed)."""


class _Clock:
    """What confirmation has spent, to tell whether the next step fits in the time left."""

    def __init__(self, host: ConfirmHost) -> None:
        # Until a round's worker start is seen, it costs what the run's own start did.
        self.host, self.start_s, self.done, self.cut = host, host.start_up_s, 0, ""
        self.compare_s = first_comparison_s(host.full_evaluation_s, bool(host.settings.second_timer))
        self.started = False

    def fits(self, starting_round: bool = False) -> bool:
        left = self.host.time_left()
        need = self.compare_s + (self.start_s if starting_round else 0.0)
        return left is None or left > need

    def call_limit_s(self, timeout_s: float) -> tuple[float, bool]:
        """A comparison's call timeout, and whether it is the time bound's (a call running past what is left of
        the bound is stopped there: a step misjudged never carries the run past it)."""
        left = self.host.time_left()
        if left is None or left >= timeout_s:
            return timeout_s, False
        return max(left, 0.1), True

    def spent(self, began: float, starting: bool = False) -> None:
        took = time.monotonic() - began
        if starting:
            self.start_s = took if self.done == 0 and not self.started else max(self.start_s, took)
            self.started = True
        else:  # the slowest measured comparison (the first estimate is replaced by what was seen)
            self.compare_s = took if self.done == 0 else max(self.compare_s, took)
            self.done += 1


def confirm(host: ConfirmHost, shapes: Sequence[Shape], claims_timing: bool) -> str:
    """Confirm the shapes' finalists; returns what a time budget cut (empty when nothing was)."""
    rounds = host.settings.confirm_rounds
    if rounds == 0 or host.settings.finalists == 0 or not claims_timing:
        return ""
    plan = [(shape, finalists) for shape in shapes if len(finalists := host.finalists(shape)) >= 2]
    interleave = host.measure.get("mode", "eager") == "eager"
    clock = _Clock(host)
    planned = sum(len(f) - (1 if interleave and reference(f) is not None else 0) for _, f in plan) * rounds
    # A finalist found clearly behind stays out of later rounds: were it re-judged against a best whose estimate
    # later rose, it could come back for a round and be ranked on rounds the others did not share.
    dropped: dict[int, float] = {}
    for round_ in range(rounds):
        todo = {
            shape.key: [c for c in finalists if c.id is not None and round_ not in host.store.confirmed_rounds(c.id)]
            for shape, finalists in plan
        }
        if round_ > 0 and interleave and host.settings.confirm_band > 0:
            for shape, finalists in plan:
                behind = {**dropped, **_behind(host.store, finalists, host.settings.confirm_band)}
                dropped.update(behind)
                for c in todo[shape.key]:
                    if c.id in behind:
                        host.progress.finished(
                            _label(host, round_, c),
                            "skipped",
                            f"{behind[c.id]:.1%} behind the best finalist after {round_} "
                            f"round(s), beyond the {host.settings.confirm_band:.0%} band: "
                            "not re-timed",
                        )
                        planned -= 1
                todo[shape.key] = [c for c in todo[shape.key] if c.id not in behind]
        if not any(todo.values()):
            continue
        if not clock.fits(starting_round=True):
            clock.cut = f"round {round_ + 1} of {rounds}"
            break
        log = host.store.home / "logs" / f"confirm-{host.run.id}-{round_}-{secrets.token_hex(2)}.log"
        worker = host.worker.fresh(log)  # the same device as the search, in a new process
        began = time.monotonic()
        worker.start()
        clock.spent(began, starting=True)
        try:
            # The first round in two passes, each shape's best finalist by search time and then the rest, so a
            # cut still confirms every shape's likely winner beside its reference; later rounds alternate order.
            for part in ("lead", "rest") if round_ == 0 else ("all",):
                for shape, finalists in plan:
                    ref = reference(finalists) if interleave else None
                    mine = todo[shape.key] if round_ % 2 == 0 else todo[shape.key][::-1]
                    lead = next((c for c in mine if ref is None or c.id != ref.id), None)
                    cands = mine if part == "all" else [c for c in mine if (c is lead) == (part == "lead")]
                    if not _confirm_shape(host, worker, shape, cands, ref, round_, clock):
                        clock.cut = f"round {round_ + 1} of {rounds} at {shape.key}"
                        break
                if clock.cut:
                    break
        finally:
            worker.stop()
        if clock.cut:
            break
    if not clock.cut:
        return ""
    unconfirmed = [
        shape.key
        for shape, finalists in plan
        if not any(c.id is not None and host.store.confirmed_rounds(c.id) for c in finalists)
    ]
    why = (
        f"confirmation cut to fit the time budget at {clock.cut}: {clock.done} of {planned} comparisons made "
        "(each round confirms every shape's best finalist first)"
        + (f"; left unconfirmed: {', '.join(unconfirmed)}" if unconfirmed else "")
    )
    host.progress.finished("confirmation", "cut", why)
    return why


def _behind(store: Store, finalists: Sequence[Candidate], band: float) -> dict[int, float]:
    """The searched finalists whose interleaved ratio to the reference so far (the mean log ratio of their
    rounds) is more than ``band`` behind the best one's: candidate id → how far behind, as a fraction."""
    logs: dict[int, float] = {}
    for c in finalists:
        if c.id is None or c.role == "baseline":
            continue
        rounds = [log_ratio for _, log_ratio in store.paired_ratios(c.id)]
        if rounds:
            logs[c.id] = sum(rounds) / len(rounds)
    if len(logs) < 2:
        return {}
    best = min(logs.values())
    return {cid: math.exp(v - best) - 1 for cid, v in logs.items() if math.exp(v - best) - 1 > band}


def _confirm_shape(
    host: ConfirmHost,
    worker: Slot,
    shape: Shape,
    cands: list[Candidate],
    ref: Candidate | None,
    round_: int,
    clock: _Clock,
) -> bool:
    """One shape's round; False when the time left could not hold the next comparison (the round stops)."""
    assert all(c.id is not None for c in cands)
    ref_stored = ref is None or round_ in host.store.confirmed_rounds(ref.id or -1)
    for cand in cands:
        if ref is not None and cand.id == ref.id:
            continue
        if not clock.fits():
            return False
        began = time.monotonic()
        try:
            if ref is None:
                confirm_one(host, worker, shape, cand, round_, clock)
            elif not confirm_pair(host, worker, shape, ref, cand, round_, store_reference=not ref_stored, clock=clock):
                ref = None  # the reference failed: it is flaky; the rest are confirmed one at a time
            else:
                ref_stored = True
        except _OutOfTime:
            return False
        clock.spent(began)
    if ref is not None and not ref_stored:  # nothing left to pair it with this round
        try:
            confirm_one(host, worker, shape, ref, round_, clock)
        except _OutOfTime:
            return False
    return True


def _label(host: ConfirmHost, round_: int, cand: Candidate) -> str:
    return f"confirm {round_ + 1}/{host.settings.confirm_rounds} {cand.name}"


def _flaky(host: ConfirmHost, cand: Candidate, round_: int, failure: FailureKind | None, reason: str) -> None:
    # A candidate that passed in search and fails now is flaky (a race, a read of unwritten memory): it is no
    # longer a result anyone should trust.
    assert cand.id is not None
    host.store.fail_candidate(
        cand.id, failure or FailureKind.ERROR, f"failed in confirmation round {round_ + 1}: {reason}"
    )
    host.progress.finished(_label(host, round_, cand), "failed", reason)


def _kernel(cand: Candidate) -> str | None:
    return None if cand.config.items else cand.label


def _call(worker: Slot, path: str, payload: Mapping[str, object], timeout_s: float, clock: _Clock | None) -> Outcome:
    """``worker.call`` stopped at the time bound where that comes first (then ``_OutOfTime``)."""
    limit, bounded = clock.call_limit_s(timeout_s) if clock is not None else (timeout_s, False)
    outcome = worker.call(path, payload, limit, restart=not bounded)
    if bounded and outcome.status == "failed" and outcome.kind == "hang":
        raise _OutOfTime(outcome.reason)
    return outcome


def confirm_one(
    host: ConfirmHost, worker: Slot, shape: Shape, cand: Candidate, round_: int, clock: _Clock | None = None
) -> None:
    assert cand.id is not None
    outcome = _call(
        worker, EVALUATE, host.payload(shape, cand.config, _kernel(cand)), host.settings.candidate_timeout_s, clock
    )
    result = candidate_result(outcome)
    if result.measurement is None:
        _flaky(host, cand, round_, result.failure, result.reason)
        return
    fresh = replace(result.measurement.conditions, fresh_process=True)
    host.store.add_confirmation(cand.id, Measurement(result.measurement.samples_ms, fresh), round_)
    host.progress.finished(_label(host, round_, cand), "ok", f"{result.measurement.median_ms:.4g} ms")


def confirm_pair(
    host: ConfirmHost,
    worker: Slot,
    shape: Shape,
    ref: Candidate,
    cand: Candidate,
    round_: int,
    store_reference: bool,
    clock: _Clock | None = None,
) -> bool:
    """``cand`` timed interleaved with ``ref``; False when the reference failed (it is marked failed)."""
    assert ref.id is not None and cand.id is not None
    payload: PairPayload = {
        "a": host.payload(shape, ref.config, _kernel(ref)),
        "b": host.payload(shape, cand.config, _kernel(cand)),
        "measure": host.measure,
    }
    outcome = _call(worker, EVALUATE_PAIR, payload, 2 * host.settings.candidate_timeout_s, clock)
    if outcome.status != "ok":  # a crash or a hang of the pair: who caused it is found by timing each alone
        confirm_one(host, worker, shape, cand, round_, clock)
        return True
    if "failed" in outcome.value:
        result = candidate_result(replace(outcome, value=outcome.value["result"]))
        failed = ref if outcome.value["failed"] == "A" else cand
        _flaky(host, failed, round_, result.failure, result.reason)
        return failed is cand
    a, b = (candidate_result(replace(outcome, value=outcome.value[side])) for side in ("a", "b"))
    if a.measurement is None or b.measurement is None:
        failed, result = (ref, a) if a.measurement is None else (cand, b)
        _flaky(host, failed, round_, result.failure, result.reason)
        return failed is cand
    log_ratio = paired_log_ratio(a.measurement.samples_ms, b.measurement.samples_ms)
    paired = {"reference": ref.id, "log_ratio": log_ratio, "pairs": b.measurement.n}
    conditions = b.measurement.conditions
    fresh = replace(conditions, fresh_process=True, telemetry={**(conditions.telemetry or {}), "paired": paired})
    host.store.add_confirmation(cand.id, Measurement(b.measurement.samples_ms, fresh), round_)
    if store_reference:
        ref_fresh = replace(a.measurement.conditions, fresh_process=True)
        host.store.add_confirmation(ref.id, Measurement(a.measurement.samples_ms, ref_fresh), round_)
    host.progress.finished(
        _label(host, round_, cand),
        "ok",
        f"{b.measurement.median_ms:.4g} ms, "
        f"{math.exp(log_ratio):.4f}× {ref.name} interleaved"
        f"{said((conditions.telemetry or {}).get('second_timer'))}",
    )
    return True
