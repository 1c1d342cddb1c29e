"""Tiled float32 matmul as a Vulkan compute shader, tuned on any Vulkan device (Mesa's lavapipe on a CPU).

C[M×N] = A[M×K] · B[K×N], row-major. Each workgroup of TS × (TS / WPT) invocations computes a TS × TS tile of C
from TS × TS tiles of A and B staged in shared memory; each invocation computes WPT rows of its column. TS and
WPT are specialization constants (the SPIR-V itself is tuned: one module, no recompile per config) and set the
local size through the specialization ids 100 and 101. The default config is the smallest tile, one row each.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import kerntune as kt

SOURCE = r"""
#version 450
layout(local_size_x_id = 100, local_size_y_id = 101) in;
layout(constant_id = 0) const uint TS = 8;
layout(constant_id = 1) const uint WPT = 1;
layout(std430, set = 0, binding = 0) readonly buffer A { float a[]; };
layout(std430, set = 0, binding = 1) readonly buffer B { float b[]; };
layout(std430, set = 0, binding = 2) writeonly buffer C { float c[]; };
layout(push_constant) uniform Args { uint M; uint N; uint K; };
const uint RTS = TS / WPT;
shared float As[TS][TS];
shared float Bs[TS][TS];

void main() {
    uint col = gl_LocalInvocationID.x, rowg = gl_LocalInvocationID.y;
    uint gcol = gl_WorkGroupID.x * TS + col, row0 = gl_WorkGroupID.y * TS;
    float acc[WPT];
    for (uint w = 0; w < WPT; ++w) acc[w] = 0.0;
    for (uint t = 0; t < K; t += TS) {
        for (uint w = 0; w < WPT; ++w) {
            uint r = rowg + w * RTS;
            As[r][col] = a[(row0 + r) * K + t + col];
            Bs[r][col] = b[(t + r) * N + gcol];
        }
        barrier();
        for (uint k = 0; k < TS; ++k) {
            float bk = Bs[k][col];
            for (uint w = 0; w < WPT; ++w) acc[w] += As[rowg + w * RTS][k] * bk;
        }
        barrier();
    }
    for (uint w = 0; w < WPT; ++w) c[(row0 + rowg + w * RTS) * N + gcol] = acc[w];
}
"""


def make_inputs(shape: dict[str, Any], dtype: str, seed: int) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    m, n, k = int(shape["M"]), int(shape["N"]), int(shape["K"])
    return {
        "A": rng.standard_normal((m, k)).astype(np.float32),
        "B": rng.standard_normal((k, n)).astype(np.float32),
        "C": np.empty((m, n), dtype=np.float32),
        "M": np.uint32(m),
        "N": np.uint32(n),
        "K": np.uint32(k),
    }


def reference(args: dict[str, Any], shape: dict[str, Any]) -> np.ndarray:
    return args["A"].astype(np.float64) @ args["B"].astype(np.float64)


def cost(shape: dict[str, Any], dtype: str) -> kt.Cost:
    m, n, k = int(shape["M"]), int(shape["N"]), int(shape["K"])
    return kt.Cost(flops=2.0 * m * n * k, bytes=4.0 * (m * k + k * n + m * n))


problem = kt.Problem(
    name="vulkan_matmul",
    kernel=kt.VulkanKernel(
        source=SOURCE,
        entry="main",
        name="matmul",
        workgroup=lambda meta: (int(meta["TS"]), int(meta["TS"]) // int(meta["WPT"]), 1),
        dispatch=lambda meta: (int(meta["N"]) // int(meta["TS"]), int(meta["M"]) // int(meta["TS"]), 1),
        constants={"TS": 0, "WPT": 1},
    ),
    space=kt.Space(
        params={"TS": [8, 16, 32], "WPT": [1, 2, 4, 8]},
        constraints=[
            kt.Constraint(lambda c: c["WPT"] <= c["TS"], "WPT <= TS"),
            kt.Constraint(
                lambda c, s: s["M"] % c["TS"] == 0 and s["N"] % c["TS"] == 0 and s["K"] % c["TS"] == 0,
                "shape divisible by TS",
            ),
        ],
        default={"TS": 8, "WPT": 1},
    ),
    shapes=[{"M": 256, "N": 256, "K": 256}],
    dtypes=["float32"],
    make_inputs=make_inputs,
    reference=reference,
    outputs=["C"],
    cost=cost,
)
