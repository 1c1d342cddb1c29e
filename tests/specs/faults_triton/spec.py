"""Planted faults on the Triton backend: VARIANT 1 fails to compile, 2 writes out of bounds (an illegal
address on a GPU), 3 never returns, 4 computes wrong numbers; 0 and 5 are correct. The baseline
"oom" asks for far more memory than any device has."""

from __future__ import annotations

from typing import Any

import torch
import triton
import triton.language as tl

import kerntune as kt


@triton.jit
def add_kernel(x_ptr, y_ptr, flag_ptr, out_ptr, n, BLOCK: tl.constexpr, VARIANT: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    value = tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask)
    if VARIANT == 1:
        tl.static_assert(VARIANT == 0, "planted compile error")
    if VARIANT == 2:
        far = out_ptr + (offs.to(tl.int64) + (1 << 40))
        tl.store(far, value, mask=mask)
    if VARIANT == 3:
        spins = 0
        while tl.load(flag_ptr, volatile=True) == 0:
            spins += 1
        value += spins.to(tl.float32) * 0.0
    if VARIANT == 4:
        value += 1.0
    tl.store(out_ptr + offs, value, mask=mask)


def make_inputs(shape: dict[str, Any], dtype: str, seed: int) -> dict[str, Any]:
    gen = torch.Generator().manual_seed(seed)
    n = int(shape["N"])
    return {
        "x": torch.randn(n, generator=gen),
        "y": torch.randn(n, generator=gen),
        "flag": torch.zeros(1, dtype=torch.int32),
        "out": torch.empty(n),
        "n": n,
    }


def allocate_too_much(args: dict[str, Any], meta: dict[str, Any]) -> None:
    torch.empty(1 << 50, dtype=torch.uint8, device=args["x"].device)  # 1 PiB


problem = kt.Problem(
    name="faults_triton",
    kernel=kt.TritonKernel(add_kernel, grid=lambda m: (triton.cdiv(m["N"], m["BLOCK"]),)),
    space=kt.Space(params={"VARIANT": [0, 1, 2, 3, 4, 5], "BLOCK": [1024]}, default={"VARIANT": 0, "BLOCK": 1024}),
    shapes=[{"N": 1 << 20}],
    make_inputs=make_inputs,
    reference=lambda args, shape: args["x"].double() + args["y"].double(),
    outputs=("out",),
    baselines=[kt.Baseline("oom", kernel=kt.TorchCallable(allocate_too_much, "oom"))],
)
