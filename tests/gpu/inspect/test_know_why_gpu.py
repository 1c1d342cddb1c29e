"""Calibration and inspection checked against the GPU itself (run on the H200; skipped without a GPU): the
calibrated copy and bf16 rates against a plain device-to-device copy and torch.matmul timed in the same run,
inspect's cross-compiled resources against the kernel Triton launched, and kerntune's occupancy against
Nsight Compute's theoretical occupancy. Each test prints its figures (``pytest -rA`` shows them)."""

from __future__ import annotations

import csv
import io
import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import KERNELS, ROOT, CliResult, has_gpu

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not has_gpu(), reason="needs a CUDA or ROCm GPU")]

# Three configs of kernels/triton_gemm with different limiters (registers, shared memory, both small).
CASES = [
    ("M=4096,N=4096,K=4096", "BLOCK_M=128,BLOCK_N=128,BLOCK_K=64,num_warps=8,num_stages=3"),
    ("M=4096,N=4096,K=4096", "BLOCK_M=64,BLOCK_N=128,BLOCK_K=64,num_warps=4,num_stages=4"),
    ("M=16,N=4096,K=4096", "BLOCK_M=16,BLOCK_N=64,BLOCK_K=256,num_warps=2,num_stages=5"),
]


def _fields(text: str) -> dict[str, int]:
    return {k: int(v) for k, v in (item.split("=") for item in text.split(","))}


def test_calibration_matches_a_plain_copy_and_torch_matmul(kerntune: Callable[..., CliResult]) -> None:
    import torch

    from kerntune.backends.torch import TorchBackend
    from kerntune.measure.protocol import MeasureOptions, measure

    result = kerntune("calibrate", "--device", "cuda", "--force", "--json")
    assert result.code == 0, result.stderr
    data = result.json()
    backend = TorchBackend("cuda")
    options = MeasureOptions(regime="warm", warmup_ms=100, budget_ms=1000)
    n = data["details"]["array_bytes"] // 4
    src, dst = torch.ones(n, device="cuda"), torch.empty(n, device="cuda")
    d2d = 2 * 4 * n / (measure(backend, [lambda: dst.copy_(src)], options).median_ms * 1e-3)  # cudaMemcpyAsync
    x = torch.randn(8192, 8192, device="cuda").to(torch.bfloat16)
    y = torch.randn(8192, 8192, device="cuda").to(torch.bfloat16)
    z = torch.empty_like(x)
    bf16 = 2.0 * 8192**3 / (measure(backend, [lambda: torch.matmul(x, y, out=z)], options).median_ms * 1e-3)
    figures = {
        "calibrate": {
            k: data[k]
            for k in (
                "copy_bytes_per_s",
                "triad_bytes_per_s",
                "read_bytes_per_s",
                "fma_flops_per_s",
                "launch_latency_ms",
                "matrix_flops_per_s",
            )
        },
        "plain_d2d_copy_bytes_per_s": d2d,
        "torch_matmul_bf16_8192_flops_per_s": bf16,
        "skipped": data["details"].get("matrix_skipped"),
    }
    print(json.dumps(figures))
    assert abs(data["copy_bytes_per_s"] / d2d - 1) <= 0.10
    probes = {name: data[f"{name}_bytes_per_s"] for name in ("copy", "triad", "read")}
    assert min(probes.values()) > 1e12 and data["memory_bytes_per_s"] == max(probes.values())  # the best probe
    assert abs(data["matrix_flops_per_s"]["bfloat16"] / bf16 - 1) <= 0.15
    assert {"bfloat16", "float16", "float32"} <= set(data["matrix_flops_per_s"])
    assert data["fma_flops_per_s"] > 1e13 and 0 < data["launch_latency_ms"] < 1.0


def _launched(shape: str, config: str) -> dict[str, Any]:
    """Launch the config on the GPU through the spec and read the compiled kernel Triton ran."""
    import torch

    from kerntune.backends.triton import kernel_resources
    from kerntune.tune.spec import load_spec

    loaded = load_spec(str(KERNELS / "triton_gemm"))
    spec = sys.modules[loaded.problem.make_inputs.__module__]
    dims = _fields(shape)
    meta = {**dict(loaded.problem.space.default or {}), **_fields(config), **dims}
    args = {
        k: v.to("cuda") if isinstance(v, torch.Tensor) else v for k, v in spec.make_inputs(dims, "bfloat16", 0).items()
    }
    compiled = spec.launch(spec.matmul_kernel, args, meta)
    torch.cuda.synchronize()
    resources, _ = kernel_resources(compiled)
    return resources


