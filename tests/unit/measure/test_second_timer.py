"""The second timer's arithmetic, no device needed: rounds combined by geometric mean, agreement within 1%, the
host clock around each launch, and a report clause for every outcome."""

from __future__ import annotations

import functools
import math
import time
from typing import Any

import pytest

from kerntune.measure.second_timer import (
    AGREE,
    HOST_CLOCK,
    MAX_PAIRS,
    MAX_S,
    MAX_SUSTAIN_PAIRS,
    SUSTAIN_S,
    agrees,
    check_pairs,
    combine,
    host_clock_ms,
    placement_spread,
    planned_pairs,
    said,
    sustain_pairs,
)


def test_rounds_combine_by_geometric_mean_and_agreement_is_within_one_percent() -> None:
    rounds = [
        {"timer": HOST_CLOCK, "ratio": 1.1, "events_ratio": 1.1},
        {"timer": HOST_CLOCK, "ratio": 0.9, "events_ratio": 0.9 * 1.03},
    ]
    found = combine([*rounds, {"timer": HOST_CLOCK, "error": "refused"}])
    assert found is not None and found["rounds"] == 2
    assert found["ratio"] == pytest.approx(math.sqrt(1.1 * 0.9))
    assert found["events_ratio"] == pytest.approx(math.sqrt(1.1 * 0.9 * 1.03))
    assert found["agrees"] is False  # 1.5% apart
    assert agrees(1.0, 1.0 + AGREE * 0.99) and not agrees(1.0, 1.0 + AGREE * 1.01)
    assert combine([{"timer": HOST_CLOCK, "error": "refused"}]) is None
    assert said(None) == "" and said({"timer": "x", "error": "refused"}) == "; second timer: refused"
    assert said(found) == f"; checked by {HOST_CLOCK}: {found['ratio']:.4f} (DISAGREES beyond 1%)"


def test_the_host_clock_times_each_launch_between_two_drained_queues() -> None:
    events: list[str] = []
    times = host_clock_ms(
        [lambda: time.sleep(0.002), lambda: time.sleep(0.006)],
        lambda i: events.append(f"prepare {i}"),
        lambda: events.append("sync"),
    )
    assert events == ["prepare 0", "sync", "sync", "prepare 1", "sync", "sync"]
    assert 1.9 < times[0] < times[1] and times[1] > 5.9


class _SleepBackend:
    """A named null backend: its 'launches' sleep on the host, its flush and drain are counted."""

    timer = "opencl-profiling"

    def __init__(self) -> None:
        self.flushes = 0

    def flush_cache(self) -> None:
        self.flushes += 1

    def synchronize(self) -> None:
        pass


def test_a_pair_check_orders_a_b_b_a_and_names_what_it_found() -> None:
    backend = _SleepBackend()
    found = check_pairs(backend, lambda: time.sleep(0.001), lambda: time.sleep(0.002), True, 2.0, pairs=6)
    assert found is not None and found["timer"] == HOST_CLOCK and found["pairs"] == 6 and backend.flushes == 12
    assert 1.5 < found["ratio"] < 2.5 and found["events_ratio"] == 2.0
    assert check_pairs(type("NoTimer", (), {"timer": "none"})(), lambda: None, lambda: None, False, 1.0) is None

    def broken() -> None:
        raise RuntimeError("the launch failed")

    failed = check_pairs(backend, broken, broken, False, 1.0, pairs=2)
    assert failed == {"timer": HOST_CLOCK, "error": "RuntimeError: the launch failed"}


def test_a_pair_check_times_more_pairs_until_its_interval_is_narrow_enough() -> None:
    backend = _SleepBackend()
    wide = check_pairs(backend, lambda: time.sleep(0.001), lambda: time.sleep(0.001), False, 1.0, pairs=4, target=1.0)
    assert wide is not None and wide["pairs"] == 4 and wide["half_width"] <= 1.0  # narrow enough at once
    # A target no host clock reaches: pairs double (4, 8, 16, ...) up to MAX_PAIRS or MAX_S, never beyond.
    tight = check_pairs(
        backend, lambda: time.sleep(0.0005), lambda: time.sleep(0.0005), False, 1.0, pairs=4, target=1e-9
    )
    assert tight is not None and 8 <= tight["pairs"] <= MAX_PAIRS and tight["half_width"] > 1e-9
    assert tight["pairs"] == MAX_PAIRS or tight["pairs"] & (tight["pairs"] - 1) == 0


def test_the_first_timers_spread_plans_the_second_timers_pairs() -> None:
    steady = [1.0] * 50
    assert planned_pairs(steady, steady, None) == 40  # no target: the first PAIRS
    # No spread: the pairs that cover MIN_WINDOW_S (0.1 s at 2 ms a pair), however few the first timer took.
    assert planned_pairs(steady[:10], steady[:10], 0.004) == 50
    assert planned_pairs(steady, steady, 0.004) == 50
    short = [0.01] * 50
    assert planned_pairs(short, short, 0.004) == MAX_PAIRS  # 0.1 s of 20 µs pairs is 5000: capped
    jitter = [1.0 + 0.04 * ((i * 7) % 11 - 5) / 5 for i in range(50)]  # adjacent ratios spread about ±4%
    wanted = planned_pairs(steady, jitter, 0.004)
    assert 40 < wanted <= MAX_PAIRS
    assert planned_pairs(steady, jitter, 0.02) < wanted  # a looser target needs fewer
    slow = [200.0] * 50  # 0.4 s a pair: MAX_S holds 5 of them, and the first timer's 40 stay the floor
    assert planned_pairs(slow, [x * 200 for x in jitter], 0.004) == 40


