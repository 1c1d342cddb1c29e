"""A Vulkan shader with one fault per config, for the isolation tests: MODE 0 is right, 1 does not compile,
2 computes the wrong thing, 3 never finishes (loops on a bound no input reaches, read from memory and storing on every
pass, so no compiler may drop them). The tuner must record each as its own failure and still find the right config."""

from __future__ import annotations

from typing import Any

import numpy as np

import kerntune as kt

SOURCE = r"""
#version 450
layout(local_size_x_id = 100) in;
layout(std430, set = 0, binding = 0) readonly buffer A { float a[]; };
layout(std430, set = 0, binding = 1) buffer C { float c[]; };
layout(push_constant) uniform Args { uint n; };
void main() {
    uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * 64u;
#if MODE != 3
    if (i >= n) return;
#endif
#if MODE == 1
    c[i] = 2.0 * a[i]   // no semicolon: a compile error
#elif MODE == 2
    c[i] = 3.0 * a[i];  // the wrong result
#elif MODE == 3
    // Runs for hours: llvmpipe (lavapipe) ends any loop after 65535 passes, so this config dispatches 2.7e8
    // invocations (dispatch, below), each looping 65535 times on a bound no input reaches, storing every pass.
    for (uint k = 0; a[i % n] < 1e30; ++k) c[i % n] = a[i % n] + float(k);
#else
    c[i] = 2.0 * a[i];
#endif
}
"""


def dispatch(meta: Any) -> tuple[int, int, int]:
    if meta["MODE"] == 3:
        return (65535, 64, 1)
    return ((int(meta["N"]) + int(meta["WG"]) - 1) // int(meta["WG"]), 1, 1)


def make_inputs(shape: dict[str, Any], dtype: str, seed: int) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    n = int(shape["N"])
    return {"a": rng.standard_normal(n).astype(np.float32), "c": np.empty(n, np.float32), "n": np.uint32(n)}


def reference(args: dict[str, Any], shape: dict[str, Any]) -> np.ndarray:
    return 2.0 * args["a"].astype(np.float64)


problem = kt.Problem(
    name="vulkan_faults",
    kernel=kt.VulkanKernel(source=SOURCE, workgroup=lambda meta: (int(meta["WG"]), 1, 1), dispatch=dispatch),
    space=kt.Space(params={"MODE": [0, 1, 2, 3], "WG": [64]}, default={"MODE": 0, "WG": 64}),
    shapes=[{"N": 4096}],
    make_inputs=make_inputs,
    reference=reference,
    outputs=["c"],
)
