"""An interleaved A/B given one launch of each side per placement of the inputs takes the placements in turn:
every placement timed, each in both orders (A B and B A), A and B of a pair always on the same placement — in
the first timer's pairs and in the second timer's alike."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, cast

import pytest

from kerntune.backends.base import Backend
from kerntune.errors import UsageError
from kerntune.measure.placements import placed_pair
from kerntune.measure.protocol import MeasureOptions, measure_interleaved
from kerntune.measure.second_timer import check_pairs
from kerntune.settings import Settings


def _launches(log: list[tuple[str, int]], side: str, count: int) -> list[Callable[[], Any]]:
    return [lambda p=p: log.append((side, p)) for p in range(count)]


def _pairs(log: list[tuple[str, int]]) -> list[tuple[tuple[str, int], tuple[str, int]]]:
    return [(log[i], log[i + 1]) for i in range(0, len(log) - 1, 2)]


def test_each_placement_is_taken_in_turn_in_both_orders_with_both_sides_on_it() -> None:
    log: list[tuple[str, int]] = []
    pick = placed_pair(_launches(log, "A", 3), _launches(log, "B", 3))
    for k in range(12):
        a, b = pick(k)
        for call in (a, b) if k % 2 == 0 else (b, a):
            call()
    pairs = _pairs(log)
    assert [first[1] for first, _ in pairs] == [0, 0, 1, 1, 2, 2] * 2
    assert all(first[1] == second[1] for first, second in pairs)  # A and B of a pair on the same operands
    orders = {(first[1], first[0]) for first, _ in pairs}
    assert orders == {(p, s) for p in range(3) for s in "AB"}  # every placement led by A once and by B once


def test_one_launch_is_one_placement_and_unequal_lists_are_refused() -> None:
    a, b = (lambda: None), (lambda: None)
    assert placed_pair(a, b)(5) == (a, b)
    with pytest.raises(ValueError, match="2 A launches beside 1 B launches"):
        placed_pair([a, a], [b])


class _NullRecordingBackend:
    """Named null: no device. Runs each launch (so the test sees which ran) and 'times' it at 1 ms."""

    timer = "opencl-profiling"
    flush_bytes = 0
    uncovered_chunks = 0

    def time_launches(self, launches: Sequence[Callable[[], Any]], flush: bool) -> list[float]:
        for launch in launches:
            launch()
        return [1.0] * len(launches)

    def flush_cache(self) -> None:
        pass

    def synchronize(self) -> None:
        pass


def test_the_first_and_second_timer_take_every_placement() -> None:
    log: list[tuple[str, int]] = []
    backend = _NullRecordingBackend()
    a, _ = measure_interleaved(
        cast(Backend, backend),
        _launches(log, "A", 4),
        _launches(log, "B", 4),
        MeasureOptions(warmup_ms=1.0, budget_ms=5.0, min_samples=16),
        None,
    )
    timed = _pairs(log[len(log) - 2 * a.n :])  # the kept pairs (the warm-up's came first)
    assert {p for (_, p), _ in timed} == {0, 1, 2, 3} and all(x[1] == y[1] for x, y in timed)
    log.clear()
    check = check_pairs(backend, _launches(log, "A", 4), _launches(log, "B", 4), False, 1.0, pairs=8)
    assert check is not None and check["pairs"] == 8
    assert [x[1] for x, _ in _pairs(log)] == [0, 0, 1, 1, 2, 2, 3, 3]


def test_placements_are_a_setting_checked_on_read() -> None:
    assert Settings.from_env({}).placements == 16
    assert Settings.from_env({"KERNTUNE_PLACEMENTS": "1"}).placements == 1
    with pytest.raises(UsageError, match="KERNTUNE_PLACEMENTS is a count of at least 1"):
        Settings.from_env({"KERNTUNE_PLACEMENTS": "0"})
