"""Deploy keeps a served spec's winner only where it is faster than the library it was confirmed beside."""

from __future__ import annotations

import dataclasses

import pytest

from kerntune.deploy.artifacts import not_faster_than_the_library
from kerntune.measure.stats import RatioEstimate
from kerntune.model import Candidate, Conditions, Config, Measurement, Shape
from kerntune.report.summary import ShapeReport

SHAPE = Shape.of({"M": 16, "N": 1024, "K": 4096, "layout": "NT", "bias": 0})


def _measured(median_ms: float) -> Measurement:
    return Measurement((median_ms,) * 5, Conditions("events"))


def _report(ratio: float, second: float | None, library_reference: bool = True) -> ShapeReport:
    winner = Candidate(SHAPE, Config.of({"BLOCK_M": 16}), status="ok", id=7, measurement=_measured(0.5))
    library = Candidate(SHAPE, Config.of({} if library_reference else {"BLOCK_M": 128}), role="baseline",
                        label="torch.matmul" if library_reference else "default", status="ok", id=1,
                        measurement=_measured(0.1))  # search-time medians that the interleaved ratio overrules
    return ShapeReport(shape=SHAPE, winner=winner, baselines=[library], slowest=None, failed=[], counts={},
                       timing_claimed=True, reference=library,
                       interleaved={7: RatioEstimate(ratio, ratio * 0.99, ratio * 1.01, 6),
                                    1: RatioEstimate(1.0, 1.0, 1.0, 6)},
                       second_timer={7: {"ratio": second}} if second is not None else {})


@pytest.mark.parametrize(("ratio", "second", "left"), [
    (0.97, None, False),   # faster by the events, no second timer: served
    (0.97, 0.98, False),   # faster by both: served
    (1.12, None, True),    # slower: the library keeps the key
    (1.00, None, True),    # a tie only adds host time
    (0.995, 1.004, True),  # the events call it faster, the profiler's kernel durations do not
])
def test_a_winner_is_deployed_only_where_it_beats_the_library(ratio: float, second: float | None,
                                                                left: bool) -> None:
    found = not_faster_than_the_library(_report(ratio, second))
    assert (found is not None) is left
    if found is not None:
        assert found["ratio"] == ratio and found["second_timer_ratio"] == second
        assert "torch.matmul" in found["why"] and f"{ratio:.4f}" in found["why"]


def test_a_reference_that_is_not_the_library_never_leaves_a_winner_out() -> None:
    # Without a library baseline the reference is the spec's default config (a baseline with a config): there is
    # no library to fall back to.
    assert not_faster_than_the_library(_report(1.12, None, library_reference=False)) is None


@pytest.mark.parametrize(("winner_ms", "left"), [(0.09, False), (0.11, True)])
def test_an_unconfirmed_winner_is_judged_by_its_search_time_median(winner_ms: float, left: bool) -> None:
    report = _report(0.9, None)
    assert report.winner is not None
    # Confirmation cut by the budget: no interleaved ratio, only the search-time medians.
    report = dataclasses.replace(report, interleaved={},
                                 winner=dataclasses.replace(report.winner, measurement=_measured(winner_ms)))
    found = not_faster_than_the_library(report)
    assert (found is not None) is left
    if found is not None:
        assert "unconfirmed" in found["why"] and found["ratio"] == pytest.approx(1.1)
