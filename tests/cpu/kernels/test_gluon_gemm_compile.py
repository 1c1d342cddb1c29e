"""The Gluon GEMM cross-compiled for sm_90 with no GPU, on whatever Triton CI has: every layout, both schedules,
the bias epilogue and the K-split tail build a warp-specialized kernel (a TMA producer and wgmma consumers, with
registers handed between them) that fits the SM's shared memory, and whose wgmma is not serialised (no warp-group
arrive and wait around each HGMMA in the SASS)."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest

pytest.importorskip("triton.experimental.gluon.language.nvidia.hopper")

from kerntune.backends.triton_cross import cross_compile
from kerntune.model import Config, Shape, Target

SPEC = Path(__file__).resolve().parents[3] / "kernels" / "gluon_gemm" / "spec.py"
COOPERATIVE = {"BLOCK_N": 256, "SCHEDULE": 0, "STAGES": 3, "GROUP": 8, "RASTER_N": 0, "LOAD_REGS": 40, "MMA_REGS": 232}
PING_PONG = {**COOPERATIVE, "BLOCK_N": 128, "SCHEDULE": 1, "STAGES": 4}
SPLIT_EPILOGUE = {**COOPERATIVE, "STAGES": 4, "EPI_SPLIT": 2}
H100 = Target(backend="triton", vendor="nvidia", device_name="NVIDIA H100", arch="sm_90", compute_units=132)


def disassembled(cubin: bytes) -> str | None:
    """The cubin's SASS by the nvdisasm Triton ships, or None where this Triton ships none."""
    import subprocess
    import tempfile

    import triton

    nvdisasm = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "nvdisasm"
    if not nvdisasm.is_file():
        return None
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        return subprocess.run([str(nvdisasm), "-c", f.name], capture_output=True, text=True, check=True).stdout


def nt(m: int, n: int, k: int) -> Shape:
    return Shape.of({"M": m, "N": n, "K": k, "layout": "NT", "bias": 0})


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
        ("NT", 0, {**SPLIT_EPILOGUE, "TAIL_K": 1}),
        ("TN", 1, {**SPLIT_EPILOGUE, "TAIL_K": 1}),
        ("NN", 1, {**PING_PONG, "STAGES": 5, "EPI_SPLIT": 2, "TAIL_K": 1}),
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
    # TMA stores of C, one a half with EPI_SPLIT=2; with TAIL_K the epilogue is built twice (a whole tile, a slice)
    stores = ptx.count("cp.async.bulk.tensor.2d.global.shared")
    assert stores == consumers * config.get("EPI_SPLIT", 1) * (2 if config.get("TAIL_K") else 1)
    assert compiled.metadata.shared == pytest.approx(module.smem_bytes(config), rel=0.05)
    assert compiled.metadata.shared <= module.SMEM_LIMIT
    # A K slice counts itself in with one acq_rel atomic a consumer, after a barrier of its own warps alone.
    arrivals = len(re.findall(r"atom\.global\.gpu\.acq_rel\.add", ptx))
    assert arrivals == (consumers if config.get("TAIL_K") else 0)
    if config.get("TAIL_K"):
        threads = 128 if consumers == 2 else 256
        assert re.search(rf"bar\.sync\s+\d+, {threads};", ptx)
    # ptxas serialises wgmma where it cannot keep the accumulator in flight: a warp-group arrive and wait around
    # every HGMMA, which halves a main loop's speed. Unserialised, one arrive opens a K block's four or more.
    sass = disassembled(compiled.asm["cubin"])
    if sass is None:  # said, not passed: the checks above held, this one could not run
        pytest.skip("this Triton ships no nvdisasm: the SASS's wgmma serialisation is unchecked")
    hgmma, arrives = len(re.findall(r"\bHGMMA\.", sass)), len(re.findall(r"\bWARPGROUP\.ARRIVE\b", sass))
    assert hgmma >= 4 * arrives > 0, f"{hgmma} HGMMA under {arrives} warp-group arrives: wgmma serialised"


def test_the_space_keeps_tiles_that_do_not_fit_or_cannot_be_described_out(spec: ModuleType) -> None:
    space = spec.problem.space
    shape = nt(2048, 4096, 4096)
    assert space.check(Config.of(COOPERATIVE), shape, None) is None
    assert space.check(Config.of(PING_PONG), shape, None) is None
    assert space.check(Config.of({**COOPERATIVE, "STAGES": 4}), shape, None) == "ring and C tiles fit shared memory"
    assert space.check(Config.of(SPLIT_EPILOGUE), shape, None) is None  # half the C buffer makes room
    assert space.check(Config.of({**SPLIT_EPILOGUE, "STAGES": 5}), shape, None) is not None
    too_wide = space.check(Config.of({**PING_PONG, "BLOCK_N": 256, "STAGES": 2}), shape, None)
    assert too_wide is not None and too_wide.startswith("ping-pong")
    odd = Shape.of({"M": 16, "N": 50257, "K": 768, "layout": "NN", "bias": 0})  # a vocabulary: no TMA row pitch
    assert space.check(Config.of(COOPERATIVE), odd, None) == "TMA: every row pitch a multiple of 16 bytes"


