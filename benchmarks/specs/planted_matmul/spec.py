"""A planted slowdown on the GPU, for checking ``kerntune ab``'s power: a bf16 4096³ Triton matmul whose
K loop runs ``EXTRA`` more iterations than it needs. The extra iterations load nothing (their masks are
false, so they add exact zeros) but still issue their matrix instructions: EXTRA = 2 of 64 iterations is
3.1% more tensor-core work, with the same result.

    kerntune ab benchmarks/specs/planted_matmul benchmarks/specs/planted_matmul              # A/A
    kerntune ab --spec benchmarks/specs/planted_matmul @EXTRA=0 @EXTRA=2 --expect loss       # planted 3%

The environment plants the same slowdown where a restart is needed to see it: ``PLANTED_EXTRA`` (read when the
spec is imported) adds that many iterations to every config. Fresh processes beside a reference the variable
leaves alone (the ``torch.matmul`` baseline, cuBLAS):

    kerntune ab --spec benchmarks/specs/planted_matmul @EXTRA=0 env:PLANTED_EXTRA=2:@EXTRA=0 \
        --reference @torch.matmul --expect loss
"""

from __future__ import annotations

import os
from typing import Any

import torch
import triton
import triton.language as tl

import kerntune as kt

# A constexpr global: Triton puts its value in the kernel's cache key, so a process with another value compiles
# its own kernel rather than loading one from the disk cache.
PLANTED_EXTRA = tl.constexpr(int(os.environ.get("PLANTED_EXTRA", "0")))


@triton.jit
def planted_matmul(
    a_ptr,
    b_ptr,
    c_ptr,
    M,
    N,
    K,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
    EXTRA: tl.constexpr,
):
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_in_group = GROUP_M * tl.cdiv(N, BLOCK_N)
    first_pid_m = (pid // num_pid_in_group) * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * K + offs_k[None, :]
    b_ptrs = b_ptr + offs_k[:, None] * N + offs_n[None, :]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K) + EXTRA + PLANTED_EXTRA):
        live = offs_k < K - k * BLOCK_K  # all false in the EXTRA iterations: zeros loaded, zeros added
        a = tl.load(a_ptrs, mask=live[None, :], other=0.0)
        b = tl.load(b_ptrs, mask=live[:, None], other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K * N
    c_ptrs = c_ptr + offs_m[:, None] * N + offs_n[None, :]
    tl.store(c_ptrs, acc.to(tl.bfloat16), mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


def make_inputs(shape: dict[str, Any], dtype: str, seed: int) -> dict[str, Any]:
    gen = torch.Generator().manual_seed(seed)
    m, n, k = int(shape["M"]), int(shape["N"]), int(shape["K"])
    return {
        "a": torch.randn(m, k, generator=gen).to(torch.bfloat16),
        "b": torch.randn(k, n, generator=gen).to(torch.bfloat16),
        "c": torch.empty(m, n, dtype=torch.bfloat16),
        "M": m,
        "N": n,
        "K": k,
    }


problem = kt.Problem(
    name="planted_matmul",
    kernel=kt.TritonKernel(
        fn=planted_matmul, grid=lambda m: (triton.cdiv(m["M"], m["BLOCK_M"]) * triton.cdiv(m["N"], m["BLOCK_N"]),)
    ),
    space=kt.Space(
        params={
            "EXTRA": [0, 2],
            "BLOCK_M": [128],
            "BLOCK_N": [256],
            "BLOCK_K": [64],
            "GROUP_M": [8],
            "num_warps": [8],
            "num_stages": [3],
        },
        default={
            "EXTRA": 0,
            "BLOCK_M": 128,
            "BLOCK_N": 256,
            "BLOCK_K": 64,
            "GROUP_M": 8,
            "num_warps": 8,
            "num_stages": 3,
        },
    ),
    shapes=[{"M": 4096, "N": 4096, "K": 4096}],
    dtypes=("bfloat16",),
    make_inputs=make_inputs,
    reference=lambda args, shape: args["a"].double() @ args["b"].double(),
    outputs=("c",),
    baselines=[
        kt.Baseline(
            "torch.matmul",
            kernel=kt.TorchCallable(lambda args, meta: torch.mm(args["a"], args["b"], out=args["c"]), "torch.matmul"),
        )
    ],
)
