"""Triton and torch on a CPU machine: the interpreter (and eager torch) check correctness; no timing is claimed."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES, KERNELS, CliResult, has_gpu

pytest.importorskip("triton")
pytestmark = pytest.mark.skipif(has_gpu(), reason="the interpreter path is for machines without a GPU")


@pytest.mark.parametrize(
    ("spec", "library"), [(KERNELS / "triton_gemm", "torch.matmul"), (EXAMPLES / "triton_matmul", "torch.mm")]
)
def test_matmul_in_the_interpreter_gates_and_claims_no_timing(
    kerntune: Callable[..., CliResult], spec: Path, library: str
) -> None:
    result = kerntune(
        "tune",
        str(spec),
        "--shape",
        "M=64,N=64,K=128",
        "--dtype",
        "float16",
        "--strategy",
        "random",
        "--budget",
        "3",
        "--json",
    )
    assert result.code == 0, result.stderr
    report = result.json()
    assert report["run"]["target"]["claims_timing"] is False
    shape = report["shapes"][0]
    assert shape["winner"] is None and shape["timing_claimed"] is False
    checked = [b for b in shape["baselines"] if b["status"] == "ok"]
    assert any(b["label"] == library for b in checked)
    assert all("measurement" not in b for b in checked)
    assert shape["counts"]["ok"] >= 3


def test_wrong_kernel_is_caught_by_the_gate_in_the_interpreter(kerntune: Callable[..., CliResult]) -> None:
    from tests.conftest import SPECS, failures_by_config

    result = kerntune(
        "tune", str(SPECS / "faults_triton"), "--shape", "N=2048", "--json", env={"KERNTUNE_CANDIDATE_TIMEOUT_S": "10"}
    )
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
import torch

# Rows masked below the power of two (3, 5), N not a multiple of BLOCK_N (38, 42), one strip or several along K,
# a bias; B as an nn.Linear weight's transpose (NT: GEMV's only layout).
for m, n, k, bias in [(1, 64, 512, 0), (3, 38, 1024, 1), (8, 32, 256, 1), (5, 42, 2048, 0)]:
    shape = {"M": m, "N": n, "K": k, "layout": "NT", "bias": bias}
    for bn, bk in [(1, 256), (4, 512), (16, 256)]:
        if k % bk:
            continue
        args = spec.make_inputs(shape, "float16", 1)
        meta = {**spec.problem.space.default, "BLOCK_M": 16, "BLOCK_N": bn, "BLOCK_K": bk, "GEMV": 1,
                "num_warps": 4, "num_stages": 2}
        args["c"].fill_(float("nan"))
        spec.launch(spec.matmul_kernel, args, meta)
        ref = spec.reference(args, shape)
        print("gemv", m, n, k, bn, bk, float((args["c"].double() - ref).norm() / ref.norm()))
"""


