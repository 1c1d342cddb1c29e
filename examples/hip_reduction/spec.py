"""The float32 sum of examples/cuda_reduction, written for HIP (AMD GPUs): one launch, each block reduces its
grid-stride share (wavefront shuffles, then LDS) into a partial; the last block to arrive adds the partials in a
fixed order. The wavefront is ``warpSize`` lanes (64 on CDNA, 32 on RDNA), never a hard-coded 32. Tunables as
there: BLOCK (threads), VEC (floats per load) and ITEMS (loads per thread, which sets the grid).

The launch side is untested on AMD hardware (none is reachable from this project's machines); the compile side
is checked on a CPU machine with hipcc (``kerntune inspect examples/hip_reduction --target gfx90a``)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import kerntune as kt

# The host side (grid, inputs, reference, the torch.sum baseline) is the CUDA example's, loaded by path.
_found = importlib.util.spec_from_file_location(
    "kerntune_examples_cuda_reduction", Path(__file__).resolve().parents[1] / "cuda_reduction" / "spec.py"
)
assert _found is not None and _found.loader is not None
cuda = importlib.util.module_from_spec(_found)
_found.loader.exec_module(cuda)

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

"""
# The kernel itself is the CUDA example's, word for word: only the wavefront sum above differs.
SOURCE += cuda.SOURCE[cuda.SOURCE.index('extern "C"') :]

problem = kt.Problem(
    name="hip_reduction",
    kernel=kt.HipKernel(source=SOURCE, name="reduce_sum", grid=cuda.grid, block=lambda m: (m["BLOCK"],)),
    space=kt.Space(
        params={"BLOCK": [128, 256, 512, 1024], "VEC": [1, 2, 4], "ITEMS": [1, 2, 4, 8, 16, 32]},
        default={"BLOCK": 256, "VEC": 1, "ITEMS": 1},
    ),
    shapes=[{"N": 1 << 26}],
    dtypes=("float32",),
    make_inputs=cuda.make_inputs,
    reference=cuda.reference,
    outputs=("out",),
    cost=lambda s, d: kt.Cost(flops=float(s["N"]), bytes=4.0 * s["N"]),
    baselines=[kt.Baseline("torch.sum", kernel=kt.TorchCallable(cuda.torch_sum, "torch.sum"))],
)
