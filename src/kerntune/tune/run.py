"""``tune``: the spine. Load the spec, start a worker on the device, then for each shape evaluate the
baselines and the configs the strategy proposes (compile → gate → measure, in the worker), recording each
candidate in the store as it finishes. A killed run resumes from the store without re-measuring anything.
"""

from __future__ import annotations

import contextlib
import secrets
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kerntune.backends.base import CONTEXT_FATAL
from kerntune.errors import KerntuneError, SpecError, UsageError
from kerntune.exec.ray_slots import RaySlot
from kerntune.exec.slots import Slot
from kerntune.measure.protocol import MeasureOptionsRecord
from kerntune.model import (
    Candidate,
    Config,
    FailureKind,
    Run,
    Shape,
    Target,
)
from kerntune.model.time_plan import FULL, SCREENING, TimePlan
from kerntune.runtime.keys import problem_source_hash
from kerntune.search import make_strategy, resolve_strategy
from kerntune.search.compile_ahead import CompileAhead, local_compile_workers
from kerntune.search.shape_search import ShapeSearch
from kerntune.settings import Settings
from kerntune.store import CandidateResult, Store
from kerntune.store.ledger import LedgerRow, prior_failures
from kerntune.store.warm_start import nearest_winners
from kerntune.tune.clock import RunClock
from kerntune.tune.confirm import confirm as confirm_finalists
from kerntune.tune.inputs import (
    EVALUATE,
    SETUP,
    ValidSets,
    check_space,
    corpus_shapes,
    earlier_evaluation_s,
    measure_options,
    require_graphs,
    resolve_shapes,
    roofline_inputs,
    valid_configs,
)
from kerntune.tune.outcomes import candidate_result
from kerntune.tune.pool import (
    LockedProgress,
    Placement,
    ShapeQueue,
    compile_counts,
    make_slots,
    release,
    share_shapes,
    start_slots,
)
from kerntune.tune.request import Progress, Silent, TuneRequest
from kerntune.tune.spec import LoadedSpec, load_spec

if TYPE_CHECKING:
    from kerntune.tune.evaluate import CandidatePayload

CONTEXT_FATAL_KINDS = {kind.value for kind in CONTEXT_FATAL}
WARM_STARTS = 3
"""Winners of the nearest tuned shapes tried first: the nearest one is the start, the others follow it."""


def _new_run_id() -> str:
    return datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S-") + secrets.token_hex(2)


