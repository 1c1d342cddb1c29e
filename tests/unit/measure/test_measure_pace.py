"""Blocks of samples are sized by the wall time of a launch, not by the kernel's time alone: with a null
timing backend whose host side is 20× slower than its 'kernel', a short budget ends near its length instead of
after one block of hundreds of slow launches (the overrun the H200's race screening showed)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any, cast

from kerntune.backends.base import Backend
from kerntune.measure.pacing import BATCH_MS, HOST_SHARE
from kerntune.measure.protocol import MeasureOptions, measure, measure_interleaved

DEVICE_MS = 0.01
HOST_MS = 0.2


class _NullBackend:
    """Named null: no device. Each launch 'runs' ``device_ms`` (times 1, 1 + jitter, 1 + 2 jitter in turn) and keeps
    the host ``host_ms`` (a sleep, as enqueueing or a device's wait would); the blocks asked for are recorded."""

    timer = "null"
    flush_bytes = 0
    uncovered_chunks = 0

    def __init__(self, device_ms: float, host_ms: float, jitter: float = 0.0) -> None:
        self.device_ms, self.host_ms, self.jitter = device_ms, host_ms, jitter
        self.blocks: list[int] = []

    def time_launches(self, launches: Sequence[Callable[[], Any]], flush: bool) -> list[float]:
        self.blocks.append(len(launches))
        time.sleep(self.host_ms * len(launches) / 1e3)
        return [self.device_ms * (1 + self.jitter * (i % 3)) for i in range(len(launches))]


def _slow_host() -> _NullBackend:
    """A launch that 'runs' DEVICE_MS and costs the host HOST_MS to enqueue (20x slower)."""
    return _NullBackend(DEVICE_MS, HOST_MS)


def test_a_slow_host_keeps_blocks_and_budget_near_their_length() -> None:
    backend = _slow_host()
    options = MeasureOptions(warmup_ms=2.0, budget_ms=12.5, min_samples=10)
    start = time.perf_counter()
    got = measure(cast(Backend, backend), [lambda: None], options)
    wall_ms = (time.perf_counter() - start) * 1e3
    # Sized by the kernel alone a block would be BATCH_MS / DEVICE_MS = 1000 launches, 200 ms of host time.
    assert max(backend.blocks) <= 2 * BATCH_MS / HOST_MS, backend.blocks
    assert wall_ms < 100.0, (wall_ms, backend.blocks)
    assert got.median_ms == DEVICE_MS and got.n >= options.min_samples


def test_interleaved_pairs_are_paced_too() -> None:
    backend = _slow_host()
    options = MeasureOptions(warmup_ms=2.0, budget_ms=10.0, min_samples=10)
    start = time.perf_counter()
    a, b = measure_interleaved(cast(Backend, backend), lambda: None, lambda: None, options)
    wall_ms = (time.perf_counter() - start) * 1e3
    assert max(backend.blocks) <= 2 * 2 * BATCH_MS / (2 * HOST_MS), backend.blocks  # launches: 2 per pair
    assert wall_ms < 120.0, (wall_ms, backend.blocks)
    assert a.median_ms == b.median_ms == DEVICE_MS


def test_the_budget_never_cuts_a_measurement_under_its_minimum_samples() -> None:
    options = MeasureOptions(warmup_ms=1.0, budget_ms=100.0, min_samples=5, max_samples=30)
    slow_kernel = _NullBackend(30.0, 30.0)  # each launch 30 ms: more than a fifth of the budget
    got = measure(cast(Backend, slow_kernel), [lambda: None], options)
    assert got.n >= options.min_samples  # the 100 ms budget alone would stop after 3 or 4 launches
    a, b = measure_interleaved(cast(Backend, slow_kernel), lambda: None, lambda: None, options)
    assert a.n >= options.min_samples and b.n >= options.min_samples


class _SlowTelemetry:
    """Named null: readings that cost the host 3 ms each, as a slow NVML would; the time they took is summed."""

    available = True

    def __init__(self) -> None:
        self.spent = 0.0

    def read(self) -> dict[str, Any]:
        start = time.perf_counter()
        time.sleep(3e-3)
        self.spent += time.perf_counter() - start
        return {"sm_mhz": 1500, "mem_mhz": 3201, "power_w": 600.0, "temp_c": 50, "reasons": []}


def test_the_hosts_bookkeeping_between_blocks_takes_a_small_share_of_the_wall_time() -> None:
    # Read after every 10 ms block, 3 ms readings would idle the device 23% of the time (and let a power-capped
    # clock recover); spaced by the host-share rule they take about HOST_SHARE.
    options = MeasureOptions(warmup_ms=1.0, budget_ms=400.0, ci_target=1e-9, max_samples=100_000)
    for run in (
        lambda t: measure(cast(Backend, _NullBackend(1.0, 1.0, 0.01)), [lambda: None], options, t),
        lambda t: measure_interleaved(
            cast(Backend, _NullBackend(1.0, 1.0, 0.01)), lambda: None, lambda: None, options, t
        ),
    ):
        telemetry = _SlowTelemetry()
        start = time.perf_counter()
        run(telemetry)
        share = telemetry.spent / (time.perf_counter() - start)
        assert 0 < share <= 2.5 * HOST_SHARE, share


def test_a_screen_with_short_blocks_stops_after_its_few_blocks_not_the_full_blocks() -> None:
    # A steady kernel stops after MIN_BLOCKS blocks: at the full protocol's 10 ms that is 50 ms of sampling
    # whatever the screen's budget (the H200's 79 ms rung-0 screens); blocks shortened with the rung end sooner.
    walls = {}
    for block_ms in (BATCH_MS, BATCH_MS / 16):
        backend = _NullBackend(0.05, 0.05)  # a steady kernel: every sample alike
        options = MeasureOptions(warmup_ms=1.0, budget_ms=94.0, min_samples=10, ci_target=0.02, block_ms=block_ms)
        start = time.perf_counter()
        got = measure(cast(Backend, backend), [lambda: None], options)
        walls[block_ms] = (time.perf_counter() - start) * 1e3
        assert got.n >= options.min_samples and got.median_ms == 0.05
    assert walls[BATCH_MS] >= 5 * BATCH_MS * 0.8, walls
    assert walls[BATCH_MS / 16] < walls[BATCH_MS] / 3, walls


def test_a_measurement_says_where_its_wall_time_went() -> None:
    from kerntune.model import Conditions

    backend = _slow_host()
    options = MeasureOptions(warmup_ms=4.0, budget_ms=20.0, min_samples=10, block_ms=0.6)
    start = time.perf_counter()
    telemetry = _SlowTelemetry()  # steady clocks, 3 ms a reading
    got = measure(cast(Backend, backend), [lambda: None], options, telemetry)
    wall_ms = (time.perf_counter() - start) * 1e3
    split = got.conditions.wall_ms
    assert split is not None and set(split) == {"warm_up", "sampling", "bookkeeping", "reads"}
    assert split["warm_up"] >= options.warmup_ms and split["reads"] >= 2  # warm-up ends on two agreeing readings
    assert split["bookkeeping"] >= telemetry.spent * 1e3 * 0.99  # every reading's host time is counted
    assert split["warm_up"] + split["sampling"] <= wall_ms + 0.5  # phases within the call, measured by the host
    assert split["warm_up"] + split["sampling"] >= 0.8 * wall_ms
    assert Conditions.from_dict(got.conditions.as_dict()).wall_ms == split  # kept through the store
    a, b = measure_interleaved(cast(Backend, backend), lambda: None, lambda: None, options, _SlowTelemetry())
    assert a.conditions.wall_ms == b.conditions.wall_ms and a.conditions.wall_ms is not None
    assert a.conditions.wall_ms["bookkeeping"] > 0 and "wall_ms" not in str(a.conditions.key())


class _SteadyClock:
    """Named null: free readings of one SM clock (``sm_mhz``, settable), as NVML on a busy, steady device."""

    available = True

    def __init__(self) -> None:
        self.sm_mhz = 1980

    def read(self) -> dict[str, Any]:
        return {"sm_mhz": self.sm_mhz, "mem_mhz": 3201, "power_w": 600.0, "temp_c": 50, "reasons": []}


def test_a_measurement_right_after_a_settled_one_at_its_clock_warms_up_briefly() -> None:
    # Back-to-back screens at a steady clock need no ramp: the next warms up CARRIED_SHARE of warmup_ms, and says
    # so; after a pause past CARRY_MS, or at another clock, the whole warm-up runs again.
    from kerntune.measure.pacing import CARRIED_SHARE, CARRY_MS

    backend, clock = _NullBackend(0.05, 0.05), _SteadyClock()
    options = MeasureOptions(warmup_ms=20.0, budget_ms=5.0, min_samples=10)

    def warm_up() -> tuple[float, bool]:
        got = measure(cast(Backend, backend), [lambda: None], options, telemetry=clock)
        return got.conditions.wall_ms["warm_up"], got.conditions.telemetry["warm_clock_carried"]

    warm_up()  # whatever came before: this one ends settled at 1980 MHz
    short, carried = warm_up()
    assert carried and CARRIED_SHARE * 20.0 <= short < 0.6 * 20.0, short
    time.sleep(2 * CARRY_MS / 1e3)
    after_pause, carried = warm_up()
    assert not carried and after_pause >= 20.0
    clock.sm_mhz = 1500  # the clock moved between measurements: a ramp again
    moved, carried = warm_up()
    assert not carried and moved >= 20.0
    got = measure(cast(Backend, backend), [lambda: None], options, telemetry=clock)
    assert got.conditions.warmup_ms < 0.6 * 20.0  # the record says the shorter warm-up it had
