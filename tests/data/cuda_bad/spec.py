"""Bad input for the CUDA C++ backend, one spec: BLOCK=512 does not compile (an #error with a message), BLOCK=2048
is over every CUDA device's 1,024 threads per block, BLOCK=128 is fine. KERNTUNE_TEST_KERNEL_NAME names a kernel
the source does not define. The run must record each failure with its reason and go on."""

from __future__ import annotations

import os
from typing import Any

import torch

import kerntune as kt

SOURCE = r"""
#if BLOCK == 512
#error "BLOCK=512 is refused on purpose (a kernel that fails to compile)"
#endif
extern "C" __global__ void scale(const float* __restrict__ x, float* __restrict__ y, int n) {
    const int i = blockIdx.x * BLOCK + threadIdx.x;
    if (i < n) y[i] = 2.0f * x[i];
}
"""


def make_inputs(shape: dict[str, Any], dtype: str, seed: int) -> dict[str, Any]:
    gen = torch.Generator().manual_seed(seed)
    n = int(shape["N"])
    return {"x": torch.rand(n, generator=gen), "y": torch.empty(n), "n": n}


problem = kt.Problem(
    name="cuda_bad",
    kernel=kt.CudaKernel(
        source=SOURCE,
        name=os.environ.get("KERNTUNE_TEST_KERNEL_NAME", "scale"),
        grid=lambda m: (-(-m["N"] // m["BLOCK"]),),
        block=lambda m: (m["BLOCK"],),
    ),
    space=kt.Space(params={"BLOCK": [128, 512, 2048]}, default={"BLOCK": 128}),
    shapes=[{"N": 1 << 20}],
    dtypes=("float32",),
    make_inputs=make_inputs,
    reference=lambda args, shape: 2.0 * args["x"].double(),
    outputs=("y",),
)
