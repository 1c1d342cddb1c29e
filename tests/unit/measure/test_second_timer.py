"""The second timer's arithmetic, no device needed: rounds combined by geometric mean, agreement within 1%, the
host clock around each launch, and a report clause for every outcome."""

from __future__ import annotations

import math
import time

import pytest

from kerntune.measure.second_timer import AGREE, HOST_CLOCK, agrees, check_pairs, combine, host_clock_ms, said


def test_rounds_combine_by_geometric_mean_and_agreement_is_within_one_percent() -> None:
    rounds = [{"timer": HOST_CLOCK, "ratio": 1.1, "events_ratio": 1.1}, {"timer": HOST_CLOCK, "ratio": 0.9,
                                                                         "events_ratio": 0.9 * 1.03}]
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
    times = host_clock_ms([lambda: time.sleep(0.002), lambda: time.sleep(0.006)],
                          lambda i: events.append(f"prepare {i}"), lambda: events.append("sync"))
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
