"""The second timer: the same A B B A pairs timed again by a clock the first timer does not share, so a side-by-side
ratio is claimed only when two independent timers agree on it.

On a CUDA device the first timer is a pair of events around each launch; the second is the profiler's activity
records (CUPTI through ``torch.profiler``): each launch runs in its own ``record_function`` range, enqueued back to
back with the others, and its time is the summed durations of the device work it launched. Hazard guarded: events
bracket whatever the device did between them — a host delay between the flush's end and the kernel's start, a split
reduction's second kernel, a neighbour's work on the stream — where the kernel records hold only the kernels' own
execution. A ROCm build of torch takes the same path (its profiler's device activity comes from HIP's tracer, not
CUPTI; not yet run on an AMD GPU). On an OpenCL device the first timer is the queue's profiling events; the second
is the host's wall clock around each launch with the queue drained before and after it (it includes the enqueue and
the wait, so it agrees only where a launch outlasts them by far: a disagreement says so, never a silent average).

A second timer that cannot run (the profiler refused, no device work tied to a launch) is reported in ``error``: it
clears nothing and fails nothing."""

from __future__ import annotations

import json
import math
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypedDict

from kerntune.backends.base import Backend
from kerntune.devices.telemetry import Telemetry
from kerntune.measure.placements import Launches, placed_pair
from kerntune.measure.stats import abba_block_logs, block_half_width, pair_ratio

PROFILER = "profiler kernel durations (CUPTI through torch.profiler)"
HOST_CLOCK = "host wall clock around each launch, the queue drained before and after it"
SHORT = {PROFILER: "CUPTI", HOST_CLOCK: "host clock"}
"""Each timer's name where a column heading has room for a word or two."""
PROFILED_RANGE = "kerntune.launch"
AGREE = 0.01
"""The two timers' ratios agree when they differ by at most this fraction."""
PAIRS = 40
"""Pairs the second timer takes first where nothing says how many it needs (``planned_pairs`` does)."""
TARGET = {PROFILER: 0.004}
"""Half-width of the ratio's 95% interval the second timer times more pairs to reach, by timer: the profiler's 0.4%
holds a ratio to the 1% within which an independent check must find it; the host clock, a coarse agreement check,
takes its first pairs only."""
MAX_PAIRS = 640
MAX_S = 2.0
"""The second timer stops adding pairs at MAX_PAIRS pairs or after MAX_S seconds, whichever comes first."""
MIN_WINDOW_S = 0.1
"""Shortest span of device time the counted pairs cover: under a power cap the clock swings over tens of
milliseconds, and 10 pairs of a 1.6 ms kernel sit inside one swing (at bf16 8192³ on the H200, windows of 8 blocks
read 0.978–0.985 a few tens of milliseconds apart)."""
SUSTAIN_S = 0.2
MAX_SUSTAIN_PAIRS = 256
"""Load the second timer runs in its session before the counted pairs, untimed: SUSTAIN_S of the pairs, at most
MAX_SUSTAIN_PAIRS of them (each adds records to the trace it reads back)."""


def timer_of(backend: Backend) -> str | None:
    """The second timer this backend's device has (None: none): the profiler beside CUDA events, the host clock
    beside OpenCL's profiling events and Vulkan's timestamp queries."""
    if getattr(backend, "timer", "") == "cuda-events":
        return PROFILER
    if getattr(backend, "timer", "") in ("opencl-profiling", "vulkan-timestamps"):
        return HOST_CLOCK
    return None


