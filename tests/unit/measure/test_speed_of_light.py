from __future__ import annotations

import pytest

from kerntune.measure.speed_of_light import speed_of_light

CEILINGS = {"fma_flops_per_s": 1e12, "copy_bytes_per_s": 1e11, "launch_latency_ms": 0.005}  # ridge: 10 FLOP/B


def test_a_copy_at_the_bandwidth_is_at_the_roofline_and_memory_bound() -> None:
    sol = speed_of_light({"flops": 0.0, "bytes": 1e9}, 10.0, CEILINGS)  # 1 GB in 10 ms = 100 GB/s
    assert sol["bound"] == "memory" and sol["roofline_fraction"] == pytest.approx(1.0)


def test_high_intensity_is_compute_bound_and_fractions_scale_with_time() -> None:
    sol = speed_of_light({"flops": 1e10, "bytes": 1e8}, 20.0, CEILINGS)  # 100 FLOP/B; 10 ms at the FMA rate
    assert sol["bound"] == "compute" and sol["roofline_fraction"] == pytest.approx(0.5)
    assert sol["flops_per_s"] == pytest.approx(5e11) and sol["memory_fraction"] == pytest.approx(0.05)


def test_work_too_small_to_reach_either_ceiling_is_latency_bound() -> None:
    assert speed_of_light({"flops": 1e3, "bytes": 1e3}, 0.004, CEILINGS)["bound"] == "latency"


def test_matrix_work_is_held_to_the_matrix_rate_of_its_dtype() -> None:
    ceilings = {**CEILINGS, "matrix_flops_per_s": {"bfloat16": 1e13}}
    sol = speed_of_light({"flops": 1e10, "bytes": 1e7, "matrix": "bfloat16"}, 2.0, ceilings)  # 1 ms at 10 TFLOP/s
    assert sol["compute_ceiling"] == "bfloat16 matrix" and sol["roofline_fraction"] == pytest.approx(0.5)
    assert sol["bound"] == "compute" and sol["compute_fraction"] == pytest.approx(0.5)
    fallback = speed_of_light({"flops": 1e10, "bytes": 1e8, "matrix": "float16"}, 20.0, ceilings)
    assert fallback["compute_ceiling"] == "FMA" and fallback["roofline_fraction"] == pytest.approx(0.5)


def test_the_bandwidth_ceiling_is_the_best_probe() -> None:
    from kerntune.measure.speed_of_light import memory_ceiling

    # The H200's calibration of 2026-12-01: copy 3.96 TB/s, triad 4.28 TB/s; a fraction of copy alone would
    # read 108% for a kernel that streams at the triad's rate.
    h200 = {**CEILINGS, "copy_bytes_per_s": 3.96e12, "triad_bytes_per_s": 4.28e12}
    assert memory_ceiling(h200) == (4.28e12, "triad")
    sol = speed_of_light({"flops": 0.0, "bytes": 4.28e9}, 1.0, h200)
    assert sol["memory_fraction"] == pytest.approx(1.0) and sol["memory_ceiling"] == "triad"