def test_inspect_matches_the_kernel_triton_launched(kerntune: Callable[..., CliResult]) -> None:
    rows = []
    for shape, config in CASES:
        result = kerntune(
            "inspect",
            str(KERNELS / "triton_gemm"),
            "--target",
            "sm_90",
            "--shape",
            shape,
            "--config",
            config,
            "--json",
        )
        assert result.code == 0, result.stderr
        inspected = result.json()[0]["resources"]
        launched = _launched(shape, config)
        rows.append({"shape": shape, "config": config, "inspect": inspected, "launched": launched})
    print(json.dumps(rows))
    for row in rows:
        assert row["inspect"]["registers"] == row["launched"]["registers"], row
        assert row["inspect"]["shared_bytes"] == row["launched"]["shared_bytes"], row


LAUNCHER = """
import sys
sys.path[:0] = [{root!r}, {src!r}]
from tests.gpu.inspect.test_know_why_gpu import CASES, _launched
for shape, config in CASES:
    _launched(shape, config)
"""


@pytest.mark.skipif(shutil.which("ncu") is None, reason="needs Nsight Compute (ncu)")
def test_occupancy_equals_nsight_computes_theoretical_occupancy(
    kerntune: Callable[..., CliResult], tmp_path: Path
) -> None:
    ours = []
    for shape, config in CASES:
        result = kerntune(
            "inspect",
            str(KERNELS / "triton_gemm"),
            "--target",
            "sm_90",
            "--shape",
            shape,
            "--config",
            config,
            "--json",
        )
        assert result.code == 0, result.stderr
        ours.append(result.json()[0]["occupancy"])
    script = tmp_path / "launch.py"
    script.write_text(LAUNCHER.format(root=str(ROOT), src=str(ROOT / "src")))
    # --clock-control none: measure the card as found (never lock or change its clocks).
    proc = subprocess.run(
        [
            "ncu",
            "--clock-control",
            "none",
            "--section",
            "Occupancy",
            "--csv",
            "--page",
            "details",
            "-k",
            "regex:matmul_kernel",
            sys.executable,
            str(script),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=str(ROOT),
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    table = [
        r
        for r in csv.DictReader(io.StringIO(proc.stdout[proc.stdout.index('"ID"') :]))
        if r.get("Metric Name") == "Theoretical Occupancy"
    ]
    theirs = [float(r["Metric Value"]) for r in table]
    print(json.dumps({"kerntune": ours, "ncu_theoretical_occupancy_pct": theirs}))
    assert len(theirs) == len(CASES)
    assert [round(100 * o["fraction"], 1) for o in ours] == [round(t, 1) for t in theirs]


@pytest.mark.skipif(shutil.which("ncu") is None, reason="needs Nsight Compute (ncu)")
def test_profile_attaches_nsight_counters_to_the_finalists(kerntune: Callable[..., CliResult]) -> None:
    tuned = kerntune(
        "tune",
        str(KERNELS / "triton_gemm"),
        "--shape",
        "M=1024,N=1024,K=1024",
        "--strategy",
        "random",
        "--budget",
        "4",
        "--json",
    )
    assert tuned.code == 0, tuned.stderr
    median_s = tuned.json()["shapes"][0]["winner"]["measurement"]["median_ms"] * 1e-3
    result = kerntune("profile", "last", "--top", "1", "--json")
    assert result.code == 0, result.stdout[-2000:] + result.stderr[-2000:]
    rows = result.json()
    print(json.dumps(rows))
    assert rows[0]["role"] == "search" and {r["role"] for r in rows[1:]} == {"baseline"}
    ours = rows[0]["kernels"]
    assert len(ours) == 1 and "matmul_kernel" in ours[0]["kernel"]
    m = ours[0]["metrics"]
    assert 0 < m["theoretical_occupancy_pct"] <= 100 and 0 < m["achieved_occupancy_pct"] <= 100
    assert 0 < m["compute_sol_pct"] <= 100 and m["dram_bytes_per_s"] > 0
    # One warm launch under the profiler against kerntune's cold median: the same kernel, within a factor of 3.
    assert median_s / 3 < m["duration_s"] < median_s * 3
