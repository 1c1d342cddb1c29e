"""The GEMM specs beyond the Triton family on a real Hopper GPU: the Gluon warp-specialized kernel right at every
layout, schedule, odd edge and bias, with and without the tail levers, the same bits on every relaunch;
cuBLASLt's algorithms through nvmath-python right, and its served launcher right on fresh operands without
re-planning."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.gpu
if not torch.cuda.is_available() or torch.cuda.get_device_capability()[0] != 9:
    pytest.skip("needs a Hopper GPU (sm_90)", allow_module_level=True)

KERNELS = Path(__file__).resolve().parents[3] / "kernels"
COOPERATIVE = {"BLOCK_N": 256, "SCHEDULE": 0, "STAGES": 3, "GROUP": 8, "RASTER_N": 0, "LOAD_REGS": 40, "MMA_REGS": 232}
PING_PONG = {**COOPERATIVE, "BLOCK_N": 128, "SCHEDULE": 1, "STAGES": 4}
SPLIT_EPILOGUE = {**COOPERATIVE, "STAGES": 4, "EPI_SPLIT": 2}  # C stored in two halves: a fourth ring stage


def load(name: str) -> ModuleType:
    found = importlib.util.spec_from_file_location(f"{name}_gpu_test", KERNELS / name / "spec.py")
    assert found is not None and found.loader is not None
    module = importlib.util.module_from_spec(found)
    sys.modules[found.name] = module  # dataclasses resolve their module by name
    found.loader.exec_module(module)
    return module


def error_of(spec: ModuleType, args: dict, shape: dict) -> float:  # type: ignore[type-arg]
    ref = spec.problem.reference(args, shape)
    return float((args["c"].double() - ref).norm() / ref.norm())


@pytest.mark.parametrize(
    "config",
    [
        COOPERATIVE,
        PING_PONG,
        {**COOPERATIVE, "BLOCK_N": 128, "STAGES": 6, "RASTER_N": 1},
        SPLIT_EPILOGUE,
        {**PING_PONG, "STAGES": 5, "EPI_SPLIT": 2},
        {**SPLIT_EPILOGUE, "TAIL_SPLIT": 1},  # two launches where the last wave splits (the last shape)
        # The last wave cut along K (132 SMs): 128x256 tiles at 384x1024 (8 slices) and 1000x14000 (3); 128x128
        # at 1000x3000 (2) and 384x1024 (5); ping-pong's slices go to either consumer.
        {**SPLIT_EPILOGUE, "TAIL_K": 1},
        {**COOPERATIVE, "BLOCK_N": 128, "STAGES": 5, "TAIL_K": 1},
        {**PING_PONG, "STAGES": 5, "EPI_SPLIT": 2, "TAIL_K": 1},
    ],
)
@pytest.mark.parametrize(
    "shape",
    [
        {"M": 1000, "N": 3000, "K": 2048, "layout": "NN", "bias": 1},  # edges in M and N, K not a tile multiple
        {"M": 2048, "N": 2048, "K": 4096, "layout": "TN", "bias": 0},
        {"M": 384, "N": 1024, "K": 1000, "layout": "TT", "bias": 1},
        {"M": 4096, "N": 4096, "K": 4096, "layout": "NT", "bias": 0},
        # 440 tiles of 128x256 on 132 SMs: with TAIL_SPLIT the first 12,544 columns, then 96 tiles of 128x128
        {"M": 1000, "N": 14000, "K": 1000, "layout": "NN", "bias": 1},
    ],
)
def test_the_gluon_gemm_is_right_and_repeatable(shape: dict, config: dict) -> None:  # type: ignore[type-arg]
    spec = load("gluon_gemm")
    args = spec.problem.make_inputs(shape, "bfloat16", 7)
    args["c"].fill_(float("nan"))  # an unwritten element fails
    spec.launch(None, args, config)
    first = args["c"].clone()
    assert error_of(spec, args, shape) < 1e-2, (shape, config)
    for _ in range(5):
        args["c"].fill_(float("nan"))
        spec.launch(None, args, config)
        assert torch.equal(first, args["c"]), (shape, config, "a relaunch wrote another result")


@pytest.mark.parametrize("bias", [0, 1])
def test_cublaslt_algorithms_are_right_and_served_on_fresh_operands(bias: int) -> None:
    spec = load("cublaslt_gemm")
    shape = {"M": 512, "N": 4096, "K": 2048, "layout": "NT", "bias": bias}
    args = spec.problem.make_inputs(shape, "bfloat16", 3)
    for rank in (0, 1, 2):
        args["c"].fill_(float("nan"))
        spec.launch(args, {"ALGO": rank})
        assert error_of(spec, args, shape) < 1e-2, rank
    op = "aten::addmm" if bias else "aten::mm"
    launcher = spec.served_prepare(op, shape, {"ALGO": 1})
    for seed in (11, 12):  # the second call re-points the first call's plan
        fresh = spec.problem.make_inputs(shape, "bfloat16", seed)
        call = (fresh["bias"], fresh["a"], fresh["b"]) if bias else (fresh["a"], fresh["b"])
        fresh["c"] = launcher(call, {})
        assert error_of(spec, fresh, shape) < 1e-2, seed
