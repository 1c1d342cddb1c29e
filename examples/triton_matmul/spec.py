"""A first Triton spec: C[M×N] = A[M×K] · B[K×N] in fp16 or bf16, fp32 accumulation, tuned over its tile sizes.

    kerntune tune examples/triton_matmul --shape M=1024,N=1024,K=1024
    kerntune tune examples/triton_matmul --dtype float16 --shape M=64,N=64,K=64   # a CPU: Triton's interpreter

A spec names the kernel, the space of its parameters, the rules a config must keep, how to make inputs and the
exact answer, and the library call timed beside it (``torch.mm``). The tuner times every config it tries against
that baseline and gates each one against the float64 reference first. On a CPU the interpreter checks
correctness (``--dtype float16``: it mishandles bf16 loads) and no timing is claimed.

The GEMM kerntune ships for real programs (split-K, TMA, persistent and matrix-vector forms, serving
``aten::mm``) is ``kernels/triton_gemm``.
"""

from __future__ import annotations

import os
from typing import Any

import torch
import triton
import triton.language as tl

import kerntune as kt


@triton.jit
def matmul_kernel(
    a_ptr,
    b_ptr,
    c_ptr,
    M,
    N,
    K,
    stride_am,
    stride_ak,
    stride_bk,
    stride_bn,
    stride_cm,
    stride_cn,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
):
    """One program computes one BLOCK_M×BLOCK_N tile of C, walking K a BLOCK_K strip at a time."""
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for _ in range(0, K // BLOCK_K):
        a = tl.load(a_ptrs, mask=offs_m[:, None] < M, other=0.0)
        b = tl.load(b_ptrs, mask=offs_n[None, :] < N, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16}


def make_inputs(shape: dict[str, Any], dtype: str, seed: int) -> dict[str, Any]:
    # The interpreter (TRITON_INTERPRET=1) reads host tensors; a GPU run draws its operands on the device.
    device = "cuda" if torch.cuda.is_available() and os.environ.get("TRITON_INTERPRET", "0") != "1" else "cpu"
    gen = torch.Generator(device=device).manual_seed(seed)
    m, n, k, t = int(shape["M"]), int(shape["N"]), int(shape["K"]), DTYPES[dtype]
    return {
        "a": torch.randn((m, k), generator=gen, device=device).to(t),
        "b": torch.randn((k, n), generator=gen, device=device).to(t),
        "c": torch.empty((m, n), dtype=t, device=device),
    }


def torch_mm(args: dict[str, Any], meta: dict[str, Any]) -> Any:
    return torch.mm(args["a"], args["b"], out=args["c"])


def launch(fn: Any, args: dict[str, Any], meta: dict[str, Any]) -> Any:
    a, b, c = args["a"], args["b"], args["c"]
    (m, k), n = a.shape, b.shape[1]
    grid = (triton.cdiv(m, meta["BLOCK_M"]), triton.cdiv(n, meta["BLOCK_N"]))
    return fn[grid](
        a, b, c, m, n, k, *a.stride(), *b.stride(), *c.stride(),
        BLOCK_M=meta["BLOCK_M"], BLOCK_N=meta["BLOCK_N"], BLOCK_K=meta["BLOCK_K"],
        num_warps=meta["num_warps"], num_stages=meta["num_stages"],
    )  # fmt: skip


problem = kt.Problem(
    name="matmul_example",
    kernel=kt.TritonKernel(fn=matmul_kernel, grid=lambda meta: (1,), launch=launch),
    space=kt.Space(
        params={
            "BLOCK_M": [16, 32, 64, 128],
            "BLOCK_N": [32, 64, 128, 256],
            "BLOCK_K": [32, 64, 128],
            "num_warps": [2, 4, 8],
            "num_stages": [2, 3, 4],
        },
        constraints=[
            kt.Constraint(lambda c, s: s["K"] % c["BLOCK_K"] == 0, "K divisible by BLOCK_K"),
            kt.Constraint(lambda c: c["BLOCK_M"] * c["BLOCK_N"] // (32 * c["num_warps"]) <= 128, "accumulator fits"),
        ],
        default={"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "num_warps": 4, "num_stages": 3},
    ),
    shapes=[{"M": 1024, "N": 1024, "K": 1024}],
    dtypes=("bfloat16", "float16"),
    make_inputs=make_inputs,
    reference=lambda args, shape: args["a"].double() @ args["b"].double(),
    outputs=("c",),
    cost=lambda s, d: kt.Cost(flops=2.0 * s["M"] * s["N"] * s["K"], matrix=d),
    baselines=[kt.Baseline("torch.mm", kernel=kt.TorchCallable(torch_mm, "torch.mm"))],
)
