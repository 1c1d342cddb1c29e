"""CUDA C++ on the CPU machine: examples/cuda_matmul and cuda_reduction compiled for NVIDIA targets (NVRTC through
cuda.core, or nvcc), their registers and shared memory read from the cubin and checked against `nvcc -Xptxas
-v` for the same config; compile errors carry the compiler's log; template instances; the cubin cache."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from kerntune.errors import CandidateFailed
from kerntune.model import CudaKernel
from tests.conftest import DATA, EXAMPLES, CliResult

CONFIG = {"TILE": 64, "WPT": 8, "VEC": 4, "UNROLL": 16}
needs_a_compiler = pytest.mark.skipif(
    shutil.which("nvcc") is None and not __import__("importlib").util.find_spec("cuda.core"),
    reason="needs nvcc or cuda.core with NVRTC",
)


def _matmul_source() -> str:
    sys.path.insert(0, str(EXAMPLES / "cuda_matmul"))
    try:
        import spec

        return str(spec.SOURCE)
    finally:
        sys.path.pop(0)
        sys.modules.pop("spec", None)


def _ptxas_v(source: str, arch: str, tmp_path: Path) -> tuple[int, int]:
    """(registers, static shared bytes) as ptxas reports them for the config."""
    cu = tmp_path / "k.cu"
    cu.write_text(source)
    defines = [f"-D{k}={v}" for k, v in CONFIG.items()]
    cubin = str(tmp_path / "k.cubin")
    done = subprocess.run(
        ["nvcc", "-cubin", f"-arch={arch}", *defines, "-Xptxas", "-v", "-o", cubin, str(cu)],
        capture_output=True,
        text=True,
        check=True,
    )
    found = re.search(r"Used (\d+) registers.*?(\d+) bytes smem", done.stderr)
    assert found, done.stderr
    return int(found.group(1)), int(found.group(2))


@needs_a_compiler
@pytest.mark.parametrize("arch", ["sm_90", "sm_80"])
def test_inspect_reads_what_ptxas_reports(kerntune: Callable[..., CliResult], tmp_path: Path, arch: str) -> None:
    config = ",".join(f"{k}={v}" for k, v in CONFIG.items())
    result = kerntune("inspect", str(EXAMPLES / "cuda_matmul"), "--target", arch, "--config", config, "--json")
    assert result.code == 0, result.stderr
    (row,) = result.json()
    resources = row["resources"]
    assert resources["static_shared_bytes"] == 4 * (64 * 65 + 64 * 64)  # As[64][65] and Bs[64][64]
    assert resources["num_warps"] == 4 and row["census"]["FFMA"] > 0 and row["spills"] == 0
    assert row["occupancy"]["limiter"] in ("registers", "shared memory")
    if shutil.which("nvcc") is None:
        pytest.skip("no nvcc to compare with")
    registers, smem = _ptxas_v(_matmul_source(), arch, tmp_path)
    assert resources["static_shared_bytes"] == smem
    if row["compiler"] == "nvcc":
        assert resources["registers"] == registers
    else:  # NVRTC and nvcc may be different releases here; same release: same registers
        assert abs(resources["registers"] - registers) <= 8, (resources["registers"], registers)


@needs_a_compiler
def test_an_amd_target_and_a_broken_kernel_are_named_errors(kerntune: Callable[..., CliResult]) -> None:
    result = kerntune("inspect", str(EXAMPLES / "cuda_reduction"), "--target", "sm_90", "--target", "gfx942", "--json")
    assert result.code == 2
    rows = {r["target"]: r for r in result.json()}
    assert rows["sm_90"]["resources"]["registers"] > 0 and "error" not in rows["sm_90"]
    assert "NVIDIA targets only" in rows["gfx942"]["error"]

    from kerntune.backends.cuda_compile import compile_cubin

    broken = CudaKernel(
        source='extern "C" __global__ void k(float* x) { x[0] = nope; }',
        name="k",
        grid=lambda m: (1,),
        block=lambda m: (32,),
    )
    with pytest.raises(CandidateFailed) as failed:
        compile_cubin(broken, {"TILE": 1}, "sm_90")
    assert failed.value.kind == "compile" and "nope" in failed.value.reason and "is undefined" in failed.value.reason


@needs_a_compiler
def test_bad_cuda_input_is_named_per_config(kerntune: Callable[..., CliResult]) -> None:
    """tests/data/cuda_bad: a config that does not compile carries the compiler's own message (no NUL bytes), a
    block over 1,024 threads fits no multiprocessor, a kernel name the source lacks lists the ones it has."""
    bad = str(DATA / "cuda_bad")
    rows = {}
    for config in ("BLOCK=128", "BLOCK=512", "BLOCK=2048"):
        result = kerntune("inspect", bad, "--target", "sm_90", "--config", config, "--json")
        rows[config] = (result.code, result.json()[0])
    assert rows["BLOCK=128"][0] == 0 and rows["BLOCK=128"][1]["occupancy"]["blocks_per_sm"] == 16
    code, failed = rows["BLOCK=512"]
    assert code == 2 and "BLOCK=512 is refused on purpose" in failed["error"] and "\x00" not in failed["error"]
    occupancy = rows["BLOCK=2048"][1]["occupancy"]
    assert (occupancy["blocks_per_sm"], occupancy["limiter"]) == (0, "threads per block")
    result = kerntune(
        "inspect",
        bad,
        "--target",
        "sm_90",
        "--config",
        "BLOCK=128",
        "--json",
        env={"KERNTUNE_TEST_KERNEL_NAME": "nope"},
    )
    assert result.code == 2 and "no kernel 'nope'" in result.json()[0]["error"]
    assert "(functions: scale)" in result.json()[0]["error"]


def test_template_instances_and_the_cubin_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("cuda.core")
    from kerntune.backends.cuda_compile import compile_cubin, inspect_cuda

    monkeypatch.setenv("KERNTUNE_BINARY_CACHE", str(tmp_path))
    kernel = CudaKernel(
        source="template <int N> __global__ void scale(float* x) { x[threadIdx.x] *= N; }",
        name="scale",
        template="scale<{N}>",
        grid=lambda m: (1,),
        block=lambda m: (m["T"],),
    )
    first = compile_cubin(kernel, {"N": 3}, "sm_90")
    assert first.symbol.startswith("_Z") and first.compiler == "nvrtc" and first.compile_s > 0
    again = compile_cubin(kernel, {"N": 3}, "sm_90")
    assert again.hash == first.hash and again.compile_s == 0.0 and again.symbol == first.symbol  # from the cache
    assert compile_cubin(kernel, {"N": 4}, "sm_90").hash != first.hash
    _, found = inspect_cuda(kernel, {"N": 3, "T": 128}, {"N": 3}, "sm_90")
    assert found.resources["registers"] > 0 and found.resources["num_warps"] == 4


def test_without_cuda_core_nvcc_compiles_and_its_registers_match_ptxas(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if shutil.which("nvcc") is None:
        pytest.skip("no nvcc here")
    from kerntune.backends.cuda_compile import inspect_cuda

    monkeypatch.setitem(sys.modules, "cuda.core", None)  # import fails: the nvcc path
    monkeypatch.setenv("KERNTUNE_BINARY_CACHE", str(tmp_path / "cache"))
    kernel = CudaKernel(source=_matmul_source(), name="matmul", grid=lambda m: (1,), block=lambda m: (16, 8))
    binary, found = inspect_cuda(kernel, {**CONFIG, "M": 64, "N": 64, "K": 64}, CONFIG, "sm_90")
    assert binary.compiler == "nvcc" and binary.symbol == "matmul"
    assert (found.resources["registers"], found.resources["static_shared_bytes"]) == _ptxas_v(
        _matmul_source(), "sm_90", tmp_path
    )


def test_a_config_needing_wgmma_is_refused_off_sm_90a_as_a_capability(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kerntune.backends.cuda_compile import compile_cubin
    from kerntune.isa.targets import missing_features

    monkeypatch.setenv("KERNTUNE_BINARY_CACHE", str(tmp_path))
    kernel = CudaKernel(
        source='extern "C" __global__ void k(float* x) { x[threadIdx.x] += 1.0f; }',
        name="k",
        grid=lambda m: (1,),
        block=lambda m: (32,),
        requires=lambda m: ["wgmma"] if m["PATH"] == 1 else [],
    )
    for arch in ("sm_80", "sm_90"):
        with pytest.raises(CandidateFailed) as refused:
            compile_cubin(kernel, {"PATH": 1}, arch)
        assert refused.value.kind == "unsupported"
        assert f"{arch} lacks wgmma (found on sm_90a)" in refused.value.reason
    if shutil.which("nvcc") or __import__("importlib").util.find_spec("cuda.core"):
        assert compile_cubin(kernel, {"PATH": 1}, "sm_90a").code  # the same config builds where wgmma exists
        assert compile_cubin(kernel, {"PATH": 0}, "sm_80").code  # and a config without it builds anywhere
    assert missing_features("gfx906", ["mfma"]) is not None and missing_features("gfx942", ["mfma"]) is None
    assert "gfx1100 lacks mfma" in (missing_features("gfx1100", ["mfma"]) or "")
    assert missing_features("sm_999", ["wgmma"]) is None  # an unknown target: the compiler decides
