"""The decorator form: a kernel declared with kerntune.autotune and a list of triton.Config."""

from __future__ import annotations

from typing import Any

import torch
import triton
import triton.language as tl

import kerntune as kt


@kt.autotune(
    configs=[triton.Config({"BLOCK": 128}, num_warps=4), triton.Config({"BLOCK": 256}, num_warps=8)], key=["N"]
)
@triton.jit
def scale_kernel(x_ptr, out_ptr, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < N
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0, mask=mask)


def make_inputs(shape: dict[str, Any], dtype: str, seed: int) -> dict[str, Any]:
    gen = torch.Generator().manual_seed(seed)
    n = int(shape["N"])
    return {"x": torch.randn(n, generator=gen), "out": torch.empty(n), "N": n}


problem = scale_kernel.problem(
    name="decorator_scale",
    grid=lambda META: (triton.cdiv(META["N"], META["BLOCK"]),),
    shapes=[{"N": 1000}],
    make_inputs=make_inputs,
    reference=lambda args, shape: 2.0 * args["x"].double(),
    outputs=("out",),
)
