"""Planted faults on the OpenCL backend: VARIANT 1 fails to compile, 2 never returns, 3 computes wrong
numbers, 4 writes far out of bounds (a segfault on PoCL's CPU device); 0 and 5 are correct."""

from __future__ import annotations

from typing import Any

import numpy as np

import kerntune as kt

SOURCE = r"""
__kernel void add(const int n, __global const float* a, __global const float* b,
                  __global volatile int* flag, __global float* c) {
    const int i = get_global_id(0);
#if VARIANT == 1
    this is not OpenCL C;
#endif
#if VARIANT == 2
    while (flag[0] == 0) { }
#endif
    if (i >= n) return;
#if VARIANT == 3
    c[i] = a[i] + b[i] + 1.0f;
#elif VARIANT == 4
    c[i + (1L << 40)] = a[i] + b[i];
#else
    c[i] = a[i] + b[i];
#endif
}
"""


def make_inputs(shape: dict[str, Any], dtype: str, seed: int) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    n = int(shape["N"])
    return {
        "n": np.int32(n),
        "a": rng.standard_normal(n).astype(np.float32),
        "b": rng.standard_normal(n).astype(np.float32),
        "flag": np.zeros(1, dtype=np.int32),
        "c": np.empty(n, dtype=np.float32),
    }


problem = kt.Problem(
    name="faults_opencl",
    kernel=kt.OpenCLKernel(SOURCE, "add", grid=lambda m: ((-(-m["N"] // m["LS"]) * m["LS"],), (m["LS"],))),
    space=kt.Space(params={"VARIANT": [0, 1, 2, 3, 4, 5], "LS": [64]}, default={"VARIANT": 0, "LS": 64}),
    shapes=[{"N": 1 << 16}],
    make_inputs=make_inputs,
    reference=lambda args, shape: args["a"].astype(np.float64) + args["b"].astype(np.float64),
    outputs=("c",),
)
