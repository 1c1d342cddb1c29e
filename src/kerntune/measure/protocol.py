"""Measurement: the protocol of docs/design.md.

Device events bracket the work. Warm-up runs by time (clocks ramp, JIT and caches settle) and is extended
while the SM clock is still climbing, as telemetry shows. Three cache regimes: ``cold`` (the default: the
cache is flushed before every sample, outside the timed region), ``warm`` (back-to-back on the same
inputs) and ``rotating`` (cycling through input copies larger than the cache together). Two modes:
``eager`` (one event pair per launch) and ``graph`` (CUDA-graph replays of many launches: for kernels so
short that launch overhead would dominate; the overhead is measured and reported apart). Sampling goes on
until the median's 95% confidence interval (order statistics, widened by batch means) is within ``ci_target``
of it, or the budget ends.
Every raw sample is kept: summaries are computed from them, never stored instead of them.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from itertools import cycle, islice
from typing import Literal, TypedDict

from kerntune.backends.base import Backend
from kerntune.devices.telemetry import Recorder, Telemetry, Unavailable
from kerntune.errors import UsageError
from kerntune.measure.pacing import CARRIED_SHARE, Bookkeeping, Pace, block_size, clock_settled, warm_clock
from kerntune.measure.placements import Launches, placed_pair
from kerntune.measure.second_timer import TARGET, check_pairs, planned_pairs, sustain_pairs, timer_of
from kerntune.measure.stats import block_half_width, paired_log_ratio
from kerntune.model import Conditions, Measurement, median_ci

Regime = Literal["cold", "warm", "rotating"]
"""The cache regime timed: flushed before each sample, warm, or rotating input copies."""
Mode = Literal["eager", "graph"]
REGIMES: tuple[Regime, ...] = ("cold", "warm", "rotating")
MODES: tuple[Mode, ...] = ("eager", "graph")


def regime_of(text: str) -> Regime:
    """The regime named by ``text`` (a setting, a flag): a name that is none is a usage error."""
    for regime in REGIMES:
        if regime == text:
            return regime
    raise UsageError(f"unknown regime {text!r}: one of {', '.join(REGIMES)}")


def mode_of(text: str) -> Mode:
    """The mode named by ``text``: a name that is none is a usage error."""
    for mode in MODES:
        if mode == text:
            return mode
    raise UsageError(f"unknown mode {text!r}: one of {', '.join(MODES)}")


class MeasureOptionsRecord(TypedDict, total=False):
    """``MeasureOptions`` as a worker payload carries it (``MeasureOptions(**record)`` rebuilds it)."""

    warmup_ms: float
    min_samples: int
    max_samples: int
    budget_ms: float
    ci_target: float
    regime: Regime
    mode: Mode
    min_window_ms: float
    ramp_limit_ms: float
    block_ms: float
    second_timer: bool


MIN_BLOCKS = 5
"""Fewest blocks before a measurement may stop: one block is one moment of the clock's swing."""
GRAPH_MS = 2.0
"""Device time of one graph replay: long enough that the events' own resolution (~0.5 µs) is noise."""


@dataclass(frozen=True)
class MeasureOptions:
    warmup_ms: float = 250.0
    min_samples: int = 10
    max_samples: int = 5000
    budget_ms: float = 1500.0
    ci_target: float = 0.005
    regime: Regime = "cold"
    mode: Mode = "eager"
    min_window_ms: float = 0.0
    """Shortest sampling window: under a power cap the clock oscillates over tens of milliseconds, and a
    median taken inside one swing of it differs from the next measurement's."""
    ramp_limit_ms: float = 1000.0
    """Longest extra warm-up granted while the clocks still climb; past it the measurement is flagged."""
    block_ms: float = 10.0
    """Wall time of a block of launches between host synchronizations (``BATCH_MS`` for a full measurement; a
    race's screening rungs shorten it with their budget, see ``search.shape_search.rung_options``)."""
    second_timer: bool = False
    """Interleaved measurements only: time the same A B B A pairs again by the device's second timer
    (``measure.second_timer``) and record its ratio and whether it agrees with the first within 1%."""

    def record(self) -> MeasureOptionsRecord:
        """The options as a worker payload carries them."""
        return MeasureOptionsRecord(
            warmup_ms=self.warmup_ms,
            min_samples=self.min_samples,
            max_samples=self.max_samples,
            budget_ms=self.budget_ms,
            ci_target=self.ci_target,
            regime=self.regime,
            mode=self.mode,
            min_window_ms=self.min_window_ms,
            ramp_limit_ms=self.ramp_limit_ms,
            block_ms=self.block_ms,
            second_timer=self.second_timer,
        )

    def __post_init__(self) -> None:
        if self.regime not in REGIMES:
            raise UsageError(f"unknown regime {self.regime!r}: one of {', '.join(REGIMES)}")
        if self.mode not in MODES:
            raise UsageError(f"unknown mode {self.mode!r}: one of {', '.join(MODES)}")
        if self.mode == "graph" and self.regime == "cold":
            raise UsageError(
                "graph mode replays launches back to back, so a cache flush between them would be "
                "timed: use --regime warm or --regime rotating with --mode graph"
            )
        if self.block_ms <= 0:
            raise UsageError("block_ms must be positive")
        if self.min_samples < 3 or self.max_samples < self.min_samples:
            raise UsageError("need 3 <= min_samples <= max_samples")


