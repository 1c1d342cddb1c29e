"""Tiled float32 matmul in OpenCL C, tuned on any OpenCL device (PoCL's CPU device by default).

C[M×N] = A[M×K] · B[K×N], row-major. Tunables: TILED (local-memory tiles or plain loads), TS (tile edge),
WPT (rows computed per work-item). The default config is the naive kernel a user would write first.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import kerntune as kt

SOURCE = r"""
#define RTS (TS / WPT)
__kernel void matmul(const int M, const int N, const int K,
                     __global const float* restrict A,
                     __global const float* restrict B,
                     __global float* restrict C) {
    const int col = get_local_id(0);
    const int rowg = get_local_id(1);
    const int gcol = get_group_id(0) * TS + col;
    const int row0 = get_group_id(1) * TS;
    float acc[WPT];
    for (int w = 0; w < WPT; w++) acc[w] = 0.0f;
#if TILED
    __local float Asub[TS][TS];
    __local float Bsub[TS][TS];
    for (int t = 0; t < K; t += TS) {
        for (int w = 0; w < WPT; w++) {
            const int r = rowg + w * RTS;
            Asub[r][col] = A[(row0 + r) * K + t + col];
            Bsub[r][col] = B[(t + r) * N + gcol];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int k = 0; k < TS; k++) {
            const float b = Bsub[k][col];
            for (int w = 0; w < WPT; w++) acc[w] += Asub[rowg + w * RTS][k] * b;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
#else
    for (int k = 0; k < K; k++) {
        const float b = B[k * N + gcol];
        for (int w = 0; w < WPT; w++) acc[w] += A[(row0 + rowg + w * RTS) * K + k] * b;
    }
#endif
    for (int w = 0; w < WPT; w++) C[(row0 + rowg + w * RTS) * N + gcol] = acc[w];
}
"""


def make_inputs(shape: dict[str, Any], dtype: str, seed: int) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    m, n, k = int(shape["M"]), int(shape["N"]), int(shape["K"])
    return {
        "M": np.int32(m),
        "N": np.int32(n),
        "K": np.int32(k),
        "A": rng.standard_normal((m, k)).astype(np.float32),
        "B": rng.standard_normal((k, n)).astype(np.float32),
        "C": np.empty((m, n), dtype=np.float32),
    }


def reference(args: dict[str, Any], shape: dict[str, Any]) -> np.ndarray:
    return args["A"].astype(np.float64) @ args["B"].astype(np.float64)


def cost(shape: dict[str, Any], dtype: str) -> kt.Cost:
    m, n, k = int(shape["M"]), int(shape["N"]), int(shape["K"])
    return kt.Cost(flops=2.0 * m * n * k, bytes=4.0 * (m * k + k * n + m * n))


problem = kt.Problem(
    name="opencl_matmul",
    kernel=kt.OpenCLKernel(
        source=SOURCE,
        name="matmul",
        grid=lambda meta: ((meta["N"], meta["M"] // meta["WPT"]), (meta["TS"], meta["TS"] // meta["WPT"])),
    ),
    space=kt.Space(
        params={"TILED": [0, 1], "TS": [4, 8, 16, 32], "WPT": [1, 2, 4, 8]},
        constraints=[
            kt.Constraint(lambda c: c["WPT"] <= c["TS"], "WPT <= TS"),
            kt.Constraint(
                lambda c, s: s["M"] % c["TS"] == 0 and s["N"] % c["TS"] == 0 and s["K"] % c["TS"] == 0,
                "shape divisible by TS",
            ),
        ],
        default={"TILED": 0, "TS": 8, "WPT": 1},
    ),
    shapes=[{"M": 256, "N": 256, "K": 256}],
    dtypes=("float32",),
    make_inputs=make_inputs,
    reference=reference,
    outputs=("C",),
    cost=cost,
)
