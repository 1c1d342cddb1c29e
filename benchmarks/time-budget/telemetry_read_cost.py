"""What the host's bookkeeping between a measurement's blocks costs: each NVML call of one telemetry reading
(``kerntune.devices.telemetry.Nvml.read``) and the whole reading, and the stopping rule's interval over 20-1000
samples. The protocol waits 1/HOST_SHARE times the last bookkeeping's cost before the next stopping check
(``measure.pacing.Bookkeeping``), so these costs set the shortest a screening measurement can be.

Usage: python benchmarks/time-budget/telemetry_read_cost.py [--repeats 200]   (needs an NVIDIA GPU and pynvml for the
reads)"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from collections.abc import Callable
from functools import partial
from typing import Any


def median_us(call: Callable[[], Any], repeats: int) -> float:
    """Median wall time of one call, in microseconds, over ``repeats`` calls after one untimed call."""
    call()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        times.append((time.perf_counter() - start) * 1e6)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=200)
    opts = parser.parse_args()
    if opts.repeats < 1:
        print("telemetry_read_cost: --repeats must be at least 1", file=sys.stderr)
        return 2
    from kerntune.measure.protocol import MeasureOptions, _interval
    from kerntune.measure.stats import bootstrap_median_ci

    rng = random.Random(0)
    for n in (20, 100, 300, 1000):
        samples = [0.1 * (1 + 0.01 * rng.gauss(0, 1)) for _ in range(n)]
        step = n // 10  # ten blocks: past MIN_BLOCKS, so the check computes its interval
        blocks = [statistics.median(samples[i : i + step]) for i in range(0, n, step)]
        options = MeasureOptions(ci_target=0.05)
        check = median_us(partial(_interval, samples, blocks, 1.0, options, 1e9), opts.repeats)
        boot = median_us(partial(bootstrap_median_ci, samples), max(1, opts.repeats // 10))
        print(f"{n} samples: stopping check {check:.0f} us; a bootstrap of the median {boot:.0f} us", flush=True)
    try:
        from kerntune.devices.telemetry import Nvml

        reader = Nvml(None, 0)
    except Exception as exc:  # pynvml missing or no NVIDIA driver: the interval figures above still stand
        print(f"no NVML reads timed: {type(exc).__name__}: {exc}")
        return 0
    nvml, h = reader.nvml, reader.handle
    calls: dict[str, Callable[[], Any]] = {
        "sm clock": lambda: nvml.nvmlDeviceGetClockInfo(h, nvml.NVML_CLOCK_SM),
        "memory clock": lambda: nvml.nvmlDeviceGetClockInfo(h, nvml.NVML_CLOCK_MEM),
        "power": lambda: nvml.nvmlDeviceGetPowerUsage(h),
        "temperature": lambda: nvml.nvmlDeviceGetTemperature(h, nvml.NVML_TEMPERATURE_GPU),
        "clock event reasons": lambda: reader._reasons(h),
        "compute processes": lambda: nvml.nvmlDeviceGetComputeRunningProcesses(h),
        "utilization": lambda: nvml.nvmlDeviceGetUtilizationRates(h),
        "whole reading (Nvml.read)": reader.read,
    }
    for name, call in calls.items():
        print(f"{name}: {median_us(call, opts.repeats):.0f} us", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
