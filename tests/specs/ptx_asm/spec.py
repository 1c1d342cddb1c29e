"""A kernel with NVIDIA inline PTX: it builds for sm_* targets and cannot build for AMD ones (inspect's
"does not compile for the target" case)."""

from __future__ import annotations

from typing import Any

import torch
import triton
import triton.language as tl

import kerntune as kt


@triton.jit
def fast_tanh_kernel(x_ptr, out_ptr, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < N
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.inline_asm_elementwise("tanh.approx.f32 $0, $1;", "=r,r", [x], dtype=tl.float32, is_pure=True, pack=1)
    tl.store(out_ptr + offs, y, mask=mask)


def make_inputs(shape: dict[str, Any], dtype: str, seed: int) -> dict[str, Any]:
    gen = torch.Generator().manual_seed(seed)
    n = int(shape["N"])
    return {"x": torch.randn(n, generator=gen), "out": torch.empty(n), "N": n}


problem = kt.Problem(
    name="ptx_tanh",
    kernel=kt.TritonKernel(fn=fast_tanh_kernel, grid=lambda meta: (triton.cdiv(meta["N"], meta["BLOCK"]),)),
    space=kt.Space(params={"BLOCK": [256, 1024], "num_warps": [4]}),
    shapes=[{"N": 4096}],
    dtypes=("float32",),
    make_inputs=make_inputs,
    reference=lambda args, shape: torch.tanh(args["x"].double()),
    outputs=("out",),
    tolerance={"float32": 1e-3},
)
