"""The kernel laboratory on a real GPU: a compiled Triton launch captured from a running program, replayed in the
three modes with CUDA-event timing, a config variant compared and saved into the program's dispatch table, and
the program run again reading it; then a torch.compile'd program's generated kernel and its GEMM call."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from kerntune.lab.save_config import slower_by_either_timer
from tests.conftest import DATA, CliResult, has_gpu

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not has_gpu(), reason="needs a CUDA or ROCm GPU")]

ON_GPU = {"LAB_DEVICE": "cuda"}


def test_capture_replay_compare_save_on_the_gpu(kerntune: Callable[..., CliResult], tmp_path: Path) -> None:
    lab = tmp_path / "lab"
    shutil.copytree(DATA / "lab", lab)
    program = [sys.executable, str(lab / "program.py")]
    before = subprocess.run(program, capture_output=True, text=True, check=True, env={**os.environ, **ON_GPU})
    cap = tmp_path / "cap"
    done = kerntune(
        "lab",
        "capture",
        "--kernel",
        "scale_add",
        "--nth",
        "2",
        "-o",
        str(cap),
        "--json",
        "--",
        "python",
        str(lab / "program.py"),
        env=ON_GPU,
    )
    assert done.code == 0, done.stderr
    manifest = done.json()
    assert manifest["device"]["type"] == "cuda" and manifest["interpreted"] is False
    for mode in ("isolated", "sustained", "replays"):
        result = kerntune("lab", "replay", str(cap), "--mode", mode, "--iterations", "50", "--repeats", "3", "--json")
        assert result.code == 0, result.stderr
        replayed = result.json()
        assert replayed["mode"] == mode and replayed["reproduces_capture"] is True
        assert replayed["timing_claimed"] is True and 0 < replayed["median_ms"] < 10
        assert replayed["cache"].startswith("warm" if mode == "sustained" else "cold"), replayed["cache"]
    compared = kerntune("lab", "compare", str(cap), "--set", "BLOCK=64", "--iterations", "50", "--counters", "--json")
    assert compared.code == 0, compared.stderr
    assert compared.json()["validation"]["passed"] and compared.json()["ratio"] > 0
    second = compared.json()["interleaved"]["second_timer"]  # the same pairs, timed from the profiler's records
    assert second.get("pairs") == 50 and second["ratio"] > 0 and isinstance(second["agrees"], bool), second
    resources = compared.json()["variant_result"]["resources"]
    assert resources["registers"] > 0 and resources["matrix_instructions"] == 0, resources  # no tl.dot in it
    assert 0 < resources["occupancy"]["theoretical_pct"] <= 100, resources
    counters = compared.json()["counters"]
    for role in ("original", "variant"):
        assert counters[role]["duration_s"] > 0 and 0 < counters[role]["memory_sol_pct"] <= 100, counters
    table = tmp_path / "table.json"
    saved = kerntune("lab", "save", str(cap), "--set", "BLOCK=64", "--table", str(table), "--json")
    assert saved.code == 0, saved.stderr
    after = subprocess.run(
        [*program, str(table)],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, **ON_GPU, "KERNTUNE_LOG_DISPATCH": "1"},
    )
    assert after.stdout == before.stdout and '-> exact {"BLOCK": 64}' in after.stderr, after.stderr
    assert json.loads(table.read_text())["entries"][0]["median_ms"] == compared.json()["median_ms"]


COMPILED = DATA / "lab" / "compiled_program.py"
SPEC = Path(__file__).resolve().parents[3] / "kernels" / "triton_gemm"


def test_a_torch_compiled_program_s_generated_kernel_and_its_gemm(
    kerntune: Callable[..., CliResult], tmp_path: Path
) -> None:
    """Inductor's launches (not through JITFunction.run) and the aten::mm its extern GEMM calls: a miss names the
    kernels that launched; the generated kernel is captured with its module kept, replayed and compared at another
    block size; the GEMM call is compared with the tuned Triton GEMM and saved into a served table when it is not
    slower, which kerntune run then serves."""
    program = ["--", "python", str(COMPILED)]
    missed = kerntune("lab", "capture", "--kernel", "no_such_kernel", "-o", str(tmp_path / "none"), *program)
    assert missed.code == 2 and "launched: " in missed.stderr, missed.stderr
    names = re.findall(r"(triton_\w+) ×(\d+)", missed.stderr)
    assert names, missed.stderr  # Inductor's kernels, seen by their profiler names
    name = names[0][0]
    cap = tmp_path / "generated"
    done = kerntune("lab", "capture", "--kernel", name, "--nth", "2", "-o", str(cap), "--json", *program)
    assert done.code == 0, done.stderr
    manifest = done.json()
    assert manifest["inductor"]["kernel_name"] == name and (cap / "inductor_kernel.py").is_file()
    assert manifest["kernel"]["file"] == str((cap / "inductor_kernel.py").resolve()) and manifest["grid"][0] >= 1
    for mode in ("isolated", "replays"):
        result = kerntune("lab", "replay", str(cap), "--mode", mode, "--iterations", "30", "--repeats", "2", "--json")
        assert result.code == 0, result.stderr
        assert result.json()["reproduces_capture"] is True and result.json()["timing_claimed"] is True
    block = next((k for k in manifest["inductor"]["config"] if k.endswith("BLOCK")), None)
    if block is not None:  # twice the block, on the grid Inductor computes for it: half the programs, same result
        twice = 2 * int(manifest["inductor"]["config"][block])
        compared = kerntune("lab", "compare", str(cap), "--set", f"{block}={twice}", "--iterations", "30", "--json")
        assert compared.code == 0, compared.stderr
        assert compared.json()["validation"]["passed"] and compared.json()["interleaved"]["pairs"] == 30
        assert compared.json()["variant_grid"][0] == -(-manifest["grid"][0] // 2), compared.json()["variant_grid"]

    gemm = tmp_path / "gemm"
    done = kerntune(
        "lab", "capture", "--kernel", "aten::mm", "--match", "bfloat16", "-o", str(gemm), "--json", *program
    )
    assert done.code == 0, done.stderr
    assert done.json()["kernel"]["overload"] in ("aten::mm", "aten::mm.out") and done.json()["device"]["type"] == "cuda"
    for mode in ("isolated", "sustained", "replays"):
        result = kerntune("lab", "replay", str(gemm), "--mode", mode, "--iterations", "30", "--repeats", "2", "--json")
        assert result.code == 0, result.stderr
        assert result.json()["timing_claimed"] is True and result.json()["median_ms"] > 0
    config = ["--set", "BLOCK_M=64", "--set", "BLOCK_N=64", "--set", "BLOCK_K=64"]
    compared = kerntune("lab", "compare", str(gemm), "--spec", str(SPEC), *config, "--iterations", "40", "--json")
    assert compared.code == 0, compared.stderr
    row = compared.json()
    assert row["validation"]["passed"] and row["served_key"] == ["bfloat16", 64, 512, 256, "NT", 0]
    low, high = row["interleaved"]["ci"]
    assert 0 < low <= row["ratio"] <= high, row["interleaved"]
    table = tmp_path / "served.json"
    saved = kerntune("lab", "save", str(gemm), "--spec", str(SPEC), *config, "--table", str(table), "--json")
    if slower_by_either_timer(row["interleaved"]):  # cuBLAS faster by either timer: refused, nothing written
        assert saved.code == 2 and "slower than the library" in saved.stderr and not table.exists()
        return
    assert saved.code == 0, saved.stderr
    out = tmp_path / "counts"
    served = kerntune(
        "run", "--table", str(table), "--spec", str(SPEC), *program, env={"KERNTUNE_VERIFY_OUT": str(out)}
    )
    assert served.code == 0, served.stderr
    counts = json.loads(next(out.glob("serve-*.json")).read_text())["ops"]
    assert sum(c["served"] for c in counts.values()) >= 4 and sum(c["failed"] for c in counts.values()) == 0


CUDA_PROGRAM = DATA / "lab" / "cuda_program.py"
REDUCTION = Path(__file__).resolve().parents[3] / "examples" / "cuda_reduction" / "spec.py"


def test_a_native_cuda_launch_captured_replayed_compared_and_saved(
    kerntune: Callable[..., CliResult], tmp_path: Path
) -> None:
    """kerntune's CUDA C++ reduction launched through its CUDA backend: the 2nd launch captured with its source,
    macros and launch shape; replayed in the three modes, rebuilt to the very binary that ran; other macros and a
    source variant compared; the variant saved over the source string in the spec file the program loaded."""
    spec = tmp_path / "spec.py"
    shutil.copyfile(REDUCTION, spec)
    program = ["--", "python", str(CUDA_PROGRAM), str(spec)]
    before = subprocess.run(["python", str(CUDA_PROGRAM), str(spec)], capture_output=True, text=True, check=True)
    missed = kerntune("lab", "capture", "--kernel", "reduce_max", "-o", str(tmp_path / "none"), *program)
    assert missed.code == 2 and "launched: reduce_sum ×3" in missed.stderr, missed.stderr
    cap = tmp_path / "cap"
    done = kerntune("lab", "capture", "--kernel", "reduce_sum", "--nth", "2", "-o", str(cap), "--json", *program)
    assert done.code == 0, done.stderr
    manifest = done.json()
    assert manifest["kernel"]["language"] == "cuda" and manifest["kernel"]["file"] == str(spec.resolve())
    assert manifest["kernel"]["arg_names"] == ["x", "out", "partials", "arrived", "n"]
    assert manifest["options"] == {"BLOCK": 256, "VEC": 1, "ITEMS": 1} and manifest["block"] == [256]
    assert manifest["arguments"]["n"] == {"kind": "scalar", "value": 1 << 20, "dtype": "int64"}
    for mode in ("isolated", "sustained", "replays"):
        result = kerntune("lab", "replay", str(cap), "--mode", mode, "--iterations", "50", "--repeats", "2", "--json")
        assert result.code == 0, result.stderr
        replayed = result.json()
        assert replayed["reproduces_capture"] is True and replayed["timing_claimed"] is True, replayed
        assert replayed["resources"]["same_binary_as_captured"] is True and replayed["resources"]["registers"] > 0
    # Other macros on the captured launch shape: float4 loads sum other per-block partials into the scratch array,
    # which validation compares too and names (the total agrees; the scratch is part of what the launch wrote).
    wider = kerntune("lab", "compare", str(cap), "--set", "VEC=4", "--rtol", "1e-4", "--iterations", "50", "--json")
    assert wider.code == 1, wider.stderr
    assert wider.json()["validation"]["argument"] == "partials" and wider.json()["interleaved"]["pairs"] == 50
    assert wider.json()["variant_result"]["resources"]["same_binary_as_captured"] is False
    source = manifest["kernel"]["source"]
    variant = tmp_path / "unrolled.cu"
    variant.write_text(source.replace("    for (long long i =", "    #pragma unroll 4\n    for (long long i =", 1))
    compared = kerntune("lab", "compare", str(cap), "--variant", str(variant), "--iterations", "50", "--json")
    assert compared.code == 0, compared.stderr
    assert compared.json()["validation"] == {"passed": True, "rule": "bitwise"}, compared.json()["validation"]
    renamed = tmp_path / "renamed.cu"
    renamed.write_text(source.replace("long long n)", "long long count)").replace("< n", "< count"))
    refused = kerntune("lab", "compare", str(cap), "--variant", str(renamed), "--iterations", "10")
    assert refused.code == 2 and "another signature" in refused.stderr, refused.stderr
    saved = kerntune("lab", "save", str(cap), "--variant", str(variant), "--json")
    assert saved.code == 0, saved.stderr
    assert "#pragma unroll 4" in spec.read_text()
    after = subprocess.run(["python", str(CUDA_PROGRAM), str(spec)], capture_output=True, text=True, check=True)
    assert after.stdout == before.stdout
