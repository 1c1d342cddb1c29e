"""Deploy marks a served spec's winner that is not faster than the library it was confirmed beside: ``kerntune run``
leaves that key to the library, a program calling the spec's kernel itself still gets the winner."""

from __future__ import annotations

import dataclasses

import pytest

from kerntune.deploy.artifacts import not_faster_than_the_library, table_from_run
from kerntune.measure.stats import RatioEstimate
from kerntune.model import Budget, Candidate, Conditions, Config, Measurement, Run, Shape, Target
from kerntune.report.summary import RunReport, ShapeReport

SHAPE = Shape.of({"M": 16, "N": 1024, "K": 4096, "layout": "NT", "bias": 0})


def _measured(median_ms: float) -> Measurement:
    return Measurement((median_ms,) * 5, Conditions("events"))


def _report(ratio: float, second: float | None, library_reference: bool = True) -> ShapeReport:
    winner = Candidate(SHAPE, Config.of({"BLOCK_M": 16}), status="ok", id=7, measurement=_measured(0.5))
    library = Candidate(
        SHAPE,
        Config.of({} if library_reference else {"BLOCK_M": 128}),
        role="baseline",
        label="torch.matmul" if library_reference else "default",
        status="ok",
        id=1,
        measurement=_measured(0.1),
    )  # search-time medians that the interleaved ratio overrules
    return ShapeReport(
        shape=SHAPE,
        winner=winner,
        baselines=[library],
        slowest=None,
        failed=[],
        counts={},
        timing_claimed=True,
        reference=library,
        interleaved={7: RatioEstimate(ratio, ratio * 0.99, ratio * 1.01, 6), 1: RatioEstimate(1.0, 1.0, 1.0, 6)},
        second_timer={7: {"ratio": second}} if second is not None else {},
    )


@pytest.mark.parametrize(
    ("ratio", "second", "left"),
    [
        (0.97, None, False),  # faster by the events, no second timer: served
        (0.97, 0.98, False),  # faster by both: served
        (1.12, None, True),  # slower: the library keeps the key
        (1.00, None, True),  # a tie only adds host time
        (0.995, 1.004, True),  # the events call it faster, the profiler's kernel durations do not
    ],
)
def test_a_winner_is_deployed_only_where_it_beats_the_library(ratio: float, second: float | None, left: bool) -> None:
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
    report = dataclasses.replace(
        report, interleaved={}, winner=dataclasses.replace(report.winner, measurement=_measured(winner_ms))
    )
    found = not_faster_than_the_library(report)
    assert (found is not None) is left
    if found is not None:
        assert "unconfirmed" in found["why"] and found["ratio"] == pytest.approx(1.1)


@pytest.mark.parametrize("serves", [True, False])
def test_the_table_keeps_every_winner_and_marks_those_the_library_beats(serves: bool) -> None:
    run = Run(
        "r1",
        "triton_matmul",
        "spec.py",
        "abc",
        Target("triton", "nvidia", "sm_90", "NVIDIA H200", 132),
        "race",
        Budget(),
        (SHAPE,),
        "bfloat16",
        0,
        options={"serves": ["aten::mm"] if serves else []},
    )
    faster = dataclasses.replace(_report(0.9, 0.92), shape=Shape.of({**SHAPE.as_dict(), "M": 32}))
    table = table_from_run(RunReport(run, [_report(1.12, 1.10), faster]))
    marks = [e.get("library_faster") for e in table["entries"]]
    assert len(table["entries"]) == 2 and marks[1] is None
    if serves:  # the slower winner stays in the table, marked with why (kerntune run skips it)
        assert marks[0] is not None and marks[0]["ratio"] == 1.12 and "torch.matmul" in marks[0]["why"]
        assert [x["shape"]["M"] for x in table["left_to_library"]] == [16]
    else:  # a spec that serves no library operator: its best config is all there is
        assert marks[0] is None and table["left_to_library"] == []
