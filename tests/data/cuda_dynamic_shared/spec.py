"""Dynamic shared memory above the 48 KB default: each block stages KB kilobytes of x in `extern __shared__`
memory, then every thread writes back elements another thread staged (y = 2x whatever KB is). KB=32 needs
nothing special; KB=96 and 200 launch only after the backend raises the kernel's dynamic shared memory limit."""

from __future__ import annotations

from typing import Any

import torch

import kerntune as kt

SOURCE = r"""
extern "C" __global__ void stage_twice(const float* __restrict__ x, float* __restrict__ y, int n) {
    extern __shared__ float tile[];
    const int per_block = KB * 256;  // floats in KB kilobytes
    const long long base = (long long)blockIdx.x * per_block;
    for (int i = threadIdx.x; i < per_block; i += blockDim.x)
        tile[i] = base + i < n ? x[base + i] : 0.0f;
    __syncthreads();
    for (int i = threadIdx.x; i < per_block; i += blockDim.x) {
        const int j = (i + 97) % per_block;  // staged by another thread
        if (base + j < n) y[base + j] = 2.0f * tile[j];
    }
}
"""


def make_inputs(shape: dict[str, Any], dtype: str, seed: int) -> dict[str, Any]:
    gen = torch.Generator().manual_seed(seed)
    n = int(shape["N"])
    return {"x": torch.rand(n, generator=gen), "y": torch.rand(n, generator=gen), "n": n}


problem = kt.Problem(
    name="cuda_dynamic_shared",
    kernel=kt.CudaKernel(
        source=SOURCE,
        name="stage_twice",
        grid=lambda m: (-(-m["N"] // (m["KB"] * 256)),),
        block=lambda m: (256,),
        shared_bytes=lambda m: m["KB"] * 1024,
    ),
    space=kt.Space(params={"KB": [32, 96, 200]}, default={"KB": 32}),
    shapes=[{"N": 1 << 24}],
    dtypes=("float32",),
    make_inputs=make_inputs,
    reference=lambda args, shape: 2.0 * args["x"].double(),
    outputs=("y",),
)
