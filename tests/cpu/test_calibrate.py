"""`kerntune calibrate` on PoCL's CPU device: measured ceilings, the 7-day cache, and the device lock."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from filelock import FileLock

from tests.conftest import EXAMPLES, CliResult

pytest.importorskip("pyopencl")


def test_calibrate_measures_once_then_serves_the_cache_until_forced(kerntune: Callable[..., CliResult]) -> None:
    first = kerntune("calibrate", "--json")
    assert first.code == 0, first.stderr
    measured = first.json()
    assert measured["cached"] is False
    assert measured["copy_bytes_per_s"] > 1e8 and measured["triad_bytes_per_s"] > 1e8
    assert measured["fma_flops_per_s"] > 1e8 and 0 < measured["launch_latency_ms"] < 100
    assert measured["ridge_flops_per_byte"] == pytest.approx(measured["fma_flops_per_s"] / measured["copy_bytes_per_s"])
    again = kerntune("calibrate", "--json").json()
    assert again["cached"] is True and again["created"] == measured["created"]
    forced = kerntune("calibrate", "--force", "--json").json()
    assert forced["cached"] is False and forced["created"] > measured["created"]


def test_a_device_being_calibrated_elsewhere_is_refused_when_asked_not_to_wait(
        kerntune: Callable[..., CliResult], tmp_path: Path) -> None:
    key = kerntune("calibrate", "--json").json()["device_key"]
    lock_dir = tmp_path / "store" / "locks"
    with FileLock(str(lock_dir / f"device-{key}.lock")):  # another kerntune, as far as this one can tell
        refused = kerntune("calibrate", "--force", env={"KERNTUNE_LOCK_TIMEOUT_S": "0"})
    assert refused.code == 2 and "another kerntune holds" in refused.stderr


def test_with_a_calibration_the_report_has_the_speed_of_light_and_the_search_stops_near_it(
        kerntune: Callable[..., CliResult]) -> None:
    assert kerntune("calibrate").code == 0
    # A low threshold: a CPU shared with other work (CI, a second test run) can halve the vector add's
    # bandwidth against a calibration measured a minute earlier; the rule's mechanics are what is checked.
    result = kerntune("tune", str(EXAMPLES / "opencl_vector_add"), "--shape", "N=4194304", "--json",
                      env={"KERNTUNE_SOL_STOP": "0.25"})
    assert result.code == 0, result.stderr
    report = result.json()
    assert report["run"]["stop_reason"].startswith("near the hardware limit: ")
    sol = report["shapes"][0]["speed_of_light"]
    assert sol["bound"] == "memory" and sol["roofline_fraction"] >= 0.25
    assert sol["roofline_fraction"] == pytest.approx(sol["copy_fraction"])