def test_the_second_timer_runs_its_load_first_and_times_only_the_pairs_after_it() -> None:
    backend, ran = _SleepBackend(), []
    found = check_pairs(backend, lambda: ran.append("A"), lambda: ran.append("B"), True, 1.0, pairs=4, sustain=3)
    assert found is not None and found["pairs"] == 4 and found["sustain_pairs"] == 3
    # Three pairs of load (A B, B A, A B), then the four counted pairs from the start of the A B B A order; every
    # launch, load included, has its flush.
    assert "".join(ran) == "ABBAAB" + "ABBAABBA" and backend.flushes == 14


def test_the_load_before_the_second_timer_lasts_sustain_s_at_most_max_sustain_pairs() -> None:
    assert sustain_pairs([1.0] * 5, [1.0] * 5) == math.ceil(SUSTAIN_S * 1e3 / 2.0)
    assert sustain_pairs([0.001] * 5, [0.001] * 5) == MAX_SUSTAIN_PAIRS
    assert sustain_pairs([], []) == 0
    # A pair whose wall time is set by its flushes (PoCL: 0.1 s for two 0.06 ms kernels) loads for SUSTAIN_S of
    # wall time, not for SUSTAIN_S of the kernels' time.
    assert sustain_pairs([0.06] * 5, [0.06] * 5, wall_pair_ms=200.0) == math.ceil(SUSTAIN_S * 1e3 / 200.0)
    assert sustain_pairs([1.0] * 5, [1.0] * 5, wall_pair_ms=0.5) == math.ceil(SUSTAIN_S * 1e3 / 2.0)


def test_the_second_timers_pairs_fit_max_s_at_a_pairs_wall_time() -> None:
    short = [0.01] * 50  # the kernels alone would take MAX_PAIRS; at 25 ms of flushes a pair MAX_S holds 80
    assert planned_pairs(short, short, 0.004) == MAX_PAIRS
    assert planned_pairs(short, short, 0.004, wall_pair_ms=25.0) == int(MAX_S * 1e3 / 25.0) == 80
    assert planned_pairs(short, short, 0.004, wall_pair_ms=500.0) == 40  # the first timer's 40 stay the floor


class _NullClock:
    """Named null: a telemetry source whose SM clock reads 1500 MHz."""

    available = True

    def read(self) -> dict[str, Any]:
        return {"sm_mhz": 1500, "power_w": 690.0}


def test_the_second_timer_labels_its_ratio_with_the_clock_its_pairs_ran_at() -> None:
    found = check_pairs(_SleepBackend(), lambda: None, lambda: None, False, 1.0, pairs=4, telemetry=_NullClock())
    assert found is not None and found["sm_mhz"] == 1500
    assert f"{found['ratio']:.4f} at 1500 MHz (" in said(found)
    rounds = [{**found, "sm_mhz": 1500}, {**found, "sm_mhz": 1620}]
    combined = combine(rounds)
    assert combined is not None and combined["sm_mhz_range"] == [1500, 1620]
    assert f"{combined['ratio']:.4f} at 1500–1620 MHz (" in said(combined)
    bare = check_pairs(_SleepBackend(), lambda: None, lambda: None, False, 1.0, pairs=4)
    assert bare is not None and "sm_mhz" not in bare and "MHz" not in said(bare)


def test_a_ratio_over_placements_carries_the_error_of_its_placements() -> None:
    # Four placements whose pairs agree within each placement but not across them (as at 128×4096×4096 on the
    # H200): pair k ran on placement (k // 2) % 4; the interval widens to the placements' spread.
    per_placement = [1.15, 1.17, 1.19, 1.16]
    paired = [(1.0, per_placement[(k // 2) % 4] * (1 + 0.001 * (k % 3))) for k in range(64)]
    placed = placement_spread(paired, 4)
    assert placed is not None and [round(r, 2) for r in placed["ratios"]] == per_placement
    assert 0.01 < placed["half_width"] < 0.05
    assert placement_spread(paired, 1) is None and placement_spread(paired[:8], 4) is None  # 2 pairs a placement
    # Through the second timer (the host clock of the null backend): B's launch on placement p sleeps longer by
    # its own factor; the reported interval is at least the placements' interval, not the pairs' alone.
    factors = [1.1, 1.3, 1.5, 1.2]
    b_launches = [functools.partial(time.sleep, 2e-3 * f) for f in factors]
    found = check_pairs(_SleepBackend(), [functools.partial(time.sleep, 2e-3)] * 4, b_launches, False, 1.0, pairs=24)
    assert found is not None and len(found["placements"]["ratios"]) == 4
    low, high = found["ci"]
    assert high / low >= math.exp(2 * found["placements"]["half_width"]) * 0.999
    assert found["placements"]["ratios"][2] > found["placements"]["ratios"][0]  # the 1.5 placement above the 1.1
