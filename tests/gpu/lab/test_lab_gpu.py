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

from tests.conftest import DATA, CliResult, has_gpu

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not has_gpu(), reason="needs a CUDA or ROCm GPU")]

ON_GPU = {"LAB_DEVICE": "cuda"}


def test_capture_replay_compare_save_on_the_gpu(kerntune: Callable[..., CliResult], tmp_path: Path) -> None:
    lab = tmp_path / "lab"
    shutil.copytree(DATA / "lab", lab)
    program = [sys.executable, str(lab / "program.py")]
    before = subprocess.run(program, capture_output=True, text=True, check=True, env={**os.environ, **ON_GPU})
    cap = tmp_path / "cap"
    done = kerntune("capture", "--kernel", "scale_add", "--nth", "2", "-o", str(cap), "--json", "--", "python",
                    str(lab / "program.py"), env=ON_GPU)
    assert done.code == 0, done.stderr
    manifest = done.json()
    assert manifest["device"]["type"] == "cuda" and manifest["interpreted"] is False
    for mode in ("isolated", "sustained", "replays"):
        result = kerntune("replay", str(cap), "--mode", mode, "--iterations", "50", "--repeats", "3", "--json")
        assert result.code == 0, result.stderr
        replayed = result.json()
        assert replayed["mode"] == mode and replayed["reproduces_capture"] is True
        assert replayed["timing_claimed"] is True and 0 < replayed["median_ms"] < 10
        assert replayed["cache"].startswith("warm" if mode == "sustained" else "cold"), replayed["cache"]
    compared = kerntune("lab", "compare", str(cap), "--set", "BLOCK=64", "--iterations", "50", "--counters",
                        "--json")
    assert compared.code == 0, compared.stderr
    assert compared.json()["validation"]["passed"] and compared.json()["ratio"] > 0
    resources = compared.json()["variant_result"]["resources"]
    assert resources["registers"] > 0 and resources["matrix_instructions"] == 0, resources  # no tl.dot in it
    assert 0 < resources["occupancy"]["theoretical_pct"] <= 100, resources
    counters = compared.json()["counters"]
    for role in ("original", "variant"):
        assert counters[role]["duration_s"] > 0 and 0 < counters[role]["memory_sol_pct"] <= 100, counters
    table = tmp_path / "table.json"
    saved = kerntune("lab", "save", str(cap), "--set", "BLOCK=64", "--table", str(table), "--json")
    assert saved.code == 0, saved.stderr
    after = subprocess.run([*program, str(table)], capture_output=True, text=True, check=True,
                           env={**os.environ, **ON_GPU, "KERNTUNE_LOG_DISPATCH": "1"})
    assert after.stdout == before.stdout and '-> exact {"BLOCK": 64}' in after.stderr, after.stderr
    assert json.loads(table.read_text())["entries"][0]["median_ms"] == compared.json()["median_ms"]


COMPILED = DATA / "lab" / "compiled_program.py"
SPEC = Path(__file__).resolve().parents[3] / "examples" / "triton_matmul"


def test_a_torch_compiled_program_s_generated_kernel_and_its_gemm(kerntune: Callable[..., CliResult],
                                                                  tmp_path: Path) -> None:
    """Inductor's launches (not through JITFunction.run) and the aten::mm its extern GEMM calls: a miss names the
    kernels that launched; the generated kernel is captured with its module kept, replayed and compared at another
    block size; the GEMM call is compared with the tuned Triton GEMM and saved into a served table when it is not
    slower, which kerntune run then serves."""
    program = ["--", "python", str(COMPILED)]
    missed = kerntune("capture", "--kernel", "no_such_kernel", "-o", str(tmp_path / "none"), *program)
    assert missed.code == 2 and "launched: " in missed.stderr, missed.stderr
    names = re.findall(r"(triton_\w+) ×(\d+)", missed.stderr)
    assert names, missed.stderr  # Inductor's kernels, seen by their profiler names
    name = names[0][0]
    cap = tmp_path / "generated"
    done = kerntune("capture", "--kernel", name, "--nth", "2", "-o", str(cap), "--json", *program)
    assert done.code == 0, done.stderr
    manifest = done.json()
    assert manifest["inductor"]["kernel_name"] == name and (cap / "inductor_kernel.py").is_file()
    assert manifest["kernel"]["file"] == str((cap / "inductor_kernel.py").resolve()) and manifest["grid"][0] >= 1
    for mode in ("isolated", "replays"):
        result = kerntune("replay", str(cap), "--mode", mode, "--iterations", "30", "--repeats", "2", "--json")
        assert result.code == 0, result.stderr
        assert result.json()["reproduces_capture"] is True and result.json()["timing_claimed"] is True
    block = next((k for k in manifest["inductor"]["config"] if k.endswith("BLOCK")), None)
    if block is not None:  # twice the block on the captured grid still covers every element (the rest is masked)
        twice = 2 * int(manifest["inductor"]["config"][block])
        compared = kerntune("lab", "compare", str(cap), "--set", f"{block}={twice}", "--iterations", "30", "--json")
        assert compared.code == 0, compared.stderr
        assert compared.json()["validation"]["passed"] and compared.json()["interleaved"]["pairs"] == 30

    gemm = tmp_path / "gemm"
    done = kerntune("capture", "--kernel", "aten::mm", "--match", "bfloat16", "-o", str(gemm), "--json", *program)
    assert done.code == 0, done.stderr
    assert done.json()["kernel"]["overload"] in ("aten::mm", "aten::mm.out") and done.json()["device"]["type"] == "cuda"
    for mode in ("isolated", "sustained", "replays"):
        result = kerntune("replay", str(gemm), "--mode", mode, "--iterations", "30", "--repeats", "2", "--json")
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
    if low > 1.0:  # cuBLAS faster beyond the interval: refused, nothing written
        assert saved.code == 2 and "slower than the library" in saved.stderr and not table.exists()
        return
    assert saved.code == 0, saved.stderr
    out = tmp_path / "counts"
    served = kerntune("run", "--table", str(table), *program, env={"KERNTUNE_VERIFY_OUT": str(out)})
    assert served.code == 0, served.stderr
    counts = json.loads(next(out.glob("serve-*.json")).read_text())["ops"]
    assert sum(c["served"] for c in counts.values()) >= 4 and sum(c["failed"] for c in counts.values()) == 0
