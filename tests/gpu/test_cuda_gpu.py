"""The CUDA C++ backend on a real NVIDIA GPU: examples/cuda_matmul and cuda_reduction tune, pass the gate beside
their torch baselines, and the winner's registers and shared memory equal `nvcc -Xptxas -v` for its config."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES, CliResult, has_gpu

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not has_gpu(), reason="needs a CUDA GPU")]


@pytest.mark.parametrize("example, shape", [("cuda_matmul", "M=1024,N=1024,K=1024"), ("cuda_reduction", "N=16777216")])
def test_cuda_examples_tune_gate_and_match_ptxas(kerntune: Callable[..., CliResult], tmp_path: Path,
                                                 example: str, shape: str) -> None:
    result = kerntune("tune", str(EXAMPLES / example), "--shape", shape, "--strategy", "random", "--budget", "12",
                      "--json", env={"KERNTUNE_CONFIRM_ROUNDS": "0"})
    assert result.code == 0, result.stderr
    report = result.json()["shapes"][0]
    winner = report["winner"]
    print(example, {"winner": winner["config"], "median_ms": winner["measurement"]["median_ms"],
                    "resources": winner["resources"],
                    "baselines": {b["label"]: b["measurement"]["median_ms"] for b in report["baselines"]
                                  if b.get("measurement")}})
    assert winner["gate"]["outcome"] == "pass" and winner["measurement"]["conditions"]["timer"] == "cuda-events"
    assert all(b["status"] == "ok" for b in report["baselines"])
    if shutil.which("nvcc") is None:
        pytest.skip("no nvcc to compare the winner's resources with")
    sys.path.insert(0, str(EXAMPLES / example))
    try:
        import spec
        source = spec.SOURCE
    finally:
        sys.path.pop(0)
        sys.modules.pop("spec", None)
    cu = tmp_path / "k.cu"
    cu.write_text(source)
    arch = winner["resources"]["arch"]
    defines = [f"-D{k}={v}" for k, v in winner["config"].items()]
    done = subprocess.run(["nvcc", "-cubin", f"-arch={arch}", *defines, "-Xptxas", "-v", "-o", str(tmp_path / "k.o"),
                           str(cu)], capture_output=True, text=True, check=True)
    found = re.search(r"Used (\d+) registers.*?(\d+) bytes smem", done.stderr)
    assert found, done.stderr
    print("ptxas -v:", found.group(0))
    assert winner["resources"]["static_shared_bytes"] == int(found.group(2))
    assert abs(winner["resources"]["registers"] - int(found.group(1))) <= 8  # NVRTC and nvcc releases may differ
