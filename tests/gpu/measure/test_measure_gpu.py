"""The measurement protocol's GPU parts: NVML telemetry, CUDA-graph mode with launch overhead apart, the
rotating regime, and ``kerntune ab`` calling a planted 3% slowdown (run on the H200; skipped without a GPU)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.conftest import ROOT, CliResult, has_gpu

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not has_gpu(), reason="needs a CUDA or ROCm GPU")]
PLANTED = ROOT / "benchmarks" / "specs" / "planted_matmul"


def test_telemetry_and_graph_mode_with_launch_overhead_apart() -> None:
    import torch

    from kerntune.backends.torch import TorchBackend
    from kerntune.measure.protocol import MeasureOptions, measure

    backend = TorchBackend("cuda")
    telemetry = backend.telemetry()
    reading = telemetry.read()
    assert telemetry.available, reading
    assert reading["sm_mhz"] > 0 and reading["mem_mhz"] > 0 and reading["power_w"] > 0
    x = torch.randn(1 << 14, device="cuda")
    y = torch.empty_like(x)

    def tiny() -> None:
        torch.mul(x, 2.0, out=y)

    eager = measure(backend, [tiny], MeasureOptions(regime="warm"), telemetry)
    graph = measure(backend, [tiny], MeasureOptions(regime="warm", mode="graph"), telemetry)
    assert graph.conditions.mode == "graph" and eager.conditions.mode == "eager"
    assert graph.conditions.launch_overhead_ms is not None and graph.conditions.launch_overhead_ms >= 0
    assert eager.conditions.launch_overhead_ms is None
    # A replay's per-launch time has no event pair around each launch: it cannot exceed an eager sample.
    assert graph.median_ms <= eager.median_ms * 1.05
    tel = graph.conditions.telemetry or {}
    assert tel["available"] and tel["sm_mhz_max"] >= tel["sm_mhz_min"] > 0
    assert isinstance(tel["throttled"], bool) and isinstance(tel["reasons"], list)
    assert torch.equal(y, x * 2.0)


def test_a_slow_host_does_not_inflate_device_time() -> None:
    import time

    import torch

    from kerntune.backends.torch import TorchBackend
    from kerntune.measure.protocol import MeasureOptions, measure

    backend = TorchBackend("cuda")
    x = torch.randn(1 << 14, device="cuda")
    y = torch.empty_like(x)

    def fast() -> None:
        torch.mul(x, 2.0, out=y)

    def slow() -> None:  # a launch path 300 µs slower than the kernel, as under a crowded CPU
        time.sleep(0.0003)
        torch.mul(x, 2.0, out=y)

    options = MeasureOptions(regime="warm", warmup_ms=20, budget_ms=300)
    quick, crowded = measure(backend, [fast], options), measure(backend, [slow], options)
    # Without the stream hold the device waited ~0.3 ms on the host inside every sample of ``slow``.
    assert crowded.median_ms < 0.05, crowded.median_ms
    assert crowded.median_ms <= 1.5 * quick.median_ms + 0.002
    assert backend.uncovered_chunks == 0


def test_rotating_regime_cycles_inputs_larger_than_l2(kerntune: Callable[..., CliResult]) -> None:
    result = kerntune(
        "tune",
        str(ROOT / "kernels" / "triton_rmsnorm"),
        "--budget",
        "2",
        "--json",
        env={"KERNTUNE_REGIME": "rotating", "KERNTUNE_FINALISTS": "0"},
    )
    assert result.code == 0, result.stderr
    conditions = result.json()["shapes"][0]["winner"]["measurement"]["conditions"]
    assert conditions["regime"] == "rotating"
    assert conditions["flush_bytes"] == 0 and conditions["cache_bytes"] > 0


def test_ab_calls_a_planted_three_percent_slowdown_a_loss(kerntune: Callable[..., CliResult]) -> None:
    result = kerntune(
        "ab",
        "--spec",
        str(PLANTED),
        "@EXTRA=0",
        "@EXTRA=2",
        "--expect",
        "loss",
        "--json",
        env={
            "KERNTUNE_WARMUP_MS": "100",
            "KERNTUNE_SAMPLE_BUDGET_MS": "1000",
            "KERNTUNE_MIN_SAMPLES": "10",
            "KERNTUNE_MAX_SAMPLES": "200",
        },
    )
    assert result.code == 0, result.stdout[-2000:] + result.stderr[-2000:]
    data = result.json()
    assert data["verdict"] == "loss" and data["scheme"] == "in-process"
    assert 1.01 < data["ratio"] < 1.06
    assert data["hashes"]["A"]["binaries"] != data["hashes"]["B"]["binaries"]