def profiled_ms(
    launches: Sequence[Callable[[], object]],
    prepare: Callable[[int], None],
    synchronize: Callable[[], None],
    sustain: int = 0,
    after: Callable[[], None] | None = None,
) -> list[float]:
    """Each launch's device time in ms from the profiler's kernel records, in order; ``prepare(i)`` runs before
    launch ``i`` outside its range (restore its inputs, flush the cache), so none of it is counted. The first
    ``sustain`` launches are load only: they run first, in the session but outside any range, and are neither
    timed nor returned. ``after`` runs once the device has finished the last launch, before the trace is read
    back (the idle that reading costs would let a capped clock recover: a telemetry reading there is the clock the
    pairs ran at). Raises RuntimeError when the profiler tied device work to fewer launches than ran.

    Hazard guarded (``sustain``): starting a profiler session idles the device, and under a power cap an idle
    device comes back at boost clock for its first tens of milliseconds. On the H200, bf16 8192³ against
    torch.matmul read 0.995 in the first 50 ms of load after an idle gap of 0.1–2 s and 0.980 from 100 ms on at
    the capped clock (benchmarks/measurement-trust/sustained_load_ratio.py, 2026-12-03): ten pairs timed right after
    the session started were timed at a clock the program under sustained load does not run at.

    Hazard guarded: a host that waits for the device before and after each launch leaves the device idle between
    the flush's end and the kernel's start, and a kernel that starts on an idle device is not timed as it runs in
    a program or in an independent check (the H200, 4096³ bf16 against torch.matmul: 1.0195 drained, 1.0112 back
    to back, 1.0097 by an independent check; benchmarks/measurement-trust/profiled_idle_gap.py).
    The launches are enqueued back to back, as the first timer's are; a kernel record belongs to the range of the
    host call that launched it (its correlation id), so no synchronisation is needed to attribute it."""
    from torch.profiler import ProfilerActivity, profile, record_function

    from kerntune.scope.trace import device_us_per_range

    synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for i, launch in enumerate(launches):
            prepare(i)
            if i < sustain:
                launch()
                continue
            with record_function(PROFILED_RANGE):
                launch()
        synchronize()
        if after is not None:
            after()
    with tempfile.TemporaryDirectory() as tmp:
        trace = Path(tmp) / "trace.json"
        prof.export_chrome_trace(str(trace))
        per = device_us_per_range(json.loads(trace.read_text())["traceEvents"], PROFILED_RANGE)
    timed = len(launches) - sustain
    if len(per) != timed or min(per, default=0.0) <= 0:
        raise RuntimeError(f"the profiler tied device work to {sum(1 for x in per if x > 0)} of {timed} launches")
    return [us / 1e3 for us in per]


def host_clock_ms(
    launches: Sequence[Callable[[], object]],
    prepare: Callable[[int], None],
    synchronize: Callable[[], None],
    sustain: int = 0,
    after: Callable[[], None] | None = None,
) -> list[float]:
    """Each launch's time in ms by the host's monotonic clock, the queue drained before and after it; the first
    ``sustain`` launches run first as load only, untimed and not returned; ``after`` runs after the last."""
    out = []
    for i, launch in enumerate(launches):
        prepare(i)
        if i < sustain:
            launch()
            continue
        synchronize()
        start = time.perf_counter()
        launch()
        synchronize()
        out.append((time.perf_counter() - start) * 1e3)
    if after is not None:
        after()
    return out


def planned_pairs(a_ms: Sequence[float], b_ms: Sequence[float], target: float | None, wall_pair_ms: float = 0.0) -> int:
    """Pairs the second timer takes first, from the first timer's pairs (``a_ms[i]`` beside ``b_ms[i]``): enough
    for the median block log ratio's 95% interval to reach ``target`` at the first timer's spread of A B B A block
    log ratios (n = 2 × (1.96 × 1.2533 × sd / target)² pairs, two a block, sd = 1.4826 × MAD: the events' spread
    includes their own jitter, so this errs long), at most MAX_PAIRS and what MAX_S holds at a pair's wall time,
    at least min(PAIRS, pairs the first timer took), and never fewer than cover MIN_WINDOW_S of device time.
    Without a target: that minimum. One profiler session of the right size instead of several doubling ones:
    each session's start and trace export cost more than its launches.

    ``wall_pair_ms``: the first timer's wall time per pair, the flushes and the host's launch path included
    (``pacing.Pace``); a pair costs the larger of it and the two kernels' medians."""
    floor = min(PAIRS, len(a_ms), len(b_ms))
    if target is None or floor < 3:
        return floor
    logs = abba_block_logs(a_ms[: len(b_ms)], b_ms[: len(a_ms)])
    if len(logs) < 3:
        return floor
    middle = statistics.median(logs)
    sd = 1.4826 * statistics.median(abs(x - middle) for x in logs)
    needed = 2 * math.ceil((1.96 * 1.2533 * sd / target) ** 2)
    pair_ms = _pair_ms(a_ms, b_ms)
    if pair_ms <= 0:
        return max(floor, min(needed, MAX_PAIRS))
    window = math.ceil(MIN_WINDOW_S * 1e3 / pair_ms)
    return max(floor, min(max(needed, window), MAX_PAIRS, int(MAX_S * 1e3 / max(pair_ms, wall_pair_ms))))


