"""A tiled shared-memory fp32 matmul in CUDA C++ (C = A·B, row-major), compiled at run time by NVRTC.
Tunables: TILE (the block's output tile edge and the K step), WPT (rows each thread computes), VEC (adjacent
columns each thread computes: a register tile whose shared-memory reads are consecutive) and UNROLL (the
inner K loop's unroll factor). Timed beside torch.matmul (fp32, TF32 off: torch's default for matmul)."""

from __future__ import annotations

from typing import Any

import torch

import kerntune as kt

SOURCE = r"""
#define DO_PRAGMA(x) _Pragma(#x)
#define UNROLL_BY(n) DO_PRAGMA(unroll n)

extern "C" __global__ void matmul(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                                  int M, int N, int K) {
    __shared__ float As[TILE][TILE + 1];  // +1: a column read of As does not hit one bank TILE times
    __shared__ float Bs[TILE][TILE];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int threads = blockDim.x * blockDim.y, tid = ty * blockDim.x + tx;
    const int row0 = blockIdx.y * TILE, col0 = blockIdx.x * TILE;
    float acc[WPT][VEC];
    for (int w = 0; w < WPT; w++)
        for (int v = 0; v < VEC; v++) acc[w][v] = 0.0f;
    for (int k0 = 0; k0 < K; k0 += TILE) {
        for (int i = tid; i < TILE * TILE; i += threads) {
            const int r = i / TILE, c = i % TILE;
            As[r][c] = (row0 + r < M && k0 + c < K) ? A[(size_t)(row0 + r) * K + k0 + c] : 0.0f;
            Bs[r][c] = (k0 + r < K && col0 + c < N) ? B[(size_t)(k0 + r) * N + col0 + c] : 0.0f;
        }
        __syncthreads();
        UNROLL_BY(UNROLL)
        for (int k = 0; k < TILE; k++) {
            float b[VEC];
            for (int v = 0; v < VEC; v++) b[v] = Bs[k][tx * VEC + v];
            for (int w = 0; w < WPT; w++) {
                const float a = As[ty * WPT + w][k];
                for (int v = 0; v < VEC; v++) acc[w][v] += a * b[v];
            }
        }
        __syncthreads();
    }
    for (int w = 0; w < WPT; w++) {
        const int r = row0 + ty * WPT + w;
        for (int v = 0; v < VEC; v++) {
            const int c = col0 + tx * VEC + v;
            if (r < M && c < N) C[(size_t)r * N + c] = acc[w][v];
        }
    }
}
"""


def grid(meta: dict[str, Any]) -> tuple[int, int]:
    return (-(-meta["N"] // meta["TILE"]), -(-meta["M"] // meta["TILE"]))


def block(meta: dict[str, Any]) -> tuple[int, int]:
    return (meta["TILE"] // meta["VEC"], meta["TILE"] // meta["WPT"])


def make_inputs(shape: dict[str, Any], dtype: str, seed: int) -> dict[str, Any]:
    gen = torch.Generator().manual_seed(seed)
    m, n, k = int(shape["M"]), int(shape["N"]), int(shape["K"])
    return {
        "a": torch.randn((m, k), generator=gen),
        "b": torch.randn((k, n), generator=gen),
        "c": torch.empty((m, n)),
        "M": m,
        "N": n,
        "K": k,
    }


def reference(args: dict[str, Any], shape: dict[str, Any]) -> torch.Tensor:
    return args["a"].double() @ args["b"].double()


def torch_matmul(args: dict[str, Any], meta: dict[str, Any]) -> Any:
    return torch.matmul(args["a"], args["b"], out=args["c"])


def threads_fit(c: dict[str, Any]) -> bool:
    threads = (c["TILE"] // c["VEC"]) * (c["TILE"] // c["WPT"])
    return 32 <= threads <= 1024


problem = kt.Problem(
    name="cuda_matmul",
    kernel=kt.CudaKernel(source=SOURCE, name="matmul", grid=grid, block=block),
    space=kt.Space(
        params={"TILE": [16, 32, 64], "WPT": [1, 2, 4, 8], "VEC": [1, 2, 4], "UNROLL": [1, 4, 16]},
        constraints=[
            kt.Constraint(threads_fit, "32 to 1024 threads per block"),
            kt.Constraint(lambda c: c["UNROLL"] <= c["TILE"], "UNROLL <= TILE"),
        ],
        default={"TILE": 32, "WPT": 4, "VEC": 1, "UNROLL": 4},
    ),
    shapes=[{"M": 2048, "N": 2048, "K": 2048}],
    dtypes=("float32",),
    make_inputs=make_inputs,
    reference=reference,
    outputs=("c",),
    cost=lambda s, d: kt.Cost(
        flops=2.0 * s["M"] * s["N"] * s["K"], bytes=4.0 * (s["M"] * s["K"] + s["K"] * s["N"] + s["M"] * s["N"])
    ),
    baselines=[kt.Baseline("torch.matmul", kernel=kt.TorchCallable(torch_matmul, "torch.matmul"))],
)
