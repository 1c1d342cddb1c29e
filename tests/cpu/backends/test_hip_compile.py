"""HIP on the CPU machine (compile side only: no AMD GPU is reachable here): examples/hip_reduction compiled for an
AMD target by hipcc (Debian's package in CI; hiprtc where a ROCm runtime exists), its VGPRs, SGPRs, LDS and scratch
read from the assembly and checked against the compiler's own resource remarks for the same config; compile
errors carry the compiler's log; a missing kernel name lists the kernels there are; a config needing MFMA is
refused on an RDNA target as a capability, before compiling; the binary cache."""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from kerntune.backends.hip_compile import compile_hsaco, hipcc_path, inspect_hip, kernel_assembly
from kerntune.errors import CandidateFailed
from kerntune.model import HipKernel
from tests.conftest import EXAMPLES, CliResult

pytestmark = pytest.mark.skipif(hipcc_path() is None, reason="needs hipcc (apt-get install hipcc, or ROCm)")
CONFIG = {"BLOCK": 256, "VEC": 4, "ITEMS": 8}
SCALE = 'extern "C" __global__ void scale(float* x) { x[threadIdx.x] *= SCALE_BY; }'


def _remarks(source: str, arch: str, tmp_path: Path) -> dict[str, int]:
    """The compiler's own report (-Rpass-analysis=kernel-resource-usage) for CONFIG: the analogue of ptxas -v."""
    path = tmp_path / "k.hip"
    path.write_text(source)
    hipcc = hipcc_path()
    assert hipcc is not None
    done = subprocess.run(
        [
            hipcc,
            "--cuda-device-only",
            "-c",
            "-include",
            "hip/hip_runtime.h",
            f"--offload-arch={arch}",
            "-O3",
            "-std=c++17",
            *(f"-D{k}={v}" for k, v in CONFIG.items()),
            "-Rpass-analysis=kernel-resource-usage",
            "-o",
            str(tmp_path / "k.o"),
            str(path),
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "HIP_PLATFORM": "amd"},
        check=True,
    )
    found = {
        name: int(value) for name, value in re.findall(r"remark:\s+([A-Za-z ]+?)(?: \[[^\]]*\])?: (\d+)", done.stderr)
    }
    assert "VGPRs" in found, done.stderr
    return found


def test_inspect_reads_what_the_compiler_reports(kerntune: Callable[..., CliResult], tmp_path: Path) -> None:
    config = ",".join(f"{k}={v}" for k, v in CONFIG.items())
    result = kerntune(
        "inspect",
        str(EXAMPLES / "hip_reduction"),
        "--target",
        "gfx90a",
        "--target",
        "sm_90",
        "--config",
        config,
        "--json",
    )
    assert result.code == 2  # sm_90 does not build a HIP kernel
    rows = {r["target"]: r for r in result.json()}
    assert "AMD targets only" in rows["sm_90"]["error"]
    resources = rows["gfx90a"]["resources"]
    import importlib.util

    found = importlib.util.spec_from_file_location("hip_spec", EXAMPLES / "hip_reduction" / "spec.py")
    assert found is not None and found.loader is not None
    spec = importlib.util.module_from_spec(found)
    found.loader.exec_module(spec)
    remarks = _remarks(spec.SOURCE, "gfx90a", tmp_path)
    assert resources["vgprs"] == remarks["VGPRs"] and resources["agprs"] == remarks["AGPRs"]
    assert resources["sgprs"] == remarks["SGPRs"]
    assert resources["lds_bytes"] == remarks["LDS Size"] and resources["scratch_bytes"] == remarks["ScratchSize"]
    assert resources["wavefront"] == 64 and resources["num_warps"] == 4  # 256 threads in wavefronts of 64
    assert rows["gfx90a"]["occupancy"]["waves_per_simd"] == min(8, remarks["Occupancy"])


def test_errors_are_named_and_capabilities_refused_before_compiling(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KERNTUNE_BINARY_CACHE", str(tmp_path))
    broken = HipKernel(
        source='extern "C" __global__ void k(float* x) { x[0] = nope; }',
        name="k",
        grid=lambda m: (1,),
        block=lambda m: (64,),
    )
    with pytest.raises(CandidateFailed) as failed:
        compile_hsaco(broken, {"SCALE_BY": 2}, "gfx90a")
    assert failed.value.kind == "compile" and "nope" in failed.value.reason and "undeclared" in failed.value.reason
    assert "warning:" not in failed.value.reason

    kernel = HipKernel(source=SCALE, name="scale", grid=lambda m: (1,), block=lambda m: (64,))
    first = compile_hsaco(kernel, {"SCALE_BY": 2}, "gfx90a")
    assert first.compiler in ("hipcc", "hiprtc") and first.compile_s > 0 and first.code
    again = compile_hsaco(kernel, {"SCALE_BY": 2}, "gfx90a")
    assert again.hash == first.hash and again.compile_s == 0.0  # from the cache
    assert compile_hsaco(kernel, {"SCALE_BY": 3}, "gfx90a").hash != first.hash

    missing = HipKernel(source=SCALE, name="scales", grid=lambda m: (1,), block=lambda m: (64,))
    with pytest.raises(CandidateFailed, match=r"no kernel 'scales' \(kernels: scale\)"):
        inspect_hip(missing, {"SCALE_BY": 2}, {"SCALE_BY": 2}, "gfx90a")
    with pytest.raises(CandidateFailed, match="kernels: none"):
        kernel_assembly("\t.text\n", "scale")

    needs_mfma = HipKernel(
        source=SCALE, name="scale", grid=lambda m: (1,), block=lambda m: (64,), requires=lambda m: ["mfma"]
    )
    with pytest.raises(CandidateFailed) as refused:
        compile_hsaco(needs_mfma, {"SCALE_BY": 2}, "gfx1100")
    assert refused.value.kind == "unsupported" and "mfma" in refused.value.reason
    assert compile_hsaco(needs_mfma, {"SCALE_BY": 2}, "gfx90a").code  # CDNA2 has MFMA: it compiles
