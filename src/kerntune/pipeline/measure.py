"""Measurement, first version of the protocol in DESIGN.md.

Device events bracket each launch; warm-up runs by time (clocks ramp, JIT and caches settle); the cache
is flushed before every sample, outside the timed region (cold regime); sampling continues until the
median's 95% confidence interval is within ``ci_target`` of it, or the sample budget ends. Every raw sample
is kept: summaries are computed from them, never stored instead of them.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kerntune.backends.base import Backend
from kerntune.model import Conditions, Measurement, median_ci


@dataclass(frozen=True)
class MeasureOptions:
    warmup_ms: float = 100.0
    min_samples: int = 10
    max_samples: int = 200
    budget_ms: float = 1500.0
    ci_target: float = 0.01
    regime: str = "cold"


def _batch_size(last_ms: float, remaining: int) -> int:
    # Batches of ~50 ms of device work between host synchronizations: one sync per launch would add host
    # latency to the loop, one sync per thousand would overrun the budget on slow kernels.
    per = max(last_ms, 1e-3)
    return max(1, min(remaining, int(50.0 / per)))


def measure(backend: Backend, launch: Callable[[], Any], options: MeasureOptions) -> Measurement:
    flush = options.regime == "cold"
    # Warm-up by time, not count: a 5 µs kernel needs thousands of launches to ramp clocks, a 50 ms one few.
    start = time.perf_counter()
    last = backend.time_launches(launch, 1, flush)[0]
    while (time.perf_counter() - start) * 1e3 < options.warmup_ms:
        last = max(backend.time_launches(launch, _batch_size(last, 64), flush))
    samples: list[float] = []
    start = time.perf_counter()
    while len(samples) < options.max_samples:
        batch = _batch_size(last, options.max_samples - len(samples))
        samples.extend(backend.time_launches(launch, batch, flush))
        last = samples[-1]
        if len(samples) < options.min_samples:
            continue
        ordered = sorted(samples)
        lo, hi = median_ci(ordered)
        median = ordered[len(ordered) // 2]
        if (hi - lo) / 2 <= options.ci_target * median:
            break
        if (time.perf_counter() - start) * 1e3 >= options.budget_ms:
            break
    conditions = Conditions(
        timer=backend.timer,
        regime="cold" if flush else "warm",
        warmup_ms=options.warmup_ms,
        flush_bytes=backend.flush_bytes if flush else 0,
    )
    return Measurement(tuple(samples), conditions)
