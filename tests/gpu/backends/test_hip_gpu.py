"""The HIP backend on a real AMD GPU, the contract of tests/gpu/backends/test_cuda_gpu.py: examples/hip_reduction
tunes and passes the gate beside torch.sum, and the winner's VGPRs and LDS are read. Runs only where torch is a ROCm
build with a GPU; no such machine is reachable from this project, so this test has not run yet (said in the
README)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.conftest import EXAMPLES, CliResult, has_gpu


def _rocm_gpu() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return has_gpu() and bool(getattr(torch.version, "hip", None))


pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not _rocm_gpu(), reason="needs an AMD GPU with ROCm torch")]


def test_hip_reduction_tunes_and_gates(kerntune: Callable[..., CliResult]) -> None:
    result = kerntune(
        "tune",
        str(EXAMPLES / "hip_reduction"),
        "--shape",
        "N=16777216",
        "--strategy",
        "random",
        "--budget",
        "12",
        "--json",
        env={"KERNTUNE_CONFIRM_ROUNDS": "0"},
    )
    assert result.code == 0, result.stderr
    report = result.json()["shapes"][0]
    winner = report["winner"]
    assert winner["gate"]["outcome"] == "pass" and all(b["status"] == "ok" for b in report["baselines"])
    assert winner["resources"]["vgprs"] > 0 and winner["resources"]["wavefront"] in (32, 64)