def _spent(count: int, elapsed_ms: float, options: MeasureOptions, budget_ms: float) -> bool:
    """Out of budget or samples: sampling stops whatever the interval. The budget never cuts a measurement under
    ``min_samples``: a median of fewer says nothing about its own spread (a 25 ms PoCL matmul got 4 samples from a
    100 ms budget on a slower CPU)."""
    return (elapsed_ms >= budget_ms and count >= options.min_samples) or count >= options.max_samples


def _interval(
    samples: Sequence[float],
    blocks: Sequence[float] | None,
    elapsed_ms: float,
    options: MeasureOptions,
    budget_ms: float,
) -> tuple[float, float] | None:
    """The median's 95% interval once sampling may stop (precise to ``ci_target``, or out of samples or
    budget, with at least ``min_samples`` taken); None while it must go on. With ``blocks``, the interval is the
    wider of the order-statistics interval over samples and a batch-means interval over block medians (see
    ``_Sampler.sample``); without, the order-statistics interval alone."""
    done = _spent(len(samples), elapsed_ms, options, budget_ms)
    if not done and (
        len(samples) < options.min_samples
        or elapsed_ms < options.min_window_ms
        or (blocks is not None and len(blocks) < MIN_BLOCKS)
    ):
        return None
    median = statistics.median(samples)
    block_half = block_half_width(blocks) if blocks is not None else 0.0
    if not done and block_half > options.ci_target * median:
        return None
    # Hazard: this runs between blocks while the device idles, and Bookkeeping then waits 1/HOST_SHARE times
    # its cost before the next check. A bootstrap of the median (1000 resamples) took 4-31 ms for 100-1000
    # samples on the H200's host, which made every rung-0 screen sample ~25 ms of kernels it could have stopped
    # on in a few (2026-12-04, benchmarks/time-budget/telemetry_read_cost.py). The distribution-free order-statistics
    # interval needs one sort (0.1-0.23 ms there).
    lo, hi = median_ci(sorted(samples))
    if math.isfinite(block_half):
        lo, hi = min(lo, median - block_half), max(hi, median + block_half)
    return (lo, hi) if done or (hi - lo) / 2 <= options.ci_target * median else None


