"""The float32 sum of examples/cuda_reduction, written for HIP (AMD GPUs): one launch, each block reduces its
grid-stride share (wavefront shuffles, then LDS) into a partial; the last block to arrive adds the partials in a
fixed order. The wavefront is ``warpSize`` lanes (64 on CDNA, 32 on RDNA), never a hard-coded 32. Tunables as
there: BLOCK (threads), VEC (floats per load) and ITEMS (loads per thread, which sets the grid).

The folder stands alone: the host side (grid, inputs, reference, the torch.sum baseline) is the CUDA example's,
copied, so that no example loads a file of another.

The launch side is untested on AMD hardware (none is reachable from this project's machines); the compile side
is checked on a CPU machine with hipcc (``kerntune inspect examples/hip_reduction --target gfx90a``)."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

import kerntune as kt

MAX_BLOCKS = 65536

# The kernel after block_sum is the CUDA example's, word for word: only the wavefront sum differs.
SOURCE = r"""
__device__ float block_sum(float v) {
    __shared__ float partial[32];  // one per wavefront: 1024 threads of 32 lanes at most
    for (int o = warpSize / 2; o > 0; o >>= 1) v += __shfl_down(v, o);
    const int lane = threadIdx.x % warpSize, wave = threadIdx.x / warpSize;
    if (lane == 0) partial[wave] = v;
    __syncthreads();
    v = threadIdx.x < (blockDim.x + warpSize - 1) / warpSize ? partial[lane] : 0.0f;
    if (wave == 0)
        for (int o = warpSize / 2; o > 0; o >>= 1) v += __shfl_down(v, o);
    __syncthreads();
    return v;  // complete in thread 0
}

extern "C" __global__ void reduce_sum(const float* __restrict__ x, float* __restrict__ out,
                                      float* __restrict__ partials, unsigned int* __restrict__ arrived,
                                      long long n) {
    float acc = 0.0f;
    const long long stride = (long long)gridDim.x * BLOCK * VEC;
    for (long long i = ((long long)blockIdx.x * BLOCK + threadIdx.x) * VEC; i < n; i += stride) {
        if (VEC == 4 && i + 3 < n) {
            const float4 v = *reinterpret_cast<const float4*>(x + i);
            acc += (v.x + v.y) + (v.z + v.w);
        } else if (VEC == 2 && i + 1 < n) {
            const float2 v = *reinterpret_cast<const float2*>(x + i);
            acc += v.x + v.y;
        } else {
            for (int j = 0; j < VEC; j++)
                if (i + j < n) acc += x[i + j];
        }
    }
    const float mine = block_sum(acc);
    __shared__ bool last;
    if (threadIdx.x == 0) {
        partials[blockIdx.x] = mine;
        __threadfence();  // the partial is visible before the arrival that announces it
        last = atomicAdd(arrived, 1u) == gridDim.x - 1;
    }
    __syncthreads();
    if (!last) return;
    __threadfence();
    float total = 0.0f;
    for (int b = threadIdx.x; b < gridDim.x; b += BLOCK) total += ((volatile float*)partials)[b];
    total = block_sum(total);
    if (threadIdx.x == 0) {
        out[0] = total;
        *arrived = 0u;  // ready for the next launch
    }
}
"""


def grid(meta: dict[str, Any]) -> tuple[int]:
    per_block = meta["BLOCK"] * meta["VEC"] * meta["ITEMS"]
    return (max(1, min(MAX_BLOCKS, -(-meta["N"] // per_block))),)


def make_inputs(shape: dict[str, Any], dtype: str, seed: int) -> dict[str, Any]:
    gen = torch.Generator().manual_seed(seed)
    n = int(shape["N"])
    # partials is scratch the kernel writes before it reads: random, so a kernel that read it unwritten fails the gate
    return {
        "x": torch.rand(n, generator=gen),
        "out": torch.empty(1),
        "partials": torch.rand(MAX_BLOCKS, generator=gen),
        "arrived": torch.zeros(1, dtype=torch.int32),
        "n": np.int64(n),
    }


def reference(args: dict[str, Any], shape: dict[str, Any]) -> torch.Tensor:
    return args["x"].double().sum().reshape(1)


def torch_sum(args: dict[str, Any], meta: dict[str, Any]) -> Any:
    return torch.sum(args["x"], dim=0, keepdim=True, out=args["out"])


problem = kt.Problem(
    name="hip_reduction",
    kernel=kt.HipKernel(source=SOURCE, name="reduce_sum", grid=grid, block=lambda m: (m["BLOCK"],)),
    space=kt.Space(
        params={"BLOCK": [128, 256, 512, 1024], "VEC": [1, 2, 4], "ITEMS": [1, 2, 4, 8, 16, 32]},
        default={"BLOCK": 256, "VEC": 1, "ITEMS": 1},
    ),
    shapes=[{"N": 1 << 26}],
    dtypes=("float32",),
    make_inputs=make_inputs,
    reference=reference,
    outputs=("out",),
    cost=lambda s, d: kt.Cost(flops=float(s["N"]), bytes=4.0 * s["N"]),
    baselines=[kt.Baseline("torch.sum", kernel=kt.TorchCallable(torch_sum, "torch.sum"))],
)
