"""Sum of a float32 vector as a Vulkan compute shader, tuned on any Vulkan device (Mesa's lavapipe on a CPU).

Each workgroup of WG invocations sums ITEMS elements per invocation (strided by the whole dispatch, so loads
coalesce), reduces through shared memory and writes its partial; the last group to arrive (an atomic counter)
sums the partials and writes the total, so one dispatch gives the answer. Tunables: WG (the local size, a
specialization constant), ITEMS and VEC (``#define``s; VEC 4 loads a vec4 per item, 16 bytes, the leftover
N % 4 elements summed by the first invocation). The default is the shader a user writes first: 64
invocations, one element each.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import kerntune as kt

SOURCE = r"""
#version 450
layout(local_size_x_id = 100) in;
layout(constant_id = 0) const uint WG_SIZE = 64;
#if VEC == 4
#define ELEMENT vec4
#else
#define ELEMENT float
#endif
layout(std430, set = 0, binding = 0) readonly buffer X { ELEMENT x[]; };
layout(std430, set = 0, binding = 1) writeonly buffer R { float result[]; };
layout(std430, set = 0, binding = 2) coherent buffer P { float partials[]; };
layout(std430, set = 0, binding = 3) coherent buffer C { uint arrived; };
layout(push_constant) uniform Args { uint n; };
shared float scratch[WG_SIZE];
shared bool last;

void tree() {  // scratch[0] = the sum of scratch[0 .. WG_SIZE)
    for (uint s = WG_SIZE / 2; s > 0; s >>= 1) {
        if (gl_LocalInvocationID.x < s) scratch[gl_LocalInvocationID.x] += scratch[gl_LocalInvocationID.x + s];
        barrier();
    }
}

void main() {
    uint lid = gl_LocalInvocationID.x;
    uint stride = gl_NumWorkGroups.x * WG_SIZE;
    uint i = gl_WorkGroupID.x * WG_SIZE + lid;
    float acc = 0.0;
#if VEC == 4
    uint n4 = n / 4u;  // whole vec4s; the n % 4 left over are the first invocation's
    vec4 acc4 = vec4(0.0);
    for (uint k = 0; k < ITEMS; ++k, i += stride) {
        if (i < n4) acc4 += x[i];
    }
    acc = (acc4.x + acc4.y) + (acc4.z + acc4.w);
    if (gl_WorkGroupID.x == 0u && lid < n % 4u) acc += x[n4][lid];
#else
    for (uint k = 0; k < ITEMS; ++k, i += stride) {
        if (i < n) acc += x[i];
    }
#endif
    scratch[lid] = acc;
    barrier();
    tree();
    if (lid == 0) {  // publish this group's partial, then count it: the last group to arrive sums them all
        partials[gl_WorkGroupID.x] = scratch[0];
        memoryBarrierBuffer();
        last = atomicAdd(arrived, 1u) == gl_NumWorkGroups.x - 1u;
    }
    barrier();
    if (last) {
        memoryBarrierBuffer();
        float total = 0.0;
        for (uint g = lid; g < gl_NumWorkGroups.x; g += WG_SIZE) total += partials[g];
        scratch[lid] = total;
        barrier();
        tree();
        if (lid == 0) {
            result[0] = scratch[0];
            arrived = 0u;  // ready for the next launch
        }
    }
}
"""


def groups(meta: Any) -> int:
    per_group = int(meta["WG"]) * int(meta["ITEMS"])
    items = int(meta["N"]) // int(meta["VEC"]) if int(meta["VEC"]) > 1 else int(meta["N"])
    return max(1, (items + per_group - 1) // per_group)


def make_inputs(shape: dict[str, Any], dtype: str, seed: int) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    n = int(shape["N"])
    # partials is scratch the shader writes before it reads: random, so one that read it unwritten fails the gate;
    # room for the most groups (32 invocations, one item each). arrived counts groups and must start at 0.
    return {
        "x": rng.random(n).astype(np.float32),
        "out": np.empty(1, np.float32),
        "partials": rng.random((n + 31) // 32).astype(np.float32),
        "arrived": np.zeros(1, np.uint32),
        "n": np.uint32(n),
    }


def reference(args: dict[str, Any], shape: dict[str, Any]) -> np.ndarray:
    return np.array([args["x"].astype(np.float64).sum()])


def cost(shape: dict[str, Any], dtype: str) -> kt.Cost:
    return kt.Cost(flops=float(shape["N"]), bytes=4.0 * float(shape["N"]))


problem = kt.Problem(
    name="vulkan_reduction",
    kernel=kt.VulkanKernel(
        source=SOURCE,
        entry="main",
        name="reduce_sum",
        workgroup=lambda meta: (int(meta["WG"]), 1, 1),
        dispatch=lambda meta: (groups(meta), 1, 1),
        constants={"WG": 0},
    ),
    space=kt.Space(
        params={"WG": [32, 64, 128, 256, 512], "ITEMS": [1, 2, 4, 8, 16, 32, 64], "VEC": [1, 4]},
        default={"WG": 64, "ITEMS": 1, "VEC": 1},
    ),
    shapes=[{"N": 1 << 22}],
    dtypes=["float32"],
    make_inputs=make_inputs,
    reference=reference,
    outputs=["out"],
    cost=cost,
)