def sustain_pairs(a_ms: Sequence[float], b_ms: Sequence[float], wall_pair_ms: float = 0.0) -> int:
    """Pairs of load the second timer runs before its counted ones (``check_pairs``' ``sustain``): SUSTAIN_S of wall
    time at a pair's cost (the larger of the two kernels' medians and ``wall_pair_ms``, the first timer's wall time
    per pair), at most MAX_SUSTAIN_PAIRS; none where the first timer took no pairs.

    Hazard guarded: a pair's wall time includes its two cache flushes. PoCL reports the host's whole L3, and a flush
    of twice a server's L3 can cost 0.1 s while a vector add runs 0.06 ms: 256 pairs sized by the kernels alone were
    ~50 s of load, not 0.2 s."""
    pair_ms = _pair_ms(a_ms, b_ms)
    return 0 if pair_ms <= 0 else min(MAX_SUSTAIN_PAIRS, math.ceil(SUSTAIN_S * 1e3 / max(pair_ms, wall_pair_ms)))


def _pair_ms(a_ms: Sequence[float], b_ms: Sequence[float]) -> float:
    return statistics.median(a_ms) + statistics.median(b_ms) if a_ms and b_ms else 0.0


def agrees(ratio: float, other: float) -> bool:
    return abs(math.log(other / ratio)) <= math.log1p(AGREE)


class PlacementSpread(TypedDict):
    ratios: list[float]
    half_width: float


class TimerCheck(TypedDict, total=False):
    """A second-timer check: one round's (``check_pairs``: ``pair_ratio``'s fields and the ones below) or the
    rounds' together (``combine``: ``timer``, ``ratio``, ``events_ratio``, ``rounds``, ``agrees``,
    ``sm_mhz_range``); ``error`` alone beside ``timer`` where the timer failed."""

    ratio: float
    ci: list[float]
    pairs: int
    blocks: int
    original_ms: float
    variant_ms: float
    half_width: float
    timer: str
    events_ratio: float
    agrees: bool
    sustain_pairs: int
    sm_mhz: float
    placements: PlacementSpread
    rounds: int
    sm_mhz_range: list[float]
    error: str


def check_pairs(
    backend: Backend,
    launch_a: Launches,
    launch_b: Launches,
    flush: bool,
    events_ratio: float,
    pairs: int = PAIRS,
    target: float | None = None,
    sustain: int = 0,
    telemetry: Telemetry | None = None,
) -> TimerCheck | None:
    """A B B A pairs of two launches timed by the backend's second timer (the cache flushed before each launch when
    ``flush``; with one launch of each per placement of the inputs, the placements in turn as the first timer
    takes them: ``placements.placed_pair``), as ``lab.replay``'s ratio summary plus ``timer``, the first timer's
    ``events_ratio``, whether the two ``agree`` within ``AGREE``, and ``half_width`` (the interval's, a
    fraction); None where the backend has no second timer. ``pairs`` are timed first; then, while the interval's
    half-width exceeds ``target`` (default ``TARGET`` for the profiler, none for the host clock), as many again,
    up to ``MAX_PAIRS`` pairs and ``MAX_S`` seconds. Each session first runs ``sustain`` pairs as load only
    (``profiled_ms``), so the counted pairs run at the clock a sustained load holds. With ``telemetry`` (a
    ``devices.telemetry.Telemetry``), ``sm_mhz`` is its SM clock read as the last counted pair ended: the clock the
    ratio was timed at.

    Hazard guarded: 40 pairs of a 15 µs kernel under a cold cache gave a ±1% interval on the H200 (single launches
    spread 8%), so a headline ratio drawn from them could not be held to 1% by an independent check."""
    timer = timer_of(backend)
    if timer is None:
        return None
    launch_of = placed_pair(launch_a, launch_b)
    target = TARGET.get(timer) if target is None else target
    started, count = time.perf_counter(), pairs
    paired: list[tuple[float, float]] = []

    def prepare(_: int) -> None:
        if flush:
            backend.flush_cache()

    load = [launch_of(i)[side] for i in range(sustain) for side in ((0, 1) if i % 2 == 0 else (1, 0))]
    clock: TimerCheck = {}

    def read_clock() -> None:
        if telemetry is not None and telemetry.available:
            mhz = telemetry.read().get("sm_mhz")
            if mhz is not None:
                clock["sm_mhz"] = mhz

    while True:
        first = len(paired)
        order = [(0, 1) if (first + i) % 2 == 0 else (1, 0) for i in range(count)]
        launches = [launch_of(first + i)[side] for i, pair in enumerate(order) for side in pair]
        try:
            timed = (profiled_ms if timer == PROFILER else host_clock_ms)(
                load + launches, prepare, backend.synchronize, len(load), read_clock
            )
        except Exception as exc:  # CUPTI refused, a trace this torch writes differently, a launch that failed
            return {"timer": timer, "error": f"{type(exc).__name__}: {exc}"}
        paired += [(timed[2 * i + p.index(0)], timed[2 * i + p.index(1)]) for i, p in enumerate(order)]
        found = pair_ratio(paired)  # whole A B B A blocks: a pair dropped alone would misalign the order
        half_width = math.sqrt(found["ci"][1] / found["ci"][0]) - 1
        count = min(len(paired), MAX_PAIRS - len(paired))
        if target is None or half_width <= target or count <= 0 or time.perf_counter() - started >= MAX_S:
            break
    placed = placement_spread(paired, placement_count(launch_a))
    if placed is not None:  # the claim carries the error of its placements, which more pairs do not reduce
        low, high = math.exp(-placed["half_width"]), math.exp(placed["half_width"])
        found["ci"] = [min(found["ci"][0], found["ratio"] * low), max(found["ci"][1], found["ratio"] * high)]
    check: TimerCheck = {
        **found,
        "half_width": half_width,
        "timer": timer,
        "events_ratio": events_ratio,
        "agrees": agrees(events_ratio, found["ratio"]),
        "sustain_pairs": sustain,
        **clock,
    }
    if placed is not None:
        check["placements"] = placed
    return check


