"""The ratio a report leads with: per-dispatch device time (CUPTI) where the profiler timed a finalist beside the
reference, the CUDA events' interleaved ratio beside it; where the second timer is a host clock (OpenCL, Vulkan) the
device's own events lead and the host clock only checks them."""

from __future__ import annotations

import dataclasses
import io

from rich.console import Console

from kerntune.cli.render import finalists_table, shape_table
from kerntune.measure.second_timer import HOST_CLOCK, PROFILER
from kerntune.measure.stats import RatioEstimate
from kerntune.model import Budget, Candidate, Conditions, Config, Measurement, Run, Shape, Target
from kerntune.report.summary import RunReport, ShapeReport, report_json

SHAPE = Shape.of({"M": 16, "N": 4096, "K": 4096})
RUN = Run(
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
)


def _candidate(cid: int, config: dict[str, int], role: str = "search", label: str = "") -> Candidate:
    m = Measurement((0.1,) * 5, Conditions("events"))
    return Candidate(SHAPE, Config.of(config), role=role, label=label, status="ok", id=cid, measurement=m, confirmed=m)


def _report(timer: str) -> ShapeReport:
    winner, second = _candidate(7, {"BLOCK_M": 16}), _candidate(8, {"BLOCK_M": 32})
    library = _candidate(1, {}, role="baseline", label="torch.matmul")
    # As on the H200 at 16×4096×4096: events 5.11, kernel records 5.99 for the winner; the runner-up has no
    # second-timer round (confirmation cut), so its events ratio stands.
    return ShapeReport(
        shape=SHAPE,
        winner=winner,
        baselines=[library],
        slowest=None,
        failed=[],
        counts={},
        timing_claimed=True,
        reference=library,
        finalists=[winner, second, library],
        interleaved={
            7: RatioEstimate(5.11, 5.0, 5.2, 2),
            8: RatioEstimate(5.5, 5.4, 5.6, 2),
            1: RatioEstimate(1.0, 1.0, 1.0, 2),
        },
        second_timer={7: {"timer": timer, "ratio": 5.99, "events_ratio": 5.11, "rounds": 2, "agrees": False}},
    )


def _text(report: ShapeReport) -> str:
    out = io.StringIO()
    Console(file=out, width=250, color_system=None).print(finalists_table(report))
    return out.getvalue()


def test_kernel_time_leads_where_the_profiler_timed_a_finalist() -> None:
    report = _report(PROFILER)
    assert report.headline(report.winner) == (5.99, "CUPTI")
    assert report.headline(report.finalists[1]) == (5.5, "events")  # no profiler round: its events' ratio
    assert report.headline(report.reference) == (1.0, "reference")
    assert report.speedup_over(report.baselines[0]) == 1 / 5.99  # "torch.matmul is 5.99× faster", not 5.11
    # Two finalists led by different timers are compared on one timer: the events'.
    assert report.speedup_over(report.finalists[1]) == 5.5 / 5.11
    text = _text(report)
    assert (
        "time ratio to torch.matmul, by kernel time (CUPTI)" in text and "the same by CUDA events, interleaved" in text
    )
    winner_row = next(line for line in text.splitlines() if "BLOCK_M=16" in line)
    assert "5.9900" in winner_row and "5.1100 [5.000, 5.200] (>1% apart)" in winner_row
    assert "5.5000 [5.400, 5.600] (events)" in next(line for line in text.splitlines() if "BLOCK_M=32" in line)


def test_a_host_clock_checks_the_events_and_never_leads() -> None:
    report = _report(HOST_CLOCK)
    assert report.headline(report.winner) == (5.11, "events")
    assert report.speedup_over(report.baselines[0]) == 1 / 5.11
    text = _text(report)
    assert "time ratio to torch.matmul, interleaved" in text and "the same by host clock" in text
    assert "by kernel time" not in text


def test_the_shape_table_names_a_speedup_and_the_finalists_a_time_ratio() -> None:
    # The winner's time ratio to torch.matmul is 5.99: a speedup column printing a bare 0.17 beside the finalists'
    # 5.99 would read as two contradicting figures. One is a named speedup, the other a named time ratio.
    out = io.StringIO()
    Console(file=out, width=250, color_system=None).print(shape_table(RUN, _report(PROFILER)))
    library_row = next(line for line in out.getvalue().splitlines() if "baseline: torch.matmul" in line)
    assert "5.99x slower" in library_row and "0.17" not in library_row
    assert "time ratio to torch.matmul" in _text(_report(PROFILER))


def test_the_json_report_gives_each_finalist_its_headline_ratio_and_timer() -> None:
    rows = report_json(RunReport(RUN, [_report(PROFILER)]))["shapes"][0]["finalists"]
    assert [r["ratio"] for r in rows] == [
        {"value": 5.99, "timer": "CUPTI"},
        {"value": 5.5, "timer": "events"},
        {"value": 1.0, "timer": "reference"},
    ]
    assert rows[0]["interleaved_ratio"]["ratio"] == 5.11  # the events' figure kept beside it
    plain = dataclasses.replace(_report(PROFILER), second_timer={})
    assert plain.headline(plain.winner) == (5.11, "events")


def test_the_json_report_names_the_runners_up_by_search_median() -> None:
    # A short budget confirms few finalists: the runners-up are what came close in the search, fastest first,
    # the winner, baselines and screening rungs left out.
    def searched(cid: int, block: int, ms: float, role: str = "search") -> Candidate:
        m = Measurement((ms,) * 5, Conditions("events"))
        return Candidate(SHAPE, Config.of({"BLOCK_M": block}), role=role, status="ok", id=cid, measurement=m)

    pool = [searched(7, 16, 0.10), searched(9, 64, 0.30), searched(10, 128, 0.20), searched(11, 256, 0.05, "screen")]
    report = dataclasses.replace(_report(PROFILER), all_candidates=[*pool, *_report(PROFILER).baselines])
    assert [c.id for c in report.runners_up()] == [10, 9]
    rows = report_json(RunReport(RUN, [report]))["shapes"][0]["runners_up"]
    assert rows == [
        {"id": 10, "config": {"BLOCK_M": 128}, "search_median_ms": 0.2},
        {"id": 9, "config": {"BLOCK_M": 64}, "search_median_ms": 0.3},
    ]


def test_each_timers_ratio_is_shown_with_the_clock_it_ran_at() -> None:
    # As at bf16 8192³ on the H200: the events' pass read 0.990 at 1800–1965 MHz, the profiler's sustained pairs
    # 0.980 at 1500 MHz; the two clocks beside the ratios say why they differ.
    report = _report(PROFILER)
    confirmed = Measurement((0.1,) * 5, Conditions("events", telemetry={"sm_mhz_min": 1800, "sm_mhz_max": 1965}))
    winner = dataclasses.replace(report.winner, confirmed=confirmed)
    report = dataclasses.replace(
        report,
        winner=winner,
        finalists=[winner, *report.finalists[1:]],
        second_timer={7: {**report.second_timer[7], "sm_mhz_range": [1500, 1500]}},
    )
    row = next(line for line in _text(report).splitlines() if "BLOCK_M=16" in line)
    assert "5.9900 at 1500 MHz" in row and "5.1100 [5.000, 5.200] at 1800–1965 MHz (>1% apart)" in row
