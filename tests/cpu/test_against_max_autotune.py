"""benchmarks/time-budget/against_max_autotune.py without a GPU: its record of Inductor's coordinate-descent results
(the tuner's "Improve from" lines are kept, its other debug lines are not, and its logger is left as it was), and the
budget that matches max-autotune's own tuning time."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import benchmark_script, load_benchmark

pytest.importorskip("torch")
against = load_benchmark("against_max_autotune")


def test_the_tuners_settled_config_is_kept_and_its_logger_restored() -> None:
    logger = logging.getLogger(against.COORDINATE_DESCENT_LOG)
    before = (logger.level, logger.propagate, list(logger.handlers))
    with against.coordinate_descent_record() as found:
        logger.debug("Try config %s", "XBLOCK: 2, R0_BLOCK: 2048")
        logger.debug(
            "%s: Improve from %s %f -> %s %f, %.3fx",
            "triton_red_fused_mm_0",
            "XBLOCK: 1, R0_BLOCK: 2048, num_warps: 16",
            0.0200,
            "XBLOCK: 4, R0_BLOCK: 1024, num_warps: 8",
            0.0160,
            1.25,
        )
    assert found == [
        "triton_red_fused_mm_0: Improve from XBLOCK: 1, R0_BLOCK: 2048, num_warps: 16 0.020000 -> "
        "XBLOCK: 4, R0_BLOCK: 1024, num_warps: 8 0.016000, 1.250x"
    ]
    assert (logger.level, logger.propagate, list(logger.handlers)) == before


def test_the_matched_budget_is_max_autotunes_mean_time_a_shape_rounded_down() -> None:
    summary = {"summary": {"max_autotune_tuning_s": [7.95, 8.44, 12.6, 13.31]}}  # mean 10.575
    assert against.matched_budget(summary) == "10.5s/shape"  # never more time than max-autotune took
    for bad in ([], [3.0, 0.0]):
        with pytest.raises(ValueError, match="no positive"):
            against.matched_budget({"summary": {"max_autotune_tuning_s": bad}})


def test_bad_arguments_are_one_line_and_exit_2(tmp_path: Path) -> None:
    script = benchmark_script("against_max_autotune")
    for args in (
        [],
        ["--matched-budget"],
        [str(tmp_path / "none.json"), str(tmp_path / "out.json")],
        ["--matched-budget", str(tmp_path / "none.json")],
    ):
        done = subprocess.run(
            [sys.executable, str(script), *args],
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "inductor")},
        )
        assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, (args, done.stderr)
