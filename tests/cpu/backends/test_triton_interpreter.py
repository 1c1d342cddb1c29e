"""Triton and torch on a CPU machine: the interpreter (and eager torch) check correctness; no timing is claimed."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES, CliResult, has_gpu

pytest.importorskip("triton")
pytestmark = pytest.mark.skipif(has_gpu(), reason="the interpreter path is for machines without a GPU")


def test_matmul_in_the_interpreter_gates_and_claims_no_timing(kerntune: Callable[..., CliResult]) -> None:
    result = kerntune("tune", str(EXAMPLES / "triton_matmul"), "--shape", "M=64,N=64,K=128", "--dtype", "float16",
                      "--strategy", "random", "--budget", "3", "--json")
    assert result.code == 0, result.stderr
    report = result.json()
    assert report["run"]["target"]["claims_timing"] is False
    shape = report["shapes"][0]
    assert shape["winner"] is None and shape["timing_claimed"] is False
    checked = [b for b in shape["baselines"] if b["status"] == "ok"]
    assert any(b["label"] == "torch.matmul" for b in checked)
    assert all("measurement" not in b for b in checked)
    assert shape["counts"]["ok"] >= 3


def test_wrong_kernel_is_caught_by_the_gate_in_the_interpreter(kerntune: Callable[..., CliResult]) -> None:
    from tests.conftest import SPECS, failures_by_config

    result = kerntune("tune", str(SPECS / "faults_triton"), "--shape", "N=2048", "--json",
                      env={"KERNTUNE_CANDIDATE_TIMEOUT_S": "10"})
    assert result.code == 0, result.stderr
    failed = failures_by_config(result.json())
    assert failed["VARIANT=4,BLOCK=1024"] == "wrong-result"
    assert failed["VARIANT=3,BLOCK=1024"] == "hang"
    assert failed["oom"] == "oom"


def test_decorator_form_tunes_its_triton_configs(kerntune: Callable[..., CliResult]) -> None:
    from tests.conftest import SPECS

    result = kerntune("tune", str(SPECS / "decorator"), "--json")
    assert result.code == 0, result.stderr
    shape = result.json()["shapes"][0]
    assert shape["counts"] == {"ok": 2}  # the default (first config) and the second config
    (default,) = [b["config"] for b in shape["baselines"]]
    assert default["BLOCK"] == 128 and default["num_warps"] == 4


def test_library_ops_as_candidates_on_the_torch_backend(kerntune: Callable[..., CliResult]) -> None:
    from tests.conftest import SPECS

    result = kerntune("tune", str(SPECS / "torch_ops"), "--json")
    assert result.code == 0, result.stderr
    report = result.json()
    assert report["run"]["target"]["backend"] == "torch" and report["run"]["target"]["claims_timing"] is False
    assert report["shapes"][0]["counts"] == {"ok": 3}


GEMV_CHECK = """
import importlib.util, sys
loaded = importlib.util.spec_from_file_location("spec", sys.argv[1])
spec = importlib.util.module_from_spec(loaded)
loaded.loader.exec_module(spec)
cases = [(1, 64, 128, "NT", 0), (3, 96, 256, "NN", 1), (8, 32, 128, "NT", 1), (5, 40, 64, "TN", 0)]
for m, n, k, layout, bias in cases:
    shape = {"M": m, "N": n, "K": k, "layout": layout, "bias": bias}
    args = spec.make_inputs(shape, "float16", 1)
    for bn, bk in [(8, 64), (32, 64)]:
        config = {**spec.problem.space.default, "BLOCK_M": 16, "BLOCK_N": bn, "BLOCK_K": bk, "GEMV": 1,
                  "num_warps": 2, "num_stages": 2}
        args["c"].fill_(float("nan"))
        spec.launch(spec.gemv_kernel, args, config)
        ref = spec.reference(args, shape)
        print(m, n, k, layout, bias, bn, bk, float((args["c"].double() - ref).norm() / ref.norm()))
"""


def test_the_decode_gemv_form_is_right_for_every_row_count_layout_and_bias(tmp_path: Path) -> None:
    # Rows masked below the power of two (3, 5), N not a multiple of the slab (40), both B layouts, a bias.
    script = tmp_path / "gemv_check.py"
    script.write_text(GEMV_CHECK)
    done = subprocess.run([sys.executable, str(script), str(EXAMPLES / "triton_matmul" / "spec.py")],
                          env={**os.environ, "TRITON_INTERPRET": "1"}, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    errors = [float(line.split()[-1]) for line in done.stdout.splitlines()]
    assert len(errors) == 8 and max(errors) < 2e-3, done.stdout  # fp16 output rounding is ~3e-4


def test_gemv_configs_exist_for_decode_shapes_only() -> None:
    from kerntune.model import Shape, Target
    from kerntune.tune.spec import load_spec

    space = load_spec(str(EXAMPLES / "triton_matmul")).problem.space
    h200 = Target("triton", "nvidia", "sm_90", "NVIDIA H200", 132)

    def gemv(shape: str) -> list[dict[str, int]]:
        fields = dict(kv.split("=") for kv in shape.split(","))
        valid, _ = space.valid_configs(Shape.of({**{k: int(v) for k, v in fields.items()}, "layout": "NT"}), h200)
        return [dict(c.items) for c in valid if dict(c.items)["GEMV"]]

    decode = gemv("M=1,N=6144,K=4096")
    assert decode and all(c["SPLIT_K"] == 1 and c["TMA"] == 0 and c["BLOCK_M"] == 16 for c in decode)
    assert {c["BLOCK_N"] for c in decode} >= {8, 16, 32}
    assert gemv("M=16,N=4096,K=4096") == []