def placement_count(launches: Launches) -> int:
    """How many placements of the inputs ``launches`` (one launch, or one per placement) take in turn."""
    return len(launches) if isinstance(launches, Sequence) else 1


def placement_spread(paired: Sequence[tuple[float, float]], count: int) -> PlacementSpread | None:
    """Each placement's median ratio over its A B B A blocks (pairs ``2j`` and ``2j + 1`` make block ``j``, which
    ran on placement ``j % count``, as ``placements.placed_pair`` hands them out; ``stats.abba_block_logs``) and
    ``half_width``: a Student-t 95% interval's half-width, in log ratio, of their mean — the error of a ratio
    averaged over these placements, which timing more pairs on the same placements does not shrink. None with
    fewer than 2 placements or 2 blocks on any of them.

    Hazard guarded: at 128×4096×4096 on the H200 the profiler's interval over 640 pairs on four placements was
    ±0.26% while the placements' ratios differ by several percent (eight fresh ones read 1.150–1.194 in one
    process); an independent check on other addresses read 1.30% away (2026-12-03)."""
    if count < 2:
        return None
    logs: list[list[float]] = [[] for _ in range(count)]
    for j in range(len(paired) // 2):
        (a1, b1), (a2, b2) = paired[2 * j], paired[2 * j + 1]
        logs[j % count].extend(abba_block_logs([a1, a2], [b1, b2]))
    if min(len(x) for x in logs) < 2:
        return None
    medians = [statistics.median(x) for x in logs]
    return {"ratios": [math.exp(m) for m in medians], "half_width": block_half_width(medians)}


def combine(checks: Sequence[TimerCheck]) -> TimerCheck | None:
    """Rounds' second-timer checks as one: ``timer``, the geometric means of their ``ratio`` and ``events_ratio``,
    ``rounds``, whether the two ``agree`` within 1%, and ``sm_mhz_range`` (the lowest and highest clock the rounds
    read, where they read one) (None: no round has a second-timer ratio)."""
    timed = [c for c in checks if "ratio" in c and "events_ratio" in c]
    if not timed:
        return None
    ratio = math.exp(sum(math.log(c["ratio"]) for c in timed) / len(timed))
    events = math.exp(sum(math.log(c["events_ratio"]) for c in timed) / len(timed))
    clocks = [c["sm_mhz"] for c in timed if c.get("sm_mhz")]
    combined: TimerCheck = {
        "timer": timed[0]["timer"],
        "ratio": ratio,
        "events_ratio": events,
        "rounds": len(timed),
        "agrees": agrees(events, ratio),
    }
    if clocks:
        combined["sm_mhz_range"] = [min(clocks), max(clocks)]
    return combined


def said(check: TimerCheck | None) -> str:
    """One clause for a report line: what the second timer found, or why it found nothing ("" where none ran)."""
    if not check:
        return ""
    if "ratio" not in check:
        return f"; second timer: {check.get('error', 'no ratio')}"
    verdict = "agrees" if check["agrees"] else "DISAGREES beyond 1%"
    return f"; checked by {check['timer']}: {check['ratio']:.4f}{at_clock(check)} ({verdict})"


def at_clock(check: TimerCheck) -> str:
    """ " at 1500 MHz" (or a range over rounds) where the check read the clock its pairs ran at, else ""."""
    found, mhz = check.get("sm_mhz_range"), check.get("sm_mhz")
    low, high = (found[0], found[1]) if found else (mhz, mhz)
    if not low:
        return ""
    return f" at {low} MHz" if low == high else f" at {low}–{high} MHz"