class _Tuner(RunClock):
    """One slot's side of a run: evaluates candidates in its worker, hosts each shape's search (the
    ``SearchHost`` of ``kerntune.search.shape_search``) and confirms the finalists of the shapes it took; its
    time budget is kept by ``RunClock``."""

    def __init__(
        self,
        run: Run,
        loaded: LoadedSpec,
        store: Store,
        settings: Settings,
        progress: Progress,
        worker: Slot,
        target: Target,
        compile_workers: int = 0,
        started: float | None = None,
    ) -> None:
        self.run, self.loaded, self.store, self.settings = run, loaded, store, settings
        self.problem = loaded.problem
        self.progress, self.worker, self.target = progress, worker, target
        self.finished = store.finished_keys(run.id)
        self.measure = measure_options(settings)
        self.seeds = [run.seed * 1000 + i + 1 for i in range(settings.gate_seeds)]
        super().__init__(
            run,
            settings,
            TimePlan.of(
                run.budget,
                len(run.shapes),
                confirms=target.claims_timing and settings.confirm_rounds > 0 and settings.finalists > 0,
            ),
            started,
        )
        self.stop_reason = ""
        self.valid_sets: ValidSets = {}
        self.setup = (SETUP, {"spec_path": str(loaded.path), "device": str(run.options.get("device", ""))})
        self.compile_workers = compile_workers  # this slot's compile-ahead workers (pool.compile_counts)

    def valid(self, shape: Shape) -> tuple[list[Config], dict[str, int]]:
        """The shape's valid configs and constraint rejections, computed once (large spaces take seconds)."""
        if shape.key not in self.valid_sets:
            self.valid_sets[shape.key] = valid_configs(self.problem, shape, self.target, self.settings)
        return self.valid_sets[shape.key]

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
    ) -> CandidateResult | None:
        """Evaluate one candidate in the timing worker unless the store already holds its result (then return
        None). ``precompiled``: a compile-ahead worker's result, whose compile time is the real one (the
        timing worker's own compile was a cache hit)."""
        if (shape.key, role, label, config.key) in self.finished:
            return None
        cid = self.store.start_candidate(self.run.id, shape, config, role, label)
        reason = self.problem.space.check(config, shape, self.target) if config.items else None
        if reason is not None:
            result = CandidateResult(
                "failed", failure=FailureKind.ERROR, reason=f"violates constraint {reason!r} at this shape"
            )
        else:
            began = time.monotonic()
            outcome = self.worker.call(
                EVALUATE, self.payload(shape, config, baseline_kernel, measure), self.settings.candidate_timeout_s
            )
            self.durations.add(
                FULL if measure is None or measure == self.measure else SCREENING, time.monotonic() - began
            )
            if outcome.status == "error" and outcome.kind in ("SpecError", "BackendUnavailable"):
                raise SpecError(outcome.reason)  # the spec's own code failed: every candidate would
            result = candidate_result(outcome)
            if precompiled is not None:
                result = replace(
                    result,
                    compile_s=precompiled.get("compile_s"),
                    resources={**(precompiled.get("resources") or {}), **(result.resources or {})},
                )
            if outcome.status == "failed" and outcome.kind in CONTEXT_FATAL_KINDS and not outcome.restarted:
                # The process survived but its device context may not have (CUDA errors are sticky).
                self.worker.restart()
        self.store.finish_candidate(cid, result)
        self.store.update_run(self.run.id, elapsed_s=self.elapsed())
        detail = (
            f"{result.measurement.median_ms:.4g} ms"
            if result.measurement
            else f"{result.failure.value if result.failure else ''} {result.reason}".strip()
        )
        self.progress.finished(
            f"{label} {config.key}" if role == "screen" else label or config.key, result.status, detail
        )
        return result

    def skip_known_bad(
        self, shape: Shape, config: Config, row: LedgerRow, role: str = "search", label: str = ""
    ) -> None:
        """Record, without running it, a config that failed deterministically in an earlier run."""
        cid = self.store.start_candidate(self.run.id, shape, config, role, label)
        reason = f"skipped: failed in run {row.run_id} ({row.failure}: {row.reason}); --retry-failed runs it"
        self.store.finish_candidate(cid, CandidateResult("failed", failure=FailureKind(row.failure), reason=reason))
        self.progress.finished(config.key, "failed", "skipped (ledger)")

    def payload(
        self, shape: Shape, config: Config, baseline_kernel: str | None, measure: MeasureOptionsRecord | None = None
    ) -> CandidatePayload:
        return {
            "shape": shape.as_dict(),
            "dtype": self.run.dtype,
            "seeds": self.seeds,
            "config": config.as_dict(),
            "baseline_kernel": baseline_kernel,
            "measure": measure or self.measure,
        }

    def finalists(self, shape: Shape) -> list[Candidate]:
        """The fastest searched configs, then every timed baseline: what confirmation re-times."""
        timed = [
            c
            for c in self.store.candidates(self.run.id)
            if c.shape == shape and c.status == "ok" and c.measurement is not None
        ]
        searched = [c for c in timed if c.role == "search"]
        top = sorted(searched, key=lambda c: c.measurement.median_ms)[: self.settings.finalists]  # type: ignore[union-attr]
        return top + [c for c in timed if c.role == "baseline"]

    def confirm(self, shapes: Sequence[Shape]) -> None:
        """The shapes' finalists re-timed in fresh processes, interleaved with their reference
        (``kerntune.tune.confirm``), inside the time the budget leaves."""
        began = time.monotonic()
        cut = confirm_finalists(self, shapes, self.target.claims_timing)
        self.phases["confirm_s"] += time.monotonic() - began
        if cut:
            self.stop_reason = f"{self.stop_reason}; {cut}" if self.stop_reason else cut

    def stored_medians(self, shape: Shape) -> dict[tuple[str, str, str], float | None]:
        medians: dict[tuple[str, str, str], float | None] = {}
        for cand in self.store.candidates(self.run.id):
            if cand.shape == shape and cand.status != "pending":
                key = (cand.role, cand.label, cand.config.key)
                medians[key] = cand.measurement.median_ms if cand.measurement else None
        return medians

    def warm_starts(self, shape: Shape, valid: Sequence[Config]) -> list[Config]:
        """Where the search begins: the winners of the nearest shapes tuned on this device — before, or earlier
        in this run — that are valid here (nearest first, at most ``WARM_STARTS``); else the spec's default."""
        allowed = {c.key for c in valid}
        found: list[Config] = []
        for seed in nearest_winners(
            self.store,
            problem=self.problem.name,
            dtype=self.run.dtype,
            target=self.target,
            shape=shape,
            current_run=self.run.id,
        ):
            if seed.config.key in allowed and seed.config not in found:
                if not found:
                    self.progress.finished(
                        "warm start",
                        "ok",
                        f"from {seed.config.key}, the winner at {seed.shape.key} in run {seed.run_id}",
                    )
                found.append(seed.config)
            if len(found) == WARM_STARTS:
                break
        return found or [self.problem.space.default_config()]

    def tune_shape(self, shape: Shape, ahead: CompileAhead | None, later: int = 0) -> None:
        """One shape's baselines and search; ``later``: this slot's shapes likely still to come (time shares)."""
        valid, rejected = self.valid(shape)
        self.store.record_pruned(self.run.id, shape, rejected)
        self.store.set_run_option(self.run.id, "valid_configs", shape.key, len(valid))
        known_bad = (
            {}
            if self.run.options.get("retry_failed")
            else prior_failures(
                self.store,
                run_id=self.run.id,
                problem=self.problem.name,
                spec_hash=self.run.spec_hash,
                target=self.target,
                shape_key=shape.key,
            )
        )
        # A shape's share of a per-shape budget starts here, its baselines included: counted from the first
        # proposal instead, slow baselines (a first compile) overran the share and left later shapes none.
        begun_s = self.elapsed()
        in_space: dict[str, str] = {}  # config key → the (first) baseline that is that point of the space
        for baseline in self.problem.all_baselines():
            config = Config.of(baseline.config or {})
            if baseline.config is not None:
                in_space.setdefault(config.key, baseline.name)
            self.evaluate(shape, config, "baseline", baseline.name, None if baseline.config else baseline.name)
        if ahead is not None:  # the pool came up beside the baselines; what it still takes is start-up
            begun_s = self.add_start_up(ahead.wait_started(self.settings.setup_timeout_s), begun_s)
        name = resolve_strategy(self.run.strategy, len(valid), self.target.claims_timing)
        start, *near = self.warm_starts(shape, valid)
        strategy = make_strategy(name, valid, self.run.seed, start, [*near, *self.problem.space.seed_configs()])
        search = ShapeSearch(
            self,
            shape,
            strategy,
            ahead,
            in_space,
            known_bad,
            known=self.stored_medians(shape),
            begun_s=begun_s,
            later=later,
        )
        try:
            reason = search.run()
        finally:
            if ahead is not None:
                ahead.cancel()  # nothing compiles while finalists are confirmed
        if reason:
            self.stop_reason = f"{reason} ({name})" if name != self.run.strategy else reason

    def take_shapes(self, todo: ShapeQueue, slots: int) -> None:
        """This slot's share of the run: the shapes it takes in turn from ``todo`` (shared by ``slots``), searched,
        then their finalists confirmed on the same device."""
        done: list[Shape] = []
        self.phases["start_up_s"] = time.monotonic() - self.started  # imports, device context, this slot's worker
        with contextlib.ExitStack() as stack:
            ahead = None
            if self.compile_workers:
                count, slot, timeout_s = self.compile_workers, self.worker, self.settings.setup_timeout_s
                workers = (
                    slot.compile_workers(count)
                    if isinstance(slot, RaySlot)
                    else local_compile_workers(
                        count, self.setup, log_dir=self.store.home / "logs", setup_timeout_s=timeout_s
                    )
                )
                ahead = stack.enter_context(CompileAhead(workers, timeout_s=self.settings.candidate_timeout_s))
            began = time.monotonic()
            while (shape := todo.take()) is not None:
                self.store.set_run_option(self.run.id, "shape_slots", shape.key, self.worker.name)
                self.tune_shape(shape, ahead, later=-(-todo.waiting() // slots))  # the waiting, shared evenly
                done.append(shape)
            self.phases["search_s"] += time.monotonic() - began
        self.confirm(done)
        for name, seconds in self.phases.items():
            self.store.set_run_option(self.run.id, "phases", f"{self.worker.name}:{name}", round(seconds, 3))

    def planned_total(self, shapes: Sequence[Shape]) -> int:
        total = 0
        for shape in shapes:
            valid, _ = self.valid(shape)
            baselines = self.problem.all_baselines()
            overlap = {Config.of(b.config).key for b in baselines if b.config is not None}
            searchable = len([c for c in valid if c.key not in overlap])
            if self.run.budget.evaluations is not None:
                searchable = min(searchable, self.run.budget.evaluations)
            total += searchable + len(baselines)
            if self.target.claims_timing and self.settings.finalists:
                total += self.settings.confirm_rounds * (min(self.settings.finalists, searchable) + len(baselines))
        return total


def tune(request: TuneRequest, settings: Settings, store: Store, progress: Progress | None = None) -> Run:
    """Run (or resume) a tuning session and return the finished Run record. One process tunes a run at a time:
    a second ``--resume`` of a run another process holds is a StoreError, before anything is written."""
    with contextlib.ExitStack() as held:
        if request.resume:
            held.enter_context(store.run_lock(store.get_run(request.resume).id))
        return _tune(request, settings, store, progress, held)


def _tune(
    request: TuneRequest, settings: Settings, store: Store, progress: Progress | None, held: contextlib.ExitStack
) -> Run:
    started = time.monotonic()
    progress = progress or Silent()
    if request.resume:
        previous = store.get_run(request.resume)
        loaded = load_spec(previous.spec_path)
        if loaded.digest != previous.spec_hash:
            raise SpecError(
                f"the spec {previous.spec_path} changed since tuning run {previous.id} started "
                f"({previous.spec_hash} → {loaded.digest}); start a new tuning run instead of resuming"
            )
        device = str(previous.options.get("device", ""))
        shapes: list[Shape] = list(previous.shapes)
    else:
        loaded = load_spec(request.spec)
        device = request.device
        dtype = request.dtype or loaded.problem.dtypes[0]
        overrides = list(request.shapes) + (
            corpus_shapes(Path(request.shapes_from), loaded.problem, dtype, request.shapes_top)
            if request.shapes_from
            else []
        )
        shapes = resolve_shapes(loaded.problem, overrides)
        if dtype not in loaded.problem.dtypes:
            raise UsageError(f"dtype {dtype!r} is not one of this spec's dtypes: {', '.join(loaded.problem.dtypes)}")
        make_strategy(request.strategy, [], request.seed)  # unknown strategy names fail before any work

    measure_options(settings)  # a bad regime or mode fails here, before any worker starts
    placement = request.placement if not request.resume else Placement(**previous.options.get("placement", {}))
    setup_call = (SETUP, {"spec_path": str(loaded.path), "device": device})
    slots = make_slots(placement, setup_call, store, settings, f"{int(time.time())}-{secrets.token_hex(2)}")
    try:
        setup = start_slots(slots)[0]
        require_graphs(settings, setup)
        target = Target.from_dict(setup["target"])
        if request.resume:
            run = store.get_run(request.resume)
            if target.device_name != run.target.device_name or target.arch != run.target.arch:
                raise UsageError(
                    f"tuning run {run.id} was measured on {run.target.label}, this device is {target.label}: "
                    "results from two devices are never mixed; start a new tuning run"
                )
        valid_sets: ValidSets = {}
        if not request.resume:
            valid_sets = check_space(loaded.problem, shapes, target, settings)
            run = Run(
                id=_new_run_id(),
                problem=loaded.problem.name,
                spec_path=str(loaded.path),
                spec_hash=loaded.digest,
                target=target,
                strategy=request.strategy,
                budget=request.budget,
                shapes=tuple(shapes),
                dtype=dtype,
                seed=request.seed,
                created=datetime.now(timezone.utc).isoformat(timespec="seconds"),
                options={
                    "device": device,
                    "retry_failed": request.retry_failed,
                    "kernel_hash": problem_source_hash(loaded.problem),
                    # Its winners are served in place of a library operator (deploy keeps only the faster).
                    "serves": list(loaded.problem.serve.ops) if loaded.problem.serve else [],
                    "placement": {
                        "workers": placement.workers,
                        "executor": placement.executor,
                        "address": placement.address,
                    },
                    "target_ms": request.target_ms,
                    **roofline_inputs(loaded.problem, shapes, dtype, store, target),
                },
            )
            held.enter_context(store.run_lock(run.id))
            store.create_run(run)
        try:  # from its first write on, a run never stays `running` once this process stops tuning it
            store.update_run(run.id, status="running")
            tuners, compilers = _start(
                run, loaded, store, settings, progress, slots, target, started, valid_sets, shapes
            )
        except BaseException as exc:
            _stopped(store, run, exc, run.elapsed_s + time.monotonic() - started)
            raise
        tuner = tuners[0]
        shared = LockedProgress(progress)

        def work(slot: Slot, todo: ShapeQueue) -> None:
            mine = (
                tuner
                if len(slots) == 1
                else _Tuner(
                    run,
                    loaded,
                    Store(store.home),
                    settings,
                    shared,
                    slot,
                    target,
                    compilers[slots.index(slot)],
                    started,
                )
            )
            if mine is tuner:
                tuner.take_shapes(todo, len(slots))
                return
            mine.valid_sets.update(tuner.valid_sets)  # (a SQLite connection stays in the thread that opened it)
            tuners.append(mine)
            try:
                mine.take_shapes(todo, len(slots))
            finally:
                mine.store.close()

        try:
            share_shapes(shapes, slots, work)
        except BaseException as exc:
            _stopped(store, run, exc, tuner.elapsed())
            raise
        reason = (
            "; ".join(dict.fromkeys(t.stop_reason for t in tuners if t.stop_reason)) or "every valid config evaluated"
        )
        store.update_run(run.id, status="done", stop_reason=reason, elapsed_s=tuner.elapsed())
        return store.get_run(run.id)
    finally:
        release(slots)


def _start(
    run: Run,
    loaded: LoadedSpec,
    store: Store,
    settings: Settings,
    progress: Progress,
    slots: Sequence[Slot],
    target: Target,
    started: float,
    valid_sets: ValidSets,
    shapes: Sequence[Shape],
) -> tuple[list[_Tuner], list[int]]:
    """The first slot's tuner (its valid configs computed, the plan said to ``progress``) and each slot's count of
    compile-ahead workers."""
    compilers = compile_counts(slots, settings.compile_workers, target)
    tuner = _Tuner(run, loaded, store, settings, progress, slots[0], target, compilers[0], started)
    tuner.valid_sets.update(valid_sets)
    total = tuner.planned_total(shapes)
    progress.planned(
        run,
        total,
        replace(tuner.plan, evaluations=total, earlier_evaluation_s=earlier_evaluation_s(store, run, target)),
    )
    return [tuner], compilers


def _stopped(store: Store, run: Run, exc: BaseException, elapsed_s: float) -> None:
    """Mark a run that stops early: failed for a KerntuneError (its message is the stop reason), else
    interrupted (Ctrl-C, SIGTERM: ``--resume`` continues it). A store that cannot take the write (a full disk)
    keeps the first error the one reported."""
    with contextlib.suppress(Exception):
        if isinstance(exc, KerntuneError):
            store.update_run(run.id, status="failed", stop_reason=str(exc), elapsed_s=elapsed_s)
        else:
            store.update_run(run.id, status="interrupted", elapsed_s=elapsed_s)