def test_the_tail_split_takes_whole_waves_first_and_leaves_one_wave_of_half_tiles(spec: ModuleType) -> None:
    first = spec.tail_columns(1024, 14336, 256, 132)  # 448 tiles of 128x256: 3 full waves and 52 left over
    assert first == 49 * 256  # 8 x 49 = 392 tiles fill three waves
    assert 8 * -(-(14336 - first) // 128) <= 132  # the rest, 112 tiles of 128x128, is one wave
    assert spec.tail_columns(2048, 4096, 256, 132) is None  # 256 tiles: the half tiles would outlast a wave
    assert spec.tail_columns(4096, 4096, 256, 132) is None
    assert spec.tail_columns(1024, 4096, 256, 132) is None  # under one wave
    assert spec.tail_columns(1024, 16896, 256, 132) is None  # 528 tiles fill four waves exactly
    assert spec.tail_columns(1024, 14336, 128, 132) is None  # 128-wide tiles do not split
    assert spec.tail_columns(1024, 4352, 256, 132) == 4096  # 136 tiles: 128 whole, then 16 half tiles
    assert spec.tail_columns(1024, 2176, 128, 132) is None  # the same at 128 wide: 64-wide halves are untested
    space, tail = spec.problem.space, Config.of({**SPLIT_EPILOGUE, "TAIL_SPLIT": 1})
    assert space.check(tail, nt(1024, 14336, 4096), H100) is None
    assert space.check(tail, nt(2048, 4096, 4096), H100) == "TAIL_SPLIT only where the last wave of tiles is split"


@pytest.mark.parametrize(("layout", "bias"), [("NT", 1), ("NN", 0), ("TN", 1)])
def test_the_tail_splits_two_launches_cover_every_column_once(
    spec: ModuleType, monkeypatch: pytest.MonkeyPatch, layout: str, bias: int
) -> None:
    """The host side of TAIL_SPLIT on the CPU: each launch is replaced by the product on its slices, so the whole
    result is right only where the two launches' columns of B, C and the bias meet exactly."""
    import torch

    widths: list[int] = []

    def product(a, b, c, bias_, bn, meta):  # type: ignore[no-untyped-def]
        widths.append(bn)
        c.copy_(a @ b + (0 if bias_ is None else bias_))
        return bn

    monkeypatch.setattr(spec, "_sm_count", lambda device: 132)
    monkeypatch.setattr(spec, "_launch", product)
    m, n, k = 1024, 4352, 64  # 136 tiles of 128x256: 4,096 columns first, then 256 as 128-wide tiles
    g = torch.Generator().manual_seed(0)
    a = torch.randn(k, m, generator=g).t() if layout[0] == "T" else torch.randn(m, k, generator=g)
    b = torch.randn(n, k, generator=g).t() if layout[1] == "T" else torch.randn(k, n, generator=g)
    vector = torch.randn(n, generator=g) if bias else None
    c = torch.full((m, n), float("nan"))
    assert spec.run_gemm(a, b, c, vector, {**SPLIT_EPILOGUE, "TAIL_SPLIT": 1}) == 256
    assert widths == [256, 128]
    torch.testing.assert_close(c, a @ b + (0 if vector is None else vector))


def test_the_k_split_tail_cuts_the_last_wave_into_slices_one_an_sm(spec: ModuleType) -> None:
    full, rest, parts = spec.tail_parts(1024, 14336, 4096, 256, 132)  # 448 tiles: 3 waves and 52 left over
    assert (full, rest, parts) == (396, 52, 2)  # 104 slices on 132 SMs
    assert spec.tail_parts(2048, 32000, 2048, 256, 132) == (1980, 20, 6)  # 2000 tiles: 15 waves, 20 left
    assert spec.tail_parts(4096, 4096, 4096, 256, 132)[2] == 1  # 116 left over: no room for a second slice
    assert spec.tail_parts(1024, 16896, 4096, 256, 132) == (528, 0, 1)  # whole waves
    assert spec.tail_parts(384, 1024, 128, 256, 132) == (0, 12, 2)  # 12 tiles, but K holds two blocks
    assert spec.tail_parts(384, 1024, 4096, 256, 132) == (0, 12, spec.MAX_TAIL_PARTS)
    space, cut = spec.problem.space, Config.of({**SPLIT_EPILOGUE, "TAIL_K": 1})
    assert space.check(cut, nt(1024, 14336, 4096), H100) is None
    assert space.check(cut, nt(4096, 4096, 4096), H100) == "TAIL_K only where the last wave of tiles is cut along K"
    assert space.check(cut, nt(1024, 14336, 4096), None) is not None  # no device, no SM count: never admitted
    both = Config.of({**SPLIT_EPILOGUE, "TAIL_K": 1, "TAIL_SPLIT": 1})
    assert space.check(both, nt(1024, 14336, 4096), H100) == "one tail lever at a time"