class _Sampler:
    """One way of producing samples (eager per launch, or graph replays), with warm-up and stopping."""

    def __init__(self, take: Callable[[int], list[float]], options: MeasureOptions, recorder: Recorder) -> None:
        self.take, self.options, self.recorder = Pace(take), options, recorder
        self.books = Bookkeeping()
        self.ramp_ms = 0.0
        self.ramping = False
        self.warm_up_ms = self.first_read_ms = 0.0
        self.warm_target_ms = options.warmup_ms
        self.carried = False
        self.began = time.perf_counter()

    def wall_split(self) -> dict[str, float]:
        """``Conditions.wall_ms`` up to now: warm-up, sampling since it, the host's bookkeeping within both.

        The hazard it shows: a short measurement (a race's screen) waits on its bookkeeping's spacing. A stopping
        check runs only once the device has worked ``cost / HOST_SHARE`` since the last one, so a costly check sets
        a floor whatever the screen's own budget. On the H200 (2026-12-04) it showed rung-0 screens' medians at
        16 ms warm-up and 25 ms sampling for 20-700 µs kernels, the sampling set by the check's bootstrap (see
        ``_interval``)."""
        total = (time.perf_counter() - self.began) * 1e3
        return {
            "warm_up": round(self.warm_up_ms, 3),
            "sampling": round(total - self.warm_up_ms, 3),
            "bookkeeping": round(self.books.total * 1e3 + self.first_read_ms, 3),
            "reads": float(len(self.recorder.readings)),
        }

    def warm_record(self) -> tuple[float, dict[str, object]]:
        """The warm-up a measurement's ``Conditions`` record (ms: the target, carried or not, plus any ramp) and
        the telemetry fields that say why."""
        return self.warm_target_ms + self.ramp_ms, {
            "clock_ramp_ms": round(self.ramp_ms, 1),
            "clocks_ramping": self.ramping,
            "warm_clock_carried": self.carried,
        }

    def warm_up(self) -> float:
        """Run for ``warmup_ms``, longer while the clock climbs; return the pace of a launch (ms, wall)."""
        start = self.began = time.perf_counter()
        self.take(1)
        read = time.perf_counter()
        self.recorder.take()  # outside the spacing on purpose: the next reading may follow the next block
        self.first_read_ms = (time.perf_counter() - read) * 1e3
        self.carried = warm_clock.carries(self.recorder)
        self.warm_target_ms = self.options.warmup_ms * (CARRIED_SHARE if self.carried else 1.0)
        while True:
            elapsed = (time.perf_counter() - start) * 1e3
            if elapsed >= self.warm_target_ms:
                if clock_settled(self.recorder):
                    break
                if elapsed >= self.warm_target_ms + self.options.ramp_limit_ms:
                    self.ramping = True  # the clock never settled: the measurement says so
                    break
            self.take(block_size(self.take.ms, 64, self.options.block_ms))
            if self.books.due():
                with self.books:
                    self.recorder.take()
        self.warm_up_ms = (time.perf_counter() - start) * 1e3
        self.ramp_ms = max(0.0, self.warm_up_ms - self.warm_target_ms)
        return self.take.ms

    def sample(self, pace: float) -> tuple[list[float], tuple[float, float]]:
        """Sample in blocks of ~BATCH_MS until the median is known to ``ci_target`` or the budget ends.

        Neighbouring samples are not independent: under a power cap the clock swings over tens of
        milliseconds, so an interval over samples alone calls a median precise that the next measurement
        will not reproduce. The stopping rule also asks the medians of the blocks to agree (batch means):
        the interval is the wider of the two, and a steady kernel stops after MIN_BLOCKS blocks."""
        options = self.options
        samples: list[float] = []
        blocks: list[float] = []
        start = time.perf_counter()
        while True:
            block = self.take(block_size(pace, options.max_samples - len(samples), options.block_ms))
            samples.extend(block)
            blocks.append(statistics.median(block))
            pace = self.take.ms
            elapsed = (time.perf_counter() - start) * 1e3
            if not (self.books.due() or _spent(len(samples), elapsed, options, options.budget_ms)):
                continue
            with self.books:
                self.recorder.take()
                ci = _interval(samples, blocks, elapsed, options, options.budget_ms)
            if ci is not None:
                warm_clock.note(self.recorder, settled=not self.ramping and clock_settled(self.recorder))
                return samples, ci


def measure(
    backend: Backend,
    launches: Sequence[Callable[[], object]],
    options: MeasureOptions,
    telemetry: Telemetry | None = None,
    rotating_bytes: int = 0,
) -> Measurement:
    """Measure ``launches[0]`` (or, in the rotating regime, all of them in turn, each on its own inputs)."""
    if not launches:
        raise ValueError("nothing to measure")
    recorder = Recorder(telemetry or Unavailable("not asked"))
    uncovered = backend.uncovered_chunks
    used = list(launches) if options.regime == "rotating" else [launches[0]]
    stream: Iterator[Callable[[], object]] = cycle(used)
    flush = options.regime == "cold"
    overhead = None
    if options.mode == "eager":

        def take(count: int) -> list[float]:
            return backend.time_launches(list(islice(stream, count)), flush)

        sampler = _Sampler(take, options, recorder)
        samples, ci = sampler.sample(sampler.warm_up())
        wall = sampler.wall_split()
    else:
        per_launch = max(backend.time_launches(list(islice(stream, 3)), False))
        length = max(len(used), min(1000, math.ceil(GRAPH_MS / max(per_launch, 1e-4))))
        sequence = list(islice(stream, length))
        replay = backend.graph(sequence)

        def take(count: int) -> list[float]:
            return [t / length for t in backend.time_calls(replay, count)]

        sampler = _Sampler(take, options, recorder)
        samples, ci = sampler.sample(sampler.warm_up())
        wall = sampler.wall_split()

        # Launch overhead, apart: the same launches issued eagerly, timed from the first to the last with the
        # device left to wait on the host (fed=False); the difference per launch is what the host's launch
        # path costs when the GPU waits on it.
        def eager() -> None:
            for launch in sequence:
                launch()

        eager_ms = statistics.median(t / length for t in backend.time_calls(eager, 5, fed=False))
        overhead = max(0.0, eager_ms - statistics.median(samples))
    cache = backend.flush_bytes if flush else (rotating_bytes if options.regime == "rotating" else 0)
    warmup_ms, warm_fields = sampler.warm_record()
    conditions = Conditions(
        timer=backend.timer,
        regime=options.regime,
        mode=options.mode,
        warmup_ms=warmup_ms,
        flush_bytes=backend.flush_bytes if flush else 0,
        cache_bytes=cache,
        launch_overhead_ms=overhead,
        telemetry=recorder.summary({**warm_fields, "uncovered_chunks": backend.uncovered_chunks - uncovered}),
        wall_ms=wall,
    )
    return Measurement(tuple(samples), conditions, ci)


