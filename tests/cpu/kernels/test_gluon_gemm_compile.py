"""The Gluon GEMM cross-compiled for sm_90 with no GPU, on whatever Triton CI has: every layout, both schedules
and the bias epilogue build a warp-specialized kernel (a TMA producer and wgmma consumers, with registers handed
between them) that fits the SM's shared memory."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

pytest.importorskip("triton.experimental.gluon.language.nvidia.hopper")

from kerntune.backends.triton_cross import cross_compile
from kerntune.model import Config, Shape

SPEC = Path(__file__).resolve().parents[3] / "kernels" / "gluon_gemm" / "spec.py"
COOPERATIVE = {"BLOCK_N": 256, "SCHEDULE": 0, "STAGES": 3, "GROUP": 8, "RASTER_N": 0, "LOAD_REGS": 40, "MMA_REGS": 232}
PING_PONG = {**COOPERATIVE, "BLOCK_N": 128, "SCHEDULE": 1, "STAGES": 4}
SPLIT_EPILOGUE = {**COOPERATIVE, "STAGES": 4, "EPI_SPLIT": 2}


@pytest.fixture(scope="module")
def spec() -> ModuleType:
    found = importlib.util.spec_from_file_location("gluon_gemm_spec", SPEC)
    assert found is not None and found.loader is not None
    module = importlib.util.module_from_spec(found)
    sys.modules[found.name] = module  # dataclasses resolve their module by name
    found.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    ("layout", "bias", "config"),
    [
        ("NT", 0, COOPERATIVE),
        ("NN", 1, COOPERATIVE),
        ("TN", 0, COOPERATIVE),
        ("TT", 1, PING_PONG),
        ("NT", 0, PING_PONG),
        ("TN", 1, SPLIT_EPILOGUE),
        ("NN", 1, {**PING_PONG, "STAGES": 5, "EPI_SPLIT": 2}),
    ],
)
def test_every_layout_and_schedule_compiles_warp_specialized(
    spec: ModuleType, layout: str, bias: int, config: dict[str, int]
) -> None:
    module = spec
    signature, constexprs, options = module.compile_signature(layout, bias, config)
    compiled = cross_compile(module.gemm_ws_kernel, signature, constexprs, "sm_90", options)
    ttgir, ptx = compiled.asm["ttgir"], compiled.asm["ptx"]
    assert "ttg.warp_specialize" in ttgir
    assert "wgmma.mma_async" in ptx
    assert "cp.async.bulk.tensor" in ptx  # TMA loads
    assert "setmaxnreg" in ptx  # the producer gives registers to the consumers
    consumers = 2 if config["SCHEDULE"] == 1 else 1
    stores = ptx.count("cp.async.bulk.tensor.2d.global.shared")  # TMA stores of C, one a half with EPI_SPLIT=2
    assert stores == consumers * config.get("EPI_SPLIT", 1)
    assert compiled.metadata.shared == pytest.approx(module.smem_bytes(config), rel=0.05)
    assert compiled.metadata.shared <= module.SMEM_LIMIT


def test_the_space_keeps_tiles_that_do_not_fit_or_cannot_be_described_out(spec: ModuleType) -> None:
    space = spec.problem.space
    shape = Shape.of({"M": 2048, "N": 4096, "K": 4096, "layout": "NT", "bias": 0})
    assert space.check(Config.of(COOPERATIVE), shape, None) is None
    assert space.check(Config.of(PING_PONG), shape, None) is None
    assert space.check(Config.of({**COOPERATIVE, "STAGES": 4}), shape, None) == "ring and C tiles fit shared memory"
    assert space.check(Config.of(SPLIT_EPILOGUE), shape, None) is None  # half the C buffer makes room
    assert space.check(Config.of({**SPLIT_EPILOGUE, "STAGES": 5}), shape, None) is not None
    too_wide = space.check(Config.of({**PING_PONG, "BLOCK_N": 256, "STAGES": 2}), shape, None)
    assert too_wide is not None and too_wide.startswith("ping-pong")
    odd = Shape.of({"M": 16, "N": 50257, "K": 768, "layout": "NN", "bias": 0})  # a vocabulary: no TMA row pitch
    assert space.check(Config.of(COOPERATIVE), odd, None) == "TMA: every row pitch a multiple of 16 bytes"
