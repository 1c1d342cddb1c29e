"""Keep the device fed while the host enqueues a batch of timed launches (nvbench's "blocking kernel").

Hazard: with events around each launch (``start.record(); launch(); end.record()``), a host slower than the
device leaves the device idle between the start event and the kernel, and that idle time is counted as
kernel time. Python launch paths cost tens of microseconds, more when compile workers share the CPU, so a
20 µs kernel can time at twice its length, and differently from run to run. The guard: before each chunk a
spinning kernel holds the stream long enough for the host to enqueue the whole chunk; the chunk then runs
back to back. A chunk counts only if the hold, timed by its own events, outlasted the host's enqueueing;
otherwise it is timed again with a longer hold (and, after three tries, kept and counted as ``uncovered``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import torch

FIRST_CYCLES_PER_MS = 1.0e6
"""Guess before the first hold is timed (1 GHz); every hold's own events correct it."""
MAX_HOLD_MS = 100.0
"""Longest hold: a chunk is cut so that its enqueueing fits in this (the device spins idle while held)."""
MARGIN = 2.0
"""Hold this many times the host's expected enqueue time (plus MIN_HOLD_MS): the host's pace jitters (a
scheduler tick, a garbage collection), and an uncovered chunk is timed again."""
MIN_HOLD_MS = 0.5
TRIES = 3


class StreamHold:
    """Times chunks of launches on the current stream behind a hold; learns the clock and the host's pace."""

    def __init__(self, device: Any) -> None:
        self.device = device
        self.cycles_per_ms = FIRST_CYCLES_PER_MS
        self.host_ms_per_item = 0.05
        self.uncovered = 0
        """Chunks kept although the host outlasted the hold three times (their samples may hold host gaps)."""

    def chunk_size(self, pending: int) -> int:
        return max(1, min(pending, int((MAX_HOLD_MS - MIN_HOLD_MS) / (MARGIN * self.host_ms_per_item))))

    def run(self, count: int, enqueue: Callable[[int], None]) -> bool:
        """Enqueue a hold, then ``enqueue(i)`` for each ``i < count``; wait for the device. True if the hold
        lasted longer than the host took to enqueue everything (no sample can contain a host gap)."""
        want_ms = min(MAX_HOLD_MS, MIN_HOLD_MS + MARGIN * count * self.host_ms_per_item)
        cycles = max(1000, int(want_ms * self.cycles_per_ms))
        begin, end = (torch.cuda.Event(enable_timing=True) for _ in range(2))  # type: ignore[no-untyped-call]
        begin.record()
        torch.cuda._sleep(cycles)  # type: ignore[no-untyped-call]
        end.record()
        started = time.perf_counter()
        for i in range(count):
            enqueue(i)
        host_ms = (time.perf_counter() - started) * 1e3
        torch.cuda.synchronize(self.device)
        held_ms = float(begin.elapsed_time(end))
        if held_ms > 0:
            self.cycles_per_ms = cycles / held_ms
        covered = host_ms < held_ms
        pace = max(host_ms / count, 0.002)
        # A covered chunk sets the pace; an uncovered one doubles it, so the retry holds longer and is cut shorter.
        self.host_ms_per_item = pace if covered else max(pace, self.host_ms_per_item) * 2.0
        return covered

    def timed(self, count: int, enqueue: Callable[[int], None]) -> None:
        """Run ``enqueue`` over ``range(count)`` in covered chunks (see the module docstring). A chunk the hold
        did not cover is timed again, cut to what the corrected pace says fits under the longest hold."""
        done, tries = 0, 0
        while done < count:
            size = self.chunk_size(count - done)

            def shifted(i: int, first: int = done) -> None:
                enqueue(first + i)

            covered = self.run(size, shifted)
            tries += 1
            if covered or tries == TRIES:
                self.uncovered += not covered
                done, tries = done + size, 0
