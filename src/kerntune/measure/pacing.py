"""Pacing of a measurement: how many launches go between host synchronizations, how often the host may stop
to look (the stopping check, a telemetry read) while the device idles, and when the device is warm enough to
sample (the SM clock settled, or carried over from the measurement just before). ``measure.protocol`` samples
and decides when to stop; this module decides when it may look.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

from kerntune.devices.telemetry import Recorder

BATCH_MS = 10.0
"""Time per block between host synchronizations: one sync per launch would add host latency to the loop, one
sync per thousand launches would overrun the budget on slow kernels; 10 ms blocks resolve the clock swings of
a power-capped GPU, which the stopping rule looks at. A block is sized by the pace of a launch (see ``Pace``),
not by the kernel's time alone."""
RAMP_TOLERANCE = 0.02
"""Warm-up ends only when two consecutive SM clock readings agree within this fraction."""
CARRY_MS = 50.0
"""A measurement that starts within this long of the last one's end, at the clock that one ended settled at,
inherits its warm clock: its warm-up shrinks to CARRIED_SHARE of ``warmup_ms`` (first-launch costs of its own
kernel; the clock needs no ramp). Past it, or at another clock, the full warm-up runs."""
CARRIED_SHARE = 0.25
"""The share of ``warmup_ms`` a carried warm clock still warms up for (see CARRY_MS)."""
HOST_SHARE = 0.05
"""Most of the wall time the host's own work between blocks may take: the stopping rule's intervals and
the telemetry's reads, during which the device idles (see ``Bookkeeping``)."""


def block_size(pace_ms: float, remaining: int, block_ms: float = BATCH_MS) -> int:
    """Launches in the next block: ``block_ms`` of wall time at ``pace_ms`` a launch, at least one, at most
    ``remaining``."""
    return max(1, min(remaining, int(block_ms / max(pace_ms, 1e-3))))


class Pace:
    """Wall time per launch of the last block: the slower of the kernel and the host around it.

    Hazard: blocks sized by the kernel's time alone overrun every budget when the host is the slower side.
    A 20 µs kernel whose enqueueing (the flush, the events, a Python launch path, the stream hold's cover)
    costs 60 µs got blocks of 500 launches taking 60+ ms each, so a 12 ms screening budget ran 0.4 s (H200,
    2026-11-30, the race under busy compile workers). Timing the block's wall clock keeps blocks near
    BATCH_MS whichever side is slower."""

    def __init__(self, take: Callable[[int], list[float]]) -> None:
        self.take, self.ms = take, 0.0

    def __call__(self, count: int) -> list[float]:
        start = time.perf_counter()
        block = self.take(count)
        self.ms = max(block[-1], (time.perf_counter() - start) * 1e3 / max(1, len(block)))
        return block


class Bookkeeping:
    """Spaces the host's work between blocks so that the device idles for it at most HOST_SHARE of the wall time:
    ``due()`` once the time since the last bookkeeping ended is ``cost / HOST_SHARE``, ``cost`` being what the last
    one took (``with`` around it measures that).

    Hazard guarded: a stopping check after every block (an interval over all samples so far and an NVML reading:
    0.1-0.25 ms on the H200, milliseconds while the interval was a bootstrap) is time the device idles, and under a
    power cap the idle share sets the clock a measurement runs at: bf16 8192³ against torch.matmul on the H200 reads
    0.995 at boost and 0.980 at the capped clock of a sustained load
    (benchmarks/measurement-trust/sustained_load_ratio.py, 2026-12-03). This bounds that share; it is not the only
    pause: with it, the events' pass of an in-process A/B at 8192³ still drew at most 245 W (690 W back to back) and
    kept the clock at 1815–1980 MHz, so the events' ratio there is a boost-clock ratio, which the report labels with
    its clocks."""

    def __init__(self) -> None:
        self.cost = self.total = 0.0
        self.since = self.started = time.perf_counter()

    def due(self) -> bool:
        return time.perf_counter() - self.since >= self.cost / HOST_SHARE

    def __enter__(self) -> None:
        self.started = time.perf_counter()

    def __exit__(self, *_: object) -> None:
        self.since = time.perf_counter()
        self.cost = self.since - self.started
        self.total += self.cost


class WarmClock:
    """The SM clock and the time the last measurement of this process ended at, if its clock had settled.

    Hazard guarded: a race's screens come back to back, each warmed up from scratch (a rung-0 screen's median
    split on the H200, 2026-12-04: 16.4 ms warm-up of 38 ms) although the clock was already where the previous
    screen left it. Inherited only when the telemetry can say so: a first reading at that clock, soon enough."""

    def __init__(self) -> None:
        self.ended_at, self.sm_mhz = -math.inf, 0.0

    def note(self, recorder: Recorder, settled: bool) -> None:
        """A measurement ended; ``settled``: its clock had stopped moving (else nothing carries from it)."""
        clock = _last_clock(recorder)
        self.ended_at, self.sm_mhz = (time.perf_counter(), clock) if settled and clock else (-math.inf, 0.0)

    def carries(self, recorder: Recorder) -> bool:
        """Whether a measurement starting now, whose first reading ``recorder`` holds, inherits the warm clock."""
        clock = _last_clock(recorder)
        return (
            clock is not None
            and (time.perf_counter() - self.ended_at) * 1e3 <= CARRY_MS
            and abs(clock - self.sm_mhz) <= RAMP_TOLERANCE * max(clock, self.sm_mhz)
        )


def _last_clock(recorder: Recorder) -> float | None:
    last = recorder.readings[-1:]
    return float(last[0]["sm_mhz"]) if last and "sm_mhz" in last[0] else None


warm_clock = WarmClock()
"""This process's: measurements in one process run one after another on its device."""


def clock_settled(recorder: Recorder) -> bool:
    """The last two SM clock readings agree within RAMP_TOLERANCE (always, where no telemetry reads a clock)."""
    clocks = [float(r["sm_mhz"]) for r in recorder.readings[-2:]]
    if not recorder.source.available or len(clocks) < 2:
        return not recorder.source.available
    return abs(clocks[1] - clocks[0]) <= RAMP_TOLERANCE * max(clocks)
