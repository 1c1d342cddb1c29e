"""RMSNorm in Triton: y = x / sqrt(mean(x²) + eps) · w over the last dimension, one row per program
(BLOCK_N covers the row), tuned over warps, stages and rows per program; torch's fused
``torch.nn.functional.rms_norm`` is timed and gated beside it."""

from __future__ import annotations

from typing import Any

import torch
import triton
import triton.language as tl

import kerntune as kt

EPS = 1e-6


@triton.jit
def rmsnorm_kernel(x_ptr, w_ptr, y_ptr, M, N, eps, BLOCK_N: tl.constexpr, ROWS: tl.constexpr):
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    for r in range(ROWS):
        row = tl.program_id(0) * ROWS + r
        if row < M:
            x = tl.load(x_ptr + row * N + cols, mask=mask, other=0.0).to(tl.float32)
            inv = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / N + eps)
            tl.store(y_ptr + row * N + cols, (x * inv * w).to(y_ptr.dtype.element_ty), mask=mask)


DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}


def make_inputs(shape: dict[str, Any], dtype: str, seed: int) -> dict[str, Any]:
    gen = torch.Generator().manual_seed(seed)
    m, n = int(shape["M"]), int(shape["N"])
    t = DTYPES[dtype]
    return {
        "x": torch.randn((m, n), generator=gen).to(t),
        "w": (1 + 0.1 * torch.randn(n, generator=gen)).to(t),
        "y": torch.empty((m, n), dtype=t),
        "M": m,
        "N": n,
        "eps": EPS,
    }


def reference(args: dict[str, Any], shape: dict[str, Any]) -> torch.Tensor:
    x = args["x"].double()
    return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + EPS) * args["w"].double()


def torch_rms_norm(args: dict[str, Any], meta: dict[str, Any]) -> Any:
    return torch.nn.functional.rms_norm(args["x"], (args["N"],), args["w"], EPS)


problem = kt.Problem(
    name="triton_rmsnorm",
    kernel=kt.TritonKernel(rmsnorm_kernel, grid=lambda m: (triton.cdiv(m["M"], m["ROWS"]),)),
    space=kt.Space(
        params={"ROWS": [1, 2, 4], "num_warps": [1, 2, 4, 8, 16], "num_stages": [1, 2]},
        derived={"BLOCK_N": lambda m: triton.next_power_of_2(m["N"])},
        constraints=[kt.Constraint(lambda c: c["BLOCK_N"] // (32 * c["num_warps"]) <= 64, "row fits the warps")],
        default={"ROWS": 1, "num_warps": 4, "num_stages": 1},
    ),
    shapes=[{"M": 16384, "N": 4096}],
    dtypes=("bfloat16", "float16", "float32"),
    make_inputs=make_inputs,
    reference=reference,
    outputs=("y",),
    cost=lambda s, d: kt.Cost(flops=4.0 * s["M"] * s["N"], bytes=2.0 * 2 * s["M"] * s["N"]),
    baselines=[
        kt.Baseline("torch rms_norm", kernel=kt.TorchCallable(torch_rms_norm, "F.rms_norm", returns_outputs=True))
    ],
)
