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
    probes = {name: measured[f"{name}_bytes_per_s"] for name in ("copy", "triad", "read")}
    assert min(probes.values()) > 1e8, probes
    assert measured["fma_flops_per_s"] > 1e8 and 0 < measured["launch_latency_ms"] < 100
    best = max(probes, key=probes.__getitem__)  # the bandwidth ceiling: the best probe, named
    assert measured["memory_probe"] == best and measured["memory_bytes_per_s"] == probes[best]
    assert measured["ridge_flops_per_byte"] == pytest.approx(measured["fma_flops_per_s"] / probes[best])
    assert set(measured["details"]["stream_configs"]) == {"copy", "triad", "read"}  # each probe at its own best
    again = kerntune("calibrate", "--json").json()
    assert again["cached"] is True and again["created"] == measured["created"]
    forced = kerntune("calibrate", "--force", "--json").json()
    assert forced["cached"] is False and forced["created"] > measured["created"]


def test_a_device_being_calibrated_elsewhere_is_refused_when_asked_not_to_wait(
    kerntune: Callable[..., CliResult], tmp_path: Path
) -> None:
    key = kerntune("calibrate", "--json").json()["device_key"]
    lock_dir = tmp_path / "store" / "locks"
    with FileLock(str(lock_dir / f"device-{key}.lock")):  # another kerntune, as far as this one can tell
        refused = kerntune("calibrate", "--force", env={"KERNTUNE_LOCK_TIMEOUT_S": "0"})
    assert refused.code == 2 and "another kerntune holds" in refused.stderr


def test_with_a_calibration_the_report_has_the_speed_of_light_and_the_search_stops_near_it(
    kerntune: Callable[..., CliResult],
) -> None:
    assert kerntune("calibrate").code == 0
    # A low threshold: a CPU shared with other work (CI, a second test run) can halve the vector add's
    # bandwidth against a calibration measured a minute earlier; the rule's mechanics are what is checked.
    result = kerntune(
        "tune", str(EXAMPLES / "opencl_vector_add"), "--shape", "N=4194304", "--json", env={"KERNTUNE_SOL_STOP": "0.25"}
    )
    assert result.code == 0, result.stderr
    report = result.json()
    assert report["run"]["stop_reason"].startswith("near the hardware limit: ")
    sol = report["shapes"][0]["speed_of_light"]
    assert sol["bound"] == "memory" and sol["roofline_fraction"] >= 0.25
    assert sol["roofline_fraction"] == pytest.approx(sol["memory_fraction"])


@pytest.mark.parametrize("suffix", [".svg", ".png"])
def test_roofline_draws_the_stored_candidates_against_the_calibration(
    kerntune: Callable[..., CliResult], tmp_path: Path, suffix: str
) -> None:
    pytest.importorskip("matplotlib")
    assert kerntune("roofline", "last").code == 2  # no run yet: a clear error, not a traceback
    assert kerntune("calibrate").code == 0
    tuned = kerntune(
        "tune",
        str(EXAMPLES / "opencl_vector_add"),
        "--shape",
        "N=1048576",
        "--budget",
        "4",
        "--json",
        env={"KERNTUNE_SOL_STOP": "0"},
    )
    assert tuned.code == 0, tuned.stderr
    report = tuned.json()
    chart = tmp_path / f"roofline{suffix}"
    drawn = kerntune("roofline", "last", "-o", str(chart), "--json")
    assert drawn.code == 0, drawn.stderr
    data = drawn.json()
    head = chart.read_bytes()[:512]
    assert head.startswith(b"\x89PNG") if suffix == ".png" else b"<svg" in head
    # Every plotted point is a stored median (confirmed where there is one) at the shape's intensity (1 FLOP
    # per 12 bytes).
    shape = report["shapes"][0]
    winner = next(p for p in data["points"] if p["winner"])
    stored = shape["winner"].get("confirmed") or shape["winner"]["measurement"]
    assert winner["median_ms"] == pytest.approx(stored["median_ms"])
    assert all(p["intensity"] == pytest.approx(1 / 12) for p in data["points"])
    assert winner["flops_per_s"] == pytest.approx(1048576 / (winner["median_ms"] * 1e-3))
    assert len(data["points"]) == shape["outcomes"]["timed"] + len(shape["baselines"])


def test_roofline_refuses_a_run_without_a_calibration_and_an_unknown_format(
    kerntune: Callable[..., CliResult], tmp_path: Path
) -> None:
    assert kerntune("tune", str(EXAMPLES / "opencl_vector_add"), "--shape", "N=65536", "--budget", "2").code == 0
    missing = kerntune("roofline", "last", "-o", str(tmp_path / "r.svg"))
    assert missing.code == 2 and "no calibration recorded" in missing.stderr
    wrong = kerntune("roofline", "last", "-o", str(tmp_path / "r.pdf"))
    assert wrong.code == 2 and "PNG or SVG" in wrong.stderr


def test_profile_refuses_a_device_without_a_counter_profiler(kerntune: Callable[..., CliResult]) -> None:
    assert kerntune("tune", str(EXAMPLES / "opencl_vector_add"), "--shape", "N=65536", "--budget", "2").code == 0
    refused = kerntune("profile", "last")
    assert refused.code == 2 and "no hardware-counter profiler for vendor" in refused.stderr, refused.stderr
