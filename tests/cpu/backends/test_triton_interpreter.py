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


FORMS_CHECK = """
import importlib.util, sys
loaded = importlib.util.spec_from_file_location("spec", sys.argv[1])
spec = importlib.util.module_from_spec(loaded)
loaded.loader.exec_module(spec)
import torch


def check(shape, form, **config):
    args = spec.make_inputs(shape, "float16", 1)
    meta = {**spec.problem.space.default, **config, "num_warps": 2, "num_stages": 2}
    outputs = []
    for _ in range(2):  # twice: the arrival counters a launch leaves must serve the next one
        args["c"].fill_(float("nan"))
        spec.launch(spec.matmul_kernel, args, meta)
        outputs.append(args["c"].clone())
    ref = spec.reference(args, shape)
    assert torch.equal(outputs[0], outputs[1]), (form, shape, "not the same result twice")
    print(form, shape, float((args["c"].double() - ref).norm() / ref.norm()))


cases = [(1, 64, 128, "NT", 0), (3, 96, 256, "NN", 1), (8, 32, 128, "NT", 1), (5, 40, 64, "TN", 0)]
for m, n, k, layout, bias in cases:
    for bn, bk in [(8, 64), (32, 64)]:
        check({"M": m, "N": n, "K": k, "layout": layout, "bias": bias}, "gemv", BLOCK_M=16, BLOCK_N=bn, BLOCK_K=bk,
              GEMV=1)
# The interpreter's device has 4 multiprocessors: 10 and 21 tiles leave a partial last wave to split.
for m, n, k, layout, bias in [(64, 160, 256, "NT", 0), (64, 160, 256, "NN", 1), (96, 224, 128, "NT", 1)]:
    shape = {"M": m, "N": n, "K": k, "layout": layout, "bias": bias}
    assert spec._tail_columns(m, n, {"BLOCK_M": 32, "BLOCK_N": 32}, None) is not None
    check(shape, "sk_tail", BLOCK_M=32, BLOCK_N=32, BLOCK_K=32, SPLIT_K=2, FUSED=1, SK_TAIL=1)
# Stream-K on the same 4 multiprocessors, 32x32 tiles: 3 tiles (fewer than the programs), 1 tile of 16 iterations
# cut in 4 parts, 1 tile of 2 iterations (a grid of 2), 6 and 10 tiles (a partial wave: mode 1 streams it alone,
# mode 2 with a whole wave more), M not a multiple of the tile (40), every layout's strides, a bias.
for m, n, k, layout, bias in [(32, 96, 256, "NN", 0), (32, 32, 512, "NT", 1), (32, 32, 64, "NN", 0),
                              (64, 96, 128, "NT", 1), (64, 160, 256, "TT", 0), (40, 96, 192, "TN", 1)]:
    for mode in (1, 2):
        check({"M": m, "N": n, "K": k, "layout": layout, "bias": bias}, "stream_k", BLOCK_M=32, BLOCK_N=32,
              BLOCK_K=32, STREAM_K=mode)
"""


def test_the_decode_partial_wave_and_stream_k_forms_are_right_for_every_layout_and_bias(tmp_path: Path) -> None:
    # GEMV: rows masked below the power of two (3, 5), N not a multiple of the slab (40), both B layouts, a bias.
    # SK_TAIL: C's columns split between a data-parallel launch and a split-K one, with and without a bias.
    # STREAM_K: tiles cut between programs and summed by the last to arrive, bitwise the same on a second launch.
    script = tmp_path / "forms_check.py"
    script.write_text(FORMS_CHECK)
    done = subprocess.run([sys.executable, str(script), str(EXAMPLES / "triton_matmul" / "spec.py")],
                          env={**os.environ, "TRITON_INTERPRET": "1"}, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    errors = {line.split()[0]: [] for line in done.stdout.splitlines()}
    for line in done.stdout.splitlines():
        errors[line.split()[0]].append(float(line.split()[-1]))
    assert (len(errors["gemv"]), len(errors["sk_tail"]), len(errors["stream_k"])) == (8, 3, 12), done.stdout
    assert max(errors["gemv"] + errors["sk_tail"] + errors["stream_k"]) < 2e-3, done.stdout  # fp16 rounding ~3e-4


def test_gemv_and_tail_split_configs_exist_only_where_they_apply() -> None:
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

    def tail(shape: str) -> list[dict[str, int]]:
        fields = {k: int(v) for k, v in (kv.split("=") for kv in shape.split(","))}
        valid, _ = space.valid_configs(Shape.of({**fields, "layout": "NT"}), h200)
        return [dict(c.items) for c in valid if dict(c.items)["SK_TAIL"]]

    # 256x10240 in 128x128 tiles: 160 on 132 SMs, a partial wave; 4096x4096 in 128x128: 1024 tiles, a tail of 128
    # tiles that split in two would not fit one wave.
    split = tail("M=256,N=10240,K=8192")
    assert any(c["BLOCK_M"] == c["BLOCK_N"] == 128 for c in split)
    assert all(c["SPLIT_K"] > 1 and c["FUSED"] == 1 and c["TMA"] == 0 for c in split)
    assert not any(c["BLOCK_M"] == c["BLOCK_N"] == 128 and c["SPLIT_K"] == 2 for c in tail("M=4096,N=4096,K=4096"))


def test_stream_k_configs_exist_only_where_a_wave_is_unbalanced() -> None:
    from kerntune.model import Shape, Target
    from kerntune.tune.spec import load_spec

    problem = load_spec(str(EXAMPLES / "triton_matmul")).problem
    space, spec = problem.space, sys.modules[problem.make_inputs.__module__]
    h200 = Target("triton", "nvidia", "sm_90", "NVIDIA H200", 132)

    def streamed(shape: str) -> list[dict[str, int]]:
        fields = {k: int(v) for k, v in (kv.split("=") for kv in shape.split(","))}
        valid, _ = space.valid_configs(Shape.of({**fields, "layout": "NT"}), h200)
        return [dict(c.items) for c in valid if dict(c.items)["STREAM_K"]]

    # 256x10240 in 128x128 tiles: 160 on 132 SMs, past one wave (both modes); 128x4096: 32 tiles, under one
    # wave (mode 1 only, mode 2 would be the same); every stream-K config plain (no split-K, TMA or other form).
    wave = streamed("M=256,N=10240,K=8192")
    assert {c["STREAM_K"] for c in wave if c["BLOCK_M"] == c["BLOCK_N"] == 128} == {1, 2}
    assert all(c["SPLIT_K"] == 1 and c["TMA"] == 0 and c["SK_TAIL"] == 0 and c["GEMV"] == 0 for c in wave)
    under = streamed("M=128,N=4096,K=4096")
    assert {c["STREAM_K"] for c in under if c["BLOCK_M"] == c["BLOCK_N"] == 128} == {1}
    # 132 tiles exactly (128x128 tiles of 1536x1408: 12 x 11): one whole wave, nothing to balance.
    assert not any(c["BLOCK_M"] == c["BLOCK_N"] == 128 for c in streamed("M=1536,N=1408,K=4096"))
    grid, tiles = spec.stream_k_split(160, 128, 132, 1), spec.stream_k_split(160, 128, 132, 2)
    assert grid == (132, 28) and tiles == (132, 160)
    assert spec.stream_k_split(1, 2, 132, 1) == (2, 1)  # two iterations: two programs, never an empty range
