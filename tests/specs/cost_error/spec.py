"""The vector add with a cost model that reads a shape field it does not have (a bad-input test)."""

from __future__ import annotations

from typing import Any

import numpy as np

import kerntune as kt

SOURCE = r"""
__kernel void vector_add(const int n, __global const float* a, __global const float* b, __global float* c) {
    const int base = get_group_id(0) * LS * WPT + get_local_id(0);
    for (int w = 0; w < WPT; w++) {
        const int i = base + w * LS;
        if (i < n) c[i] = a[i] + b[i];
    }
}
"""


def make_inputs(shape: dict[str, Any], dtype: str, seed: int) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    n = int(shape["N"])
    return {
        "n": np.int32(n),
        "a": rng.standard_normal(n).astype(np.float32),
        "b": rng.standard_normal(n).astype(np.float32),
        "c": np.empty(n, dtype=np.float32),
    }


def reference(args: dict[str, Any], shape: dict[str, Any]) -> np.ndarray:
    return args["a"].astype(np.float64) + args["b"].astype(np.float64)


def grid(meta: dict[str, Any]) -> tuple[tuple[int], tuple[int]]:
    per_group = meta["LS"] * meta["WPT"]
    groups = -(-meta["N"] // per_group)
    return (groups * meta["LS"],), (meta["LS"],)


problem = kt.Problem(
    name="cost_error",
    kernel=kt.OpenCLKernel(source=SOURCE, name="vector_add", grid=grid),
    space=kt.Space(params={"LS": [16, 64, 256], "WPT": [1, 4, 16]}, default={"LS": 64, "WPT": 1}),
    shapes=[{"N": 1 << 22}],
    dtypes=("float32",),
    make_inputs=make_inputs,
    reference=reference,
    outputs=("c",),
    cost=lambda s, d: kt.Cost(flops=float(s["BATCH"]), bytes=0.0),  # planted: no such shape field
)