def measure_interleaved(
    backend: Backend,
    launch_a: Launches,
    launch_b: Launches,
    options: MeasureOptions,
    telemetry: Telemetry | None = None,
) -> tuple[Measurement, Measurement]:
    """Time two launches interleaved, A B B A A B ..., so that sample ``i`` of A and sample ``i`` of B were
    taken next to each other: slow drift of the machine (clocks, temperature, neighbours) lands on both
    alike. Given one launch of each per placement of the inputs, the pairs take the placements in turn
    (``placed_pair``). Eager mode only; sampling stops when both medians' intervals are within
    ``ci_target`` or the budget (twice the single budget: two things are timed) ends. No batch-means check here:
    the A/B's precision comes from pairing adjacent samples and from its rounds, not from each side's
    interval."""
    if options.mode != "eager":
        raise UsageError("interleaved A/B measurement is eager only: use --scheme fresh with --mode graph")
    launch_of = placed_pair(launch_a, launch_b)
    recorder = Recorder(telemetry or Unavailable("not asked"))
    uncovered = backend.uncovered_chunks
    flush = options.regime == "cold"
    samples: tuple[list[float], list[float]] = ([], [])

    def pairs(count: int) -> tuple[list[float], list[float]]:
        """Time ``count`` A/B pairs: even pairs run A first, odd pairs B first (ABBA)."""
        first = len(samples[0])
        order = [(0, 1) if (first + i) % 2 == 0 else (1, 0) for i in range(count)]
        times = backend.time_launches(
            [launch_of(first + i)[side] for i, pair in enumerate(order) for side in pair], flush
        )
        return (
            [times[2 * i + pair.index(0)] for i, pair in enumerate(order)],
            [times[2 * i + pair.index(1)] for i, pair in enumerate(order)],
        )

    sampler = _Sampler(lambda count: [a + b for a, b in zip(*pairs(count), strict=True)], options, recorder)
    pace = sampler.warm_up()
    start = time.perf_counter()
    intervals: list[tuple[float, float] | None] = [None, None]

    def keep(count: int) -> list[float]:
        got = pairs(count)
        for side in (0, 1):
            samples[side].extend(got[side])
        return [a + b for a, b in zip(*got, strict=True)]

    timed_pairs = Pace(keep)
    books = sampler.books
    while None in intervals:
        timed_pairs(block_size(pace, options.max_samples - len(samples[0]), options.block_ms))
        pace = timed_pairs.ms
        elapsed = (time.perf_counter() - start) * 1e3
        if not (books.due() or _spent(len(samples[0]), elapsed, options, 2 * options.budget_ms)):
            continue
        with books:
            recorder.take()
            intervals = [_interval(samples[i], None, elapsed, options, 2 * options.budget_ms) for i in (0, 1)]
    wall = sampler.wall_split()
    warmup_ms, warm_fields = sampler.warm_record()
    conditions = Conditions(
        timer=backend.timer,
        regime=options.regime,
        warmup_ms=warmup_ms,
        flush_bytes=backend.flush_bytes if flush else 0,
        cache_bytes=backend.flush_bytes if flush else 0,
        telemetry=recorder.summary(
            {
                **warm_fields,
                "uncovered_chunks": backend.uncovered_chunks - uncovered,
                "interleaved": True,
                "placements": len(launch_a) if isinstance(launch_a, Sequence) else 1,
            }
        ),
        wall_ms=wall,
    )
    if options.second_timer:
        events_ratio = math.exp(paired_log_ratio(samples[0], samples[1]))
        # A pair's wall time (flushes, the host's launch path) bounds the second timer's load and pairs.
        wall_pair_ms = timed_pairs.ms
        planned = planned_pairs(samples[0], samples[1], TARGET.get(timer_of(backend) or ""), wall_pair_ms)
        check = check_pairs(
            backend,
            launch_a,
            launch_b,
            flush,
            events_ratio,
            planned,
            sustain=sustain_pairs(samples[0], samples[1], wall_pair_ms),
            telemetry=recorder.source,
        )
        if check is not None:
            conditions = replace(conditions, telemetry={**(conditions.telemetry or {}), "second_timer": check})
    a_ci, b_ci = intervals
    assert a_ci is not None and b_ci is not None
    return Measurement(tuple(samples[0]), conditions, a_ci), Measurement(tuple(samples[1]), conditions, b_ci)
