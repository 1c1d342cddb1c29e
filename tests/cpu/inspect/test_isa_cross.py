"""Cross-compilation on the CPU machine: a Triton matmul built for sm_90 and gfx942 with the compilers and
tools in the triton wheel, read back as resources, an instruction census and occupancy."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pytest

pytest.importorskip("triton")

from kerntune.backends.triton_cross import Inspection, cross_compile, inspect_compiled
from kerntune.errors import CandidateFailed, UsageError
from kerntune.isa.occupancy import AmdOccupancy
from tests.conftest import KERNELS, SPECS, CliResult, load_benchmark
from tests.helpers.isa_kernels import SIGNATURE, matmul

TENSOR_CORE = "tensor core (HGMMA/HMMA/IMMA/QGMMA)"
MATRIX = "matrix (v_mfma/v_wmma/v_smfmac)"


def _inspect(target: str, tile: tuple[int, int, int], **options: Any) -> Inspection:
    constexprs = dict(zip(("BLOCK_M", "BLOCK_N", "BLOCK_K"), tile, strict=True))
    return inspect_compiled(cross_compile(matmul, SIGNATURE, constexprs, target, options), target)


def test_sm90_matmul_uses_hgmma_and_its_registers_set_the_occupancy() -> None:
    got = _inspect("sm_90", (64, 64, 32), num_warps=4, num_stages=2)
    regs = got.resources["registers"]
    assert got.census[TENSOR_CORE] > 0 and 0 < regs <= 255 and got.spills == 0
    by_hand = 65536 // (math.ceil(regs * 32 / 256) * 256 * 4)  # registers per SM / registers per block
    by_smem = 233472 // (got.resources["shared_bytes"] + 1024)
    assert got.occupancy is not None and got.occupancy.blocks_per_sm == min(by_hand, by_smem, 16, 32)


def test_a_register_hungry_sm90_config_spills() -> None:
    got = _inspect("sm_90", (128, 256, 64), num_warps=4, num_stages=3)
    assert got.spills > 0 and got.census["local memory (LDL/STL: spills)"] == got.spills
    assert got.resources["registers"] == 255


def test_gfx942_matmul_uses_mfma_and_agrees_with_the_compilers_occupancy() -> None:
    got = _inspect("gfx942", (128, 128, 64), num_warps=4, num_stages=2)
    res = got.resources
    assert got.census[MATRIX] > 0 and res["vgprs"] > 0 and res["agprs"] >= 0 and res["lds_bytes"] > 0
    assert res["wavefront"] == 64 and got.spills == 0
    assert isinstance(got.occupancy, AmdOccupancy) and got.occupancy.waves_per_simd == res["compiler_occupancy"]
    assert got.next_boundary is not None and "would allow" in got.next_boundary


def test_one_wave_for_a_big_tile_spills_to_scratch_on_gfx942() -> None:
    got = _inspect("gfx942", (128, 128, 64), num_warps=1, num_stages=2)
    assert got.spills > 0 and got.resources["scratch_bytes"] == got.spills
    assert got.census["scratch (scratch_*: spills)"] > 0


def test_bad_targets_and_configs_that_do_not_build_say_why() -> None:
    with pytest.raises(UsageError, match=r"unknown target 'sm_1'.*sm_90"):
        _inspect("sm_1", (64, 64, 32))
    with pytest.raises(CandidateFailed, match=r"compile for sm_90: .*[Ii]nsufficient registers"):
        _inspect("sm_90", (128, 128, 64), num_warps=4, num_stages=3, maxnreg=64)


def test_inspect_shows_a_spec_config_on_both_vendors(kerntune: Callable[..., CliResult]) -> None:
    result = kerntune(
        "inspect",
        str(KERNELS / "triton_gemm"),
        "--config",
        "BLOCK_M=64,BLOCK_N=64,BLOCK_K=64",
        "--shape",
        "M=256,N=256,K=256",
        "--target",
        "sm_90",
        "--target",
        "gfx942",
        "--json",
    )
    assert result.code == 0, result.stderr
    rows = {r["target"]: r for r in result.json()}
    nvidia, amd = rows["sm_90"], rows["gfx942"]
    assert nvidia["census"][TENSOR_CORE] > 0 and nvidia["resources"]["registers"] > 0 and nvidia["spills"] == 0
    assert (
        amd["census"][MATRIX] > 0
        and amd["resources"]["lds_bytes"] > 0
        and amd["occupancy"]["waves_per_simd"] > 0
        and "warps_per_sm" not in amd["occupancy"]
    )
    # The spec's launch gave 16-byte-aligned tensors and unit strides, as the JIT would see them: loads vectorize.
    assert amd["census"]["global 128-bit loads (global_load_dwordx4)"] > 0
    assert nvidia["config"].startswith("BLOCK_M=64,BLOCK_N=64,BLOCK_K=64")


@pytest.mark.parametrize("form, kernel", [("", "matmul_tma_persistent_kernel")])
def test_inspect_compiles_tma_descriptor_kernels_without_spills(
    kerntune: Callable[..., CliResult], form: str, kernel: str
) -> None:
    # The persistent TMA tile that leads at the large shapes: host-made descriptors become Triton's tensordesc
    # types, as the JIT specializes them.
    result = kerntune(
        "inspect",
        str(KERNELS / "triton_gemm"),
        "--config",
        f"BLOCK_M=128,BLOCK_N=256,BLOCK_K=64,TMA=1,PERSISTENT=1,num_warps=8,num_stages=3{form}",
        "--shape",
        "M=256,N=10240,K=8192,layout=NT",
        "--dtype",
        "bfloat16",
        "--target",
        "sm_90",
        "--json",
    )
    assert result.code == 0, result.stderr
    (row,) = result.json()
    assert row["kernel"] == kernel
    assert row["census"]["TMA (UTMALDG/UTMASTG)"] > 0 and row["census"][TENSOR_CORE] > 0
    # no spills, one 8-warp program per SM as the persistent grid assumes
    assert row["spills"] == 0 and row["occupancy"]["blocks_per_sm"] == 1 and row["resources"]["registers"] <= 255


def _k_loop_barriers(ptx: str) -> int:
    """``bar.sync`` count inside the PTX's innermost loops (from LLVM's loop-header label to its back branch)."""
    lines, inside, label, count = ptx.splitlines(), False, "", 0
    for line in lines:
        text = line.strip()
        if "Inner Loop Header" in text:
            inside, label = True, text.split(":")[0]
        elif inside and "bra" in text and text.rstrip(";").endswith(label):
            inside = False
        elif inside and text.startswith("bar.sync"):
            count += 1
    return count


@pytest.mark.parametrize(
    "rows, block_n, block_k, warps, barriers",
    [
        (4, 1, 1024, 8, True),
        (8, 2, 1024, 16, True),  # 4 weight elements a thread: converted in every step
        (4, 1, 2048, 8, False),
        (8, 16, 256, 4, False),  # 8 or more: none
        (1, 1, 1024, 8, False),  # one row: none at any count
    ],
)
def test_gemv_weight_loads_under_8_a_thread_past_one_row_convert_through_shared_memory(
    rows: int, block_n: int, block_k: int, warps: int, barriers: bool
) -> None:
    # The premise of the matmul example's GEMV_WEIGHT_PER_THREAD rule, checked against the installed Triton: if
    # a compiler stops converting, the rule has outlived its reason.
    k_loop_sass = load_benchmark("k_loop_sass")  # the example's kernels compiled as the JIT would specialize them
    spec = k_loop_sass.example()
    assert (block_n * block_k < spec.GEMV_WEIGHT_PER_THREAD * 32 * warps) == barriers or rows == 1
    # rows x 6144 x 4096, the weight an nn.Linear's (NT)
    values = k_loop_sass.arguments("gemv", rows, 6144, 4096, (16, block_n, block_k))
    compiled = k_loop_sass.build(spec.gemv_kernel, values, set(), warps, 1)
    ptx = compiled.asm["ptx"]
    # in the K loop, or (a K the kernel knows, unrolled whole) two a step in a straight line
    converts = _k_loop_barriers(ptx) > 0 or ptx.count("bar.sync") >= 2 * (4096 // block_k)
    assert converts == barriers


@pytest.mark.parametrize(
    "args, message",
    [
        (["--target", "sm_99"], "unknown target 'sm_99'"),
        (["--target", "sm_90", "--config", "TILE=3"], "unknown parameter 'TILE'"),
        (
            ["--target", "sm_90", "--config", "num_warps=4", "--config", "num_warps=8", "--config", "num_warps=2"],
            "give one --config to inspect, or two to compare",
        ),
    ],
)
def test_inspect_refuses_bad_input(kerntune: Callable[..., CliResult], args: list[str], message: str) -> None:
    result = kerntune("inspect", str(KERNELS / "triton_gemm"), *args)
    assert result.code == 2 and message in result.stderr, result.stderr


def test_two_configs_side_by_side_show_what_differs(kerntune: Callable[..., CliResult]) -> None:
    small, large = "BLOCK_M=64,BLOCK_N=64,BLOCK_K=64,num_warps=4", "BLOCK_M=128,BLOCK_N=128,BLOCK_K=64,num_warps=4"
    result = kerntune(
        "inspect",
        str(KERNELS / "triton_gemm"),
        "--config",
        small,
        "--config",
        large,
        "--shape",
        "M=256,N=256,K=256",
        "--targets",
        "sm_90,sm_80",
        "--json",
    )
    assert result.code == 0, result.stderr
    data = result.json()
    assert data["a"].startswith(small.rsplit(",", 1)[0]) and data["b"].startswith("BLOCK_M=128,BLOCK_N=128")
    assert {r["target"] for r in data["rows"]} == {"sm_90", "sm_80"}  # a comma-separated compile matrix
    rows = {r["config"]: r for r in data["rows"] if r["target"] == "sm_90"}
    a, b = rows[data["a"]], rows[data["b"]]
    diff = {d["metric"]: d for d in data["diff"] if d["target"] == "sm_90"}
    registers = diff["resources.registers"]  # a 4x larger accumulator tile on the same 4 warps
    assert (registers["a"], registers["b"]) == (a["resources"]["registers"], b["resources"]["registers"])
    assert registers["delta"] == registers["b"] - registers["a"] > 0
    assert diff["resources.shared_bytes"]["delta"] > 0
    assert all(d["a"] != d["b"] for d in data["diff"])  # only what differs is listed


def test_inspect_exits_2_when_a_target_cannot_build_the_kernel(kerntune: Callable[..., CliResult]) -> None:
    result = kerntune("inspect", str(SPECS / "ptx_asm"), "--target", "sm_90", "--target", "gfx942", "--json")
    assert result.code == 2
    rows = {r["target"]: r for r in result.json()}
    assert "error" not in rows["sm_90"] and rows["sm_90"]["resources"]["registers"] > 0
    assert rows["gfx942"]["error"].startswith("compile for gfx942")
    assert "fast_tanh_kernel does not build for gfx942" in result.stderr


def test_a_missing_nvidia_tool_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    from kerntune.backends.cubin import nvidia_tool
    from kerntune.errors import BackendUnavailable

    monkeypatch.setenv("PATH", "")
    with pytest.raises(BackendUnavailable, match=r"cuobjdump-gone not found .* install the CUDA toolkit"):
        nvidia_tool("cuobjdump-gone")