def _interpreted(tmp_path: Path, check: str) -> str:
    """The printed lines of a check script run on the matmul example's spec in Triton's interpreter, in a fresh
    process (the interpreter is chosen when triton is first imported)."""
    script = tmp_path / "check.py"
    script.write_text(check)
    done = subprocess.run(
        [sys.executable, str(script), str(KERNELS / "triton_gemm" / "spec.py")],
        env={**os.environ, "TRITON_INTERPRET": "1"},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_gemv_form_is_right_at_masked_rows_partial_columns_and_with_a_bias(tmp_path: Path) -> None:
    printed = _interpreted(tmp_path, GEMV_CHECK)
    errors = [float(line.split()[-1]) for line in printed.splitlines() if line.startswith("gemv")]
    assert len(errors) == 11 and max(errors) < 2e-3, printed  # fp16 rounding ~3e-4; a NaN fails the max


SERVED_GEMV = """
import importlib.util, sys
loaded = importlib.util.spec_from_file_location("spec", sys.argv[1])
spec = importlib.util.module_from_spec(loaded)
loaded.loader.exec_module(spec)
import torch

# A served GEMV key, as an unmodified program's nn.Linear calls reach it: mm (one row) and addmm (three rows, a
# bias); its launcher's first call takes the JIT and makes the direct launcher, which the interpreter has none of,
# so later calls take the JIT again: each call's answer is checked, and an .out call writes the given tensor.
config = {**spec.problem.space.default, "BLOCK_M": 16, "BLOCK_N": 4, "BLOCK_K": 512, "GEMV": 1, "num_warps": 4,
          "num_stages": 1}
for op, m in (("aten::mm", 1), ("aten::addmm", 3)):
    gen = torch.Generator().manual_seed(m)
    a, weight = torch.randn(m, 1024, generator=gen).half(), torch.randn(38, 1024, generator=gen).half()
    args = (torch.randn(38, generator=gen).half(), a, weight.t()) if op == "aten::addmm" else (a, weight.t())
    key = spec.served_shape(op, args, {})
    launcher = spec.served_prepare(op, dict(zip(("M", "N", "K", "layout", "bias"), key[1:])), config)
    ref = (args[0].double() if op == "aten::addmm" else 0) + a.double() @ weight.t().double()
    outs = [launcher(args, {}) for _ in range(3)]
    given = torch.full((m, 38), float("nan")).half()
    assert launcher(args, {"out": given}) is given
    for out in (*outs, given):
        print("served", op, m, float((out.double() - ref).norm() / ref.norm()))
"""


def test_a_served_gemv_key_answers_every_call(tmp_path: Path) -> None:
    printed = _interpreted(tmp_path, SERVED_GEMV)
    errors = [float(line.split()[-1]) for line in printed.splitlines() if line.startswith("served")]
    assert len(errors) == 8 and max(errors) < 2e-3, printed  # a NaN left in the .out tensor fails the max


WIDE_CHECK = """
import importlib.util, sys
loaded = importlib.util.spec_from_file_location("spec", sys.argv[1])
spec = importlib.util.module_from_spec(loaded)
loaded.loader.exec_module(spec)
import torch

# Wide tiles (96 = 64 + 32 columns) on both kernels: N = 184 cuts the last tile's tail block, N = 200 leaves it
# wholly past N and cuts the head; M = 40 leaves rows past M; GROUP_M 2 with three row tiles orders them in
# groups. The pointer kernel also with a bias, A transposed, and a batch of three.
gen = torch.Generator().manual_seed(0)
def operand(rows, cols, transposed):
    if transposed:
        return torch.randn(cols, rows, generator=gen).half().t()
    return torch.randn(rows, cols, generator=gen).half()
for tma in (0, 1):
    for n in (184, 200):
        for layout in ("NN", "NT", "TN") if not tma else ("NN", "NT"):
            for bias in (0, 1) if not tma else (0,):
                m, k = 40, 64
                config = {**spec.problem.space.default, "BLOCK_M": 16, "BLOCK_N": 96, "BLOCK_K": 32, "GROUP_M": 2,
                          "TMA": tma, "num_warps": 4, "num_stages": 2}
                args = {"a": operand(m, k, layout[0] == "T"), "b": operand(k, n, layout[1] == "T"),
                        "c": torch.full((m, n), float("nan")).half(),
                        "bias": torch.randn(n, generator=gen).half() if bias else None, "M": m, "N": n, "K": k}
                spec.launch(spec.matmul_kernel, args, config)
                ref = spec.reference(args, {})
                print("wide", tma, n, layout, bias, float((args["c"].double() - ref).norm() / ref.norm()))
a, b = torch.randn(3, 40, 64, generator=gen).half(), torch.randn(3, 64, 184, generator=gen).half()
c = torch.full((3, 40, 184), float("nan")).half()
config = {**spec.problem.space.default, "BLOCK_M": 16, "BLOCK_N": 96, "BLOCK_K": 32, "num_warps": 4, "num_stages": 2}
spec.launch(spec.matmul_kernel, {"a": a, "b": b, "c": c, "bias": None, "M": 40, "N": 184, "K": 64}, config)
ref = a.double() @ b.double()
print("wide batch", float((c.double() - ref).norm() / ref.norm()))
"""


def test_the_wide_tile_is_right_at_partial_tiles_both_layouts_a_bias_and_a_batch(tmp_path: Path) -> None:
    printed = _interpreted(tmp_path, WIDE_CHECK)
    errors = [float(line.split()[-1]) for line in printed.splitlines() if line.startswith("wide")]
    assert len(errors) == 17 and max(errors) < 2e-3, printed  # a column or row left unwritten stays NaN


TMA_SPLIT_CHECK = """
import importlib.util, sys
loaded = importlib.util.spec_from_file_location("spec", sys.argv[1])
spec = importlib.util.module_from_spec(loaded)
loaded.loader.exec_module(spec)
import torch

# Fused split-K on TMA loads beside the plain kernel's, at partial tiles on both edges (M = 40, N = 184 with 16x32
# tiles), B row-major and transposed, SPLIT_K 2 and 4; the kept workspace and a served call's own give the same
# bits, and the arrival counters are left at zero for the next launch.
gen = torch.Generator().manual_seed(0)
m, n, k = 40, 184, 256
for b_t in (0, 1):
    a = torch.randn(m, k, generator=gen).half()
    b = torch.randn(n, k, generator=gen).half().t() if b_t else torch.randn(k, n, generator=gen).half()
    for split in (2, 4):
        outs = []
        for tma, per_call in ((1, False), (1, True), (0, False)):
            config = {**spec.problem.space.default, "BLOCK_M": 16, "BLOCK_N": 32, "BLOCK_K": 32, "SPLIT_K": split,
                      "FUSED": 1, "TMA": tma, "num_warps": 4, "num_stages": 2}
            args = {"a": a, "b": b, "c": torch.full((m, n), float("nan")).half(), "bias": None, "M": m, "N": n,
                    "K": k, "per_call": per_call}
            spec.launch(spec.matmul_kernel, args, config)
            outs.append(args["c"])
            ref = a.double() @ b.double()
            print("tma_split", b_t, split, tma, per_call, float((args["c"].double() - ref).norm() / ref.norm()))
        counters = spec._workspace(split, m, n, 3 * 6, torch.device("cpu"), False)[1]
        print("same", int(torch.equal(outs[0], outs[1])), "counters", int(counters.abs().sum()))
"""


def test_the_tma_split_k_form_is_right_at_partial_tiles_and_both_layouts(tmp_path: Path) -> None:
    printed = _interpreted(tmp_path, TMA_SPLIT_CHECK)
    errors = [float(line.split()[-1]) for line in printed.splitlines() if line.startswith("tma_split")]
    assert len(errors) == 12 and max(errors) < 2e-3, printed  # a tile left unwritten stays NaN
    kept = [line.split() for line in printed.splitlines() if line.startswith("same")]
    assert len(kept) == 4 and all(row == ["same", "1", "counters", "0"] for row in kept), printed


def test_wide_tiles_are_valid_where_they_fill_the_waves_better_than_their_head_block() -> None:
    from kerntune.model import Config, Shape, Target
    from kerntune.tune.spec import load_spec

    problem = load_spec(str(KERNELS / "triton_gemm")).problem
    h200 = Target("triton", "nvidia", "sm_90", "NVIDIA H200", 132)

    def widths(shape: dict[str, int | str]) -> set[tuple[int, int, int]]:
        valid, _ = problem.space.valid_configs(Shape.of({"layout": "NT", "bias": 0, **shape}), h200)
        return {
            (c["BLOCK_M"], c["BLOCK_N"], c["TMA"])
            for c in (dict(v.items) for v in valid)
            if c["BLOCK_N"] in (96, 160, 192)
        }

    # 256x10240x8192: 64x160 makes 256 tiles (0.97 of two waves) where 64x128 makes 320 (0.81 of three)
    medium = widths({"M": 256, "N": 10240, "K": 8192})
    assert {(64, 160, 0), (64, 160, 1), (128, 160, 1)} <= medium
    # 4096x4096x4096: 128x160 makes 832 tiles (0.90 of 7 waves), 128x128 1024 (0.97 of 8): no wide tile there
    assert (128, 160, 1) not in widths({"M": 4096, "N": 4096, "K": 4096})
    assert widths({"M": 16, "N": 4096, "K": 4096}) == set()  # BLOCK_M 64 or more
    # a batch multiplies the tiles: 256x10240 in a batch of 33 fills whole waves at 64x128 already (320 x 33 tiles)
    assert (64, 160, 0) not in widths({"M": 256, "N": 10240, "K": 8192, "B": 33})
    for seed in problem.space.seed_configs():
        config = seed.as_dict()
        if config["BLOCK_N"] in (96, 160, 192):
            assert not config["PERSISTENT"] and config["SPLIT_K"] == 1
    persistent = {**problem.space.default, "BLOCK_M": 64, "BLOCK_N": 160, "BLOCK_K": 64, "TMA": 1, "PERSISTENT": 1}
    shape = Shape.of({"M": 256, "N": 10240, "K": 8192, "layout": "NT", "bias": 0})
    assert problem.space.check(Config.of(persistent), shape, h200) is not None  # the persistent kernel has no wide form
    assert problem.space.check(Config.of({**persistent, "PERSISTENT": 0}), shape, h200) is None


def test_gemv_configs_exist_only_for_decode_with_a_transposed_weight() -> None:
    from kerntune.model import Shape, Target
    from kerntune.tune.spec import load_spec

    problem = load_spec(str(KERNELS / "triton_gemm")).problem
    h200 = Target("triton", "nvidia", "sm_90", "NVIDIA H200", 132)

    def gemv(m: int, layout: str) -> list[dict[str, int]]:
        valid, _ = problem.space.valid_configs(
            Shape.of({"M": m, "N": 6144, "K": 4096, "layout": layout, "bias": 0}), h200
        )
        return [dict(c.items) for c in valid if dict(c.items)["GEMV"]]

    decode = gemv(1, "NT")
    assert decode and all((c["BLOCK_M"], c["SPLIT_K"], c["TMA"], c["GROUP_M"]) == (16, 1, 0, 8) for c in decode)
    assert {c["BLOCK_K"] for c in decode} >= {512, 1024, 2048} and {c["BLOCK_N"] for c in decode} >= {1, 2, 4, 8}
    assert gemv(16, "NT") == [] and gemv(1, "NN") == []  # not past 8 rows; not where B's rows run along N
    # the strips and narrow columns are the GEMV kernel's alone: no MMA tile takes them
    tiles, _ = problem.space.valid_configs(Shape.of({"M": 1, "N": 6144, "K": 4096, "layout": "NT", "bias": 0}), h200)
    assert all(c["BLOCK_N"] >= 32 and c["BLOCK_K"] <= 256 for c in (dict(t.items) for t in tiles) if not c["GEMV"])
    # one stage (how Inductor compiles a reduction) is offered to the GEMV kernel alone; the MMA forms, whose
    # loads the stages pipeline, keep 2 or more
    assert {c["num_stages"] for c in decode} == {1, 2}
    assert all(c["num_stages"] >= 2 for c in (dict(t.items) for t in tiles) if not c["GEMV"])
    # past one row, only configs whose threads load 8 or more weight elements a step (GEMV_WEIGHT_PER_THREAD);
    # at one row the 4-element ones stay (one of them, 1 x 1024 at 8 warps, led at 1x6144x4096 on the H200)
    for rows in (2, 4, 8):
        assert all(c["BLOCK_N"] * c["BLOCK_K"] >= 8 * 32 * c["num_warps"] for c in gemv(rows, "NT")), rows
    assert any((c["BLOCK_N"], c["BLOCK_K"], c["num_warps"]) == (1, 1024, 8) for c in decode)
    assert len(gemv(4, "NT")) >= 50
    seeds = [s for s in problem.space.seed_configs() if s.as_dict()["GEMV"]]
    inductor_settled = {"BLOCK_N": 1, "BLOCK_K": 2048, "num_warps": 8, "num_stages": 1}  # its coordinate descent's
    assert any(inductor_settled.items() <= s.as_dict().items() for s in seeds)
    assert seeds and all(
        problem.space.check(s, Shape.of({"M": 1, "N": 6144, "K": 4096, "layout": "NT", "bias": 0}), h200) is None
        for s in seeds
    )
