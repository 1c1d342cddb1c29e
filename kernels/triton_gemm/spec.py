"""bf16 matmul in Triton with grouped tile order (GROUP_M), split-K and a TMA (tensor-descriptor) variant,
tuned against torch (cuBLAS / hipBLASLt: ``torch.mm``, or ``torch.addmm`` with a bias, at the same layout), which
is timed and gated side by side in the same run.

C[M×N] = A[M×K] · B[K×N] (+ bias[N]), fp32 accumulation. The shape's ``layout`` names A then B: ``N`` read as
given (row-major), ``T`` the transpose of a row-major matrix; ``NT`` is what ``nn.Linear`` hands ``aten::mm``
(its weight, W.t()). ``bias`` = 1 adds a bias vector in the epilogue (``aten::addmm``). The spec serves those
operators (``serve``): ``kerntune run --table T.json -- python app.py`` runs a program's own GEMM calls on the
tuned kernel where the table has the call's key, on the library's elsewhere. SPLIT_K > 1 writes fp32 partial tiles
to a workspace, summed in a fixed order (deterministic) either by a second kernel or, with FUSED = 1, by the last
program of each tile to arrive (a per-tile counter: one launch, which decode shapes need). BLOCK_N 96, 160 or 192
is a wide tile, two power-of-two blocks sharing each A tile (``matmul_wide_kernel``, ``matmul_tma_wide_kernel``),
for tile counts that fill whole waves. TMA = 1 loads tiles through host-made tensor descriptors (Hopper and
newer), PERSISTENT = 1 walks the tiles with one program per multiprocessor, and GEMV = 1 (decode, M <= 8)
streams BLOCK_N rows of B's transpose (an ``nn.Linear`` weight's rows) BLOCK_K at a time on the vector units, a
reduction over K per output as Inductor writes a matrix-vector product.
On a CPU machine the interpreter checks correctness (use ``--dtype float16``: Triton's interpreter mishandles
bf16 loads) and no timing is claimed.

The kernels are in ``kernels.py``, their launch in ``launch.py``, the served calls in ``serve.py``. The problem keeps
the name ``triton_matmul``, so tables and reports written before it moved here still key to it. Where its seeds
and rules come from, with the runs that chose them: benchmarks/gemm/history.md.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import torch
import triton

import kerntune as kt

MODULES = {"kernels": "84b7cff7dd10c5f9", "launch": "d1bf5ab44b7f1933", "serve": "028814dd64c4f06f"}
"""The first 16 hex digits of each module's sha256. kerntune's spec digest, which keys the store and a served
table's entries, covers this file and the kernel function only; pinning the modules here makes any change to them
change this file, so a table tuned on other kernels never matches. A module that no longer matches refuses to
load."""


def _module(name: str) -> ModuleType:
    """A module of this folder, imported as part of a package named after the folder's path: the spec loaders
    import this file alone, and two copies of the folder (another version of the spec) keep their own kernels."""
    folder = Path(__file__).resolve().parent
    path = folder / f"{name}.py"
    digest = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    if digest != MODULES[name]:
        raise ValueError(f"{path} changed since spec.py pinned it: set MODULES[{name!r}] = {digest!r} in spec.py")
    package = f"kerntune_triton_gemm_{hashlib.sha256(str(folder).encode()).hexdigest()[:12]}"
    if package not in sys.modules:
        found = importlib.util.spec_from_file_location(
            package, folder / "__init__.py", submodule_search_locations=[str(folder)]
        )
        assert found is not None and found.loader is not None  # a folder with __init__.py always loads
        sys.modules[package] = importlib.util.module_from_spec(found)
        found.loader.exec_module(sys.modules[package])
    return importlib.import_module(f"{package}.{name}")


_kernels, _launch, _serve = _module("kernels"), _module("launch"), _module("serve")
# The names benchmarks, tests and examples/triton_bmm read from the spec module.
matmul_kernel, gemv_kernel = _kernels.matmul_kernel, _kernels.gemv_kernel
launch, WIDE_N, wide_blocks = _launch.launch, _launch.WIDE_N, _launch.wide_blocks
_workspace, _workspaces = _launch._workspace, _launch._workspaces
SERVED_DTYPES, _letter = _serve.SERVED_DTYPES, _serve._letter
served_shape, served_run, served_prepare = _serve.served_shape, _serve.served_run, _serve.served_prepare


DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16}


LAYOUTS = ("NN", "NT", "TN", "TT")


def input_generator(seed: int) -> torch.Generator:
    """The seeded generator inputs are drawn from, on the device the kernel runs on. Drawing a large shape's
    operands on the host was the gate's main cost on the H200 (4096×28672×8192: 2.4 s of gate for its two seeds,
    most of it the CPU's normal sampler and the host-to-device copy); on the GPU it takes milliseconds. The
    interpreter (CPU machines, ``TRITON_INTERPRET=1``) takes host tensors."""
    on_gpu = torch.cuda.is_available() and os.environ.get("TRITON_INTERPRET", "0") != "1"
    return torch.Generator(device="cuda" if on_gpu else "cpu").manual_seed(seed)


def _randn(size: tuple[int, ...], gen: torch.Generator) -> torch.Tensor:
    return torch.randn(size, generator=gen, device=gen.device)


def _operand(rows: int, cols: int, transposed: bool, gen: torch.Generator, t: torch.dtype) -> torch.Tensor:
    """A rows×cols operand, or the transpose view of a row-major cols×rows matrix (strides (1, rows))."""
    if transposed:
        return _randn((cols, rows), gen).to(t).t()
    return _randn((rows, cols), gen).to(t)


def make_inputs(shape: dict[str, Any], dtype: str, seed: int) -> dict[str, Any]:
    gen = input_generator(seed)
    m, n, k = int(shape["M"]), int(shape["N"]), int(shape["K"])
    layout, t = str(shape.get("layout", "NN")), DTYPES[dtype]
    if layout not in LAYOUTS:
        raise ValueError(f"layout {layout!r}: one of {', '.join(LAYOUTS)}")
    return {
        "a": _operand(m, k, layout[0] == "T", gen, t),
        "b": _operand(k, n, layout[1] == "T", gen, t),
        "c": torch.empty((m, n), dtype=t, device=gen.device),
        "bias": _randn((n,), gen).to(t) if int(shape.get("bias", 0)) else None,
        "M": m,
        "N": n,
        "K": k,
    }


def reference(args: dict[str, Any], shape: dict[str, Any]) -> torch.Tensor:
    out = args["a"].double() @ args["b"].double()
    return out + args["bias"].double() if args.get("bias") is not None else out


def torch_matmul(args: dict[str, Any], meta: dict[str, Any]) -> Any:
    """The library at the same layout: ``torch.mm`` (``aten::mm``), or ``torch.addmm`` with a bias."""
    if args.get("bias") is not None:
        return torch.addmm(args["bias"], args["a"], args["b"], out=args["c"])
    return torch.mm(args["a"], args["b"], out=args["c"])


SMEM_BYTES = {"sm_80": 166912, "sm_86": 101376, "sm_89": 101376, "sm_90": 232448, "sm_100": 232448}


def smem_fits(c: dict[str, Any], s: dict[str, Any], t: kt.Target | None) -> bool:
    """Capability: the pipelined A and B tiles (and a persistent epilogue's C tile) must fit shared memory (the
    GEMV kernel keeps its strips in registers)."""
    if c.get("GEMV"):  # (configs written before GEMV existed have no such key)
        return True
    need = (c["BLOCK_M"] * c["BLOCK_K"] + c["BLOCK_K"] * c["BLOCK_N"]) * 2 * c["num_stages"]
    if c["PERSISTENT"]:
        need += c["BLOCK_M"] * c["BLOCK_N"] * 2  # the epilogue stages C in shared memory for the TMA store
    return t is None or need <= SMEM_BYTES.get(t.arch, 232448)


def splitk_when_underfilled(c: dict[str, Any], s: dict[str, Any], t: kt.Target | None) -> bool:
    """Split K only when the output tiles alone cannot fill the device."""
    if c["SPLIT_K"] == 1:
        return True
    tiles = triton.cdiv(s["M"], c["BLOCK_M"]) * triton.cdiv(s["N"], c["BLOCK_N"])
    return tiles < (t.compute_units if t else 132)


def group_matters(c: dict[str, Any], s: dict[str, Any], t: kt.Target | None) -> bool:
    """GROUP_M orders row tiles: with a single row of tiles every value runs the same schedule."""
    return c["GROUP_M"] == 8 or triton.cdiv(s["M"], c["BLOCK_M"]) > 1


def tma_supported(c: dict[str, Any], s: dict[str, Any], t: kt.Target | None) -> bool:
    """Capability: TMA descriptors exist on sm_90 and newer only, and take here no bias and A row-major (B may be
    either: a transposed B is described as the row-major matrix it transposes); split-K only fused and not
    persistent (matmul_tma_split_kernel)."""
    if not c["TMA"]:
        return True
    plain = str(s.get("layout", "NN"))[0] == "N" and not int(s.get("bias", 0))
    split = c["SPLIT_K"] == 1 or (c["FUSED"] and not c["PERSISTENT"])  # split-K only as one fused launch
    return plain and split and t is not None and t.arch.startswith(("sm_9", "sm_10", "sm_12"))


def wide_tile(c: dict[str, Any], s: dict[str, Any], t: kt.Target | None) -> bool:
    """A BLOCK_N of WIDE_N runs matmul_wide_kernel or matmul_tma_wide_kernel: one launch of data-parallel tiles
    (no split-K, not persistent), BLOCK_M 64 or more and BLOCK_K 64 or 128 (the medium shapes' tiles), and only
    where the wide tiles' count fills the waves better than the power-of-two width below it: elsewhere it is
    the same work in a second accumulator."""
    if c["BLOCK_N"] not in WIDE_N:
        return True
    if c["SPLIT_K"] != 1 or c["PERSISTENT"] or c.get("GEMV") or c["BLOCK_M"] < 64 or c["BLOCK_K"] not in (64, 128):
        return False
    slots = t.compute_units if t else 132
    narrow = wide_blocks(c["BLOCK_N"])[0]
    return wave_fill(s, c["BLOCK_M"], c["BLOCK_N"], slots) > wave_fill(s, c["BLOCK_M"], narrow, slots)


def wave_fill(s: dict[str, Any], block_m: int, block_n: int, slots: int) -> float:
    """The share of the waves' program slots that tiles of block_m × block_n fill at shape s, with ``slots``
    programs a wave (a count of 1.2 waves fills 0.6); a batch (examples/triton_bmm's ``B``) multiplies the tiles."""
    tiles = triton.cdiv(s["M"], block_m) * triton.cdiv(s["N"], block_n) * int(s.get("B", 1))
    return tiles / (slots * triton.cdiv(tiles, slots))


def gemv_form(c: dict[str, Any], s: dict[str, Any]) -> bool:
    """GEMV = 1 is the decode kernel (M <= 8, B's rows along K contiguous: layout NT) and the only form with
    BLOCK_N < 32 or BLOCK_K > 256; its fp32 partial sums (rows × BLOCK_N × BLOCK_K) stay within 64 registers a
    thread; the MMA tile's other parameters mean nothing to it and are held at one value, so each GEMV config is
    proposed once. Past one row, each thread loads at least GEMV_WEIGHT_PER_THREAD weight elements a step."""
    if not c.get("GEMV"):  # (configs written before GEMV existed have no such key)
        return c["BLOCK_N"] >= 32 and c["BLOCK_K"] <= 256
    if s["M"] > 8 or str(s.get("layout", "NN"))[1] != "T":
        return False
    rows, threads = triton.next_power_of_2(s["M"]), 32 * c["num_warps"]
    if rows > 1 and c["BLOCK_N"] * c["BLOCK_K"] < GEMV_WEIGHT_PER_THREAD * threads:
        return False
    return rows * c["BLOCK_N"] * c["BLOCK_K"] // threads <= 64 and (
        c["BLOCK_M"],
        c["GROUP_M"],
        c["SPLIT_K"],
        c["FUSED"],
        c["TMA"],
        c["PERSISTENT"],
    ) == (16, 8, 1, 0, 0, 0)


GEMV_WEIGHT_PER_THREAD = 8
"""Past one row, a GEMV config whose threads load fewer weight elements a step than this (one 16-byte load of
bf16) gets a weight layout other than the activations' (which have rows times as many elements a thread), and the
compiler converts the weight through shared memory, two barriers in every step of the K loop (the sm_90 PTX of
such configs shows it; none that loads 8 or more does, nor any at one row). Those are left out where the rows
exceed one (benchmarks/gemm/history.md, "The seeds and rules of kernels/triton_gemm")."""


def _tutorial(bm: int, bn: int, bk: int, stages: int, warps: int, **extra: int) -> dict[str, int]:
    return {
        "BLOCK_M": bm,
        "BLOCK_N": bn,
        "BLOCK_K": bk,
        "GROUP_M": 8,
        "num_stages": stages,
        "num_warps": warps,
        **extra,
    }


# Known good configs tried first where valid: the 16 of the Triton matmul tutorial's autotune list (what a user
# coming from triton.autotune carries over), TMA / persistent variants of its large tiles, and split-K over its
# large tiles (fused), the usual cure where a skinny product's output tiles alone leave SMs idle (valid only there).
SEEDS = (
    [
        _tutorial(*c)
        for c in (
            (128, 256, 64, 3, 8),
            (64, 256, 32, 4, 4),
            (128, 128, 32, 4, 4),
            (128, 64, 32, 4, 4),
            (64, 128, 32, 4, 4),
            (128, 32, 32, 4, 4),
            (64, 32, 32, 5, 2),
            (32, 64, 32, 5, 2),
            (128, 256, 128, 3, 8),
            (256, 128, 128, 3, 8),
            (256, 64, 128, 4, 4),
            (64, 256, 128, 4, 4),
            (128, 128, 128, 4, 4),
            (128, 64, 64, 4, 4),
            (64, 128, 64, 4, 4),
            (128, 32, 64, 4, 4),
        )
    ]
    + [
        _tutorial(128, 256, 64, 3, 8, TMA=1),
        _tutorial(128, 256, 64, 3, 8, TMA=1, PERSISTENT=1),
        _tutorial(128, 128, 64, 4, 4, TMA=1),
        _tutorial(128, 128, 64, 4, 4, TMA=1, PERSISTENT=1),
    ]
    + [
        _tutorial(*tile, SPLIT_K=split, FUSED=1)
        for split in (2, 4, 8)
        for tile in ((128, 128, 64, 4, 4), (128, 64, 128, 4, 4), (64, 128, 128, 4, 4), (128, 256, 64, 3, 8))
    ]
    + [
        # Decode (M <= 16, where BLOCK_M is 16 and no tile above applies): the fastest configs an interleaved
        # oracle found at 16×4096×4096, 16×4096×14336 and 16×14336×4096 (bf16), which a short search can miss.
        _tutorial(16, 32, 256, 5, 4, TMA=1, PERSISTENT=1),
        _tutorial(16, 128, 128, 5, 4),
        _tutorial(16, 64, 256, 4, 4),
        _tutorial(16, 32, 256, 4, 4, TMA=1, PERSISTENT=1),
    ]
    + [
        # max-autotune's own choices at the suite's 16- and 32-row shapes (its mm template's configs cut to M):
        # tried first, so a search times what max-autotune would pick.
        _tutorial(16, 64, 128, 5, 4),
        _tutorial(32, 128, 128, 4, 4),
        _tutorial(32, 64, 128, 5, 4),
    ]
    + [
        # Matrix-vector (GEMV, M <= 8, NT): Inductor's reduction configs for a one-row product: one output row per
        # program in a 2048-long strip at 16 warps (its "contiguous" config), 8 rows x 512 (its make_config(8, 512),
        # 16 warps), and the same with fewer warps, which put more programs on each SM. One stage, as Inductor
        # compiles every reduction; three 2-stage configs stay beside them.
        _tutorial(16, bn, bk, 1, warps, GEMV=1)
        for bn, bk, warps in (
            (1, 2048, 8),
            (1, 2048, 16),
            (1, 1024, 8),
            (1, 512, 4),
            (1, 512, 2),
            (1, 1024, 4),
            (2, 1024, 16),
            (2, 512, 2),
            (4, 256, 2),
            (8, 512, 16),
            (8, 512, 4),
            (16, 256, 4),
        )
    ]
    + [_tutorial(16, bn, bk, 2, warps, GEMV=1) for bn, bk, warps in ((8, 512, 4), (1, 1024, 4), (4, 256, 2))]
    + [
        # Wide tiles (BLOCK_N 96, 160, 192; valid where their count fills the waves better, wide_tile): the medium
        # shapes' winners (64x128x64 at 3 stages on 4 warps, plain and TMA) made wider, and the large TMA tile of
        # 128 rows at 160 and 192 columns (cuBLAS runs 168x128 tiles at 256x10240x8192).
        _tutorial(128, 160, 64, 3, 8, TMA=1),
        _tutorial(128, 160, 64, 4, 8, TMA=1),
        _tutorial(64, 160, 64, 3, 4, TMA=1),
        _tutorial(64, 96, 64, 3, 4, TMA=1),
        _tutorial(128, 192, 64, 3, 8, TMA=1),
        _tutorial(64, 160, 64, 3, 4),
        _tutorial(64, 96, 64, 3, 4),
        _tutorial(128, 160, 64, 3, 8),
        # 64x160 on TMA loads at 4 stages, the most that keep two programs on an SM: a search's pick at the medium
        # shapes 128x18944x3584, 256x10240x8192 and 512x4608x3584.
        _tutorial(64, 160, 64, 4, 4, TMA=1),
    ]
    + [
        # Fused split-K on TMA loads: the 16-row TMA winners (16x32x256 at 5 stages: one program per SM at
        # 16x4096x14336) with twice or four times the programs, and the medium shapes' 64x128 tiles.
        _tutorial(*tile, TMA=1, SPLIT_K=split, FUSED=1)
        for split in (2, 4)
        for tile in ((16, 32, 256, 5, 4), (16, 64, 256, 4, 4), (64, 128, 128, 4, 4), (64, 128, 64, 3, 4))
    ]
)


problem = kt.Problem(
    name="triton_matmul",
    kernel=kt.TritonKernel(fn=matmul_kernel, grid=lambda meta: (1,), launch=launch),
    space=kt.Space(
        params={
            "BLOCK_M": [16, 32, 64, 128, 256],
            "BLOCK_N": [1, 2, 4, 8, 16, 32, 64, 96, 128, 160, 192, 256],
            "BLOCK_K": [32, 64, 128, 256, 512, 1024, 2048],
            "GROUP_M": [1, 4, 8, 16],
            "SPLIT_K": [1, 2, 4, 8, 16],
            "FUSED": [0, 1],
            "TMA": [0, 1],
            "PERSISTENT": [0, 1],
            "GEMV": [0, 1],
            "num_warps": [2, 4, 8, 16],
            "num_stages": [1, 2, 3, 4, 5],
        },
        constraints=[
            kt.Constraint(lambda c, s: c["BLOCK_M"] <= max(16, s["M"]), "BLOCK_M <= M"),
            kt.Constraint(lambda c, s: s["K"] % (c["SPLIT_K"] * c["BLOCK_K"]) == 0, "K divisible by SPLIT_K*BLOCK_K"),
            kt.Constraint(
                lambda c: c["BLOCK_M"] * c["BLOCK_N"] // (32 * c["num_warps"]) <= 128,
                "accumulator <= 128 registers/thread",
            ),
            kt.Constraint(gemv_form, "GEMV only for M <= 8 and NT, the only form with BLOCK_N < 32 or BLOCK_K > 256"),
            kt.Constraint(
                lambda c: c.get("GEMV") or c["BLOCK_M"] >= 64 or c["num_warps"] <= 4,
                "small BLOCK_M with at most 4 warps",
            ),
            kt.Constraint(
                lambda c: c.get("GEMV") or c["BLOCK_M"] * c["BLOCK_N"] >= 64 * 64 or c["num_warps"] <= 4,
                "8 warps only for tiles of 64x64 or more",
            ),
            kt.Constraint(
                lambda c: c["num_warps"] >= 4 or c["BLOCK_M"] * c["BLOCK_N"] <= 64 * 64, "2 warps only for small tiles"
            ),
            kt.Constraint(lambda c: c.get("GEMV") or c["num_warps"] <= 8, "16 warps only for GEMV"),
            kt.Constraint(
                lambda c: c["num_stages"] <= 2 if c.get("GEMV") else c["num_stages"] >= 2,
                "GEMV with 1 or 2 stages, the MMA forms with 2 or more",
            ),
            kt.Constraint(lambda c: c["BLOCK_K"] <= 128 or c["BLOCK_M"] <= 64, "BLOCK_K 256 only for BLOCK_M <= 64"),
            kt.Constraint(group_matters, "GROUP_M varies only with several row tiles"),
            kt.Constraint(lambda c, s: c["BLOCK_M"] >= min(64, s["M"]), "BLOCK_M >= min(64, M)"),
            kt.Constraint(
                lambda c: c["BLOCK_K"] >= 64 or c["BLOCK_M"] * c["BLOCK_N"] <= 128 * 128,
                "BLOCK_K 32 only for small tiles",
            ),
            kt.Constraint(smem_fits, "shared memory fits"),
            kt.Constraint(splitk_when_underfilled, "split-K only when tiles underfill the device"),
            kt.Constraint(tma_supported, "TMA needs sm_90+"),
            kt.Constraint(lambda c: c["TMA"] or not c["PERSISTENT"], "PERSISTENT only with TMA"),
            kt.Constraint(lambda c: c["SPLIT_K"] > 1 or not c["FUSED"], "FUSED only with split-K"),
            kt.Constraint(wide_tile, "BLOCK_N 96, 160 or 192 only as a wide tile"),
        ],
        default={
            "BLOCK_M": 128,
            "BLOCK_N": 128,
            "BLOCK_K": 32,
            "GROUP_M": 8,
            "SPLIT_K": 1,
            "FUSED": 0,
            "TMA": 0,
            "PERSISTENT": 0,
            "GEMV": 0,
            "num_warps": 4,
            "num_stages": 3,
        },
        seeds=SEEDS,
    ),
    shapes=[{"M": 4096, "N": 4096, "K": 4096, "layout": "NN", "bias": 0}],
    dtypes=("bfloat16", "float16"),
    make_inputs=make_inputs,
    reference=reference,
    outputs=("c",),
    cost=lambda s, d: kt.Cost(
        flops=2.0 * s["M"] * s["N"] * s["K"],
        matrix=d,
        bytes=2.0 * (s["M"] * s["K"] + s["K"] * s["N"] + s["M"] * s["N"]),
    ),
    baselines=[kt.Baseline("torch.matmul", kernel=kt.TorchCallable(torch_matmul, "torch.matmul"))],
    serve=kt.Serve(
        ops=("aten::mm", "aten::mm.out", "aten::addmm", "aten::addmm.out"),
        shape=served_shape,
        run=served_run,
        prepare=served_prepare,
        kernel="matmul",
    ),
)
