"""Calibration probes for OpenCL devices (PoCL's CPU device included): copy, triad and read-only (sum) streams of
float4, each at the best of a few work-group sizes, an FMA-rate kernel of independent chains, and the host's
submit-to-complete latency of an empty kernel."""

from __future__ import annotations

import statistics
import time
from collections.abc import Mapping
from functools import partial
from typing import Any

from kerntune.backends.base import Backend
from kerntune.devices.telemetry import Telemetry
from kerntune.measure.probes import FULL_MS, fastest

FMA_ITERS = 4096
FMA_CHAINS = 4
FMA_WIDTH = 16
"""Independent float16 chains per work-item: 64 independent multiply-adds per iteration cover the FMA latency
on every core's pipes. The probe writes ``x * m + k`` and lets the compiler contract it: ``fma()`` and
``mad()`` became library calls on PoCL's CPU device (6.3 against 159.6 GFLOP/s: benchmarks/know-why/history.md)."""

LOCAL_SIZES = (0, 64, 256)
"""Work-group sizes each stream is screened at (0: the driver's choice)."""
READ_ITEMS = 16
"""float4s each work-item of the read stream sums (the array is a multiple of 2^20 float4s: it divides)."""

_T = f"float{FMA_WIDTH}"
FMA_KERNEL = (  # written out chain by chain: an array of chains stayed in memory on PoCL (a slower probe)
    "__kernel void fma_rate(__global float* out, int iters) {\n"
    + "".join(f"    {_T} x{j} = ({_T})(get_global_id(0) + {j});\n" for j in range(FMA_CHAINS))
    + f"    const {_T} m = ({_T})(0.999f), k = ({_T})(0.001f);\n"
    + "    for (int i = 0; i < iters; i++) {\n"
    + "".join(f"        x{j} = x{j} * m + k;\n" for j in range(FMA_CHAINS))
    + "    }\n"
    + f"    {_T} s = "
    + " + ".join(f"x{j}" for j in range(FMA_CHAINS))
    + ";\n"
    + "    out[get_global_id(0)] = s.s0 + s.s1;\n}"
)

OPENCL_PROBES = f"""
__kernel void copy(__global const float4* a, __global float4* b) {{
    size_t i = get_global_id(0); b[i] = a[i];
}}
__kernel void triad(__global float4* a, __global const float4* b, __global const float4* c, float s) {{
    size_t i = get_global_id(0); a[i] = b[i] + s * c[i];
}}
__kernel void sum(__global const float4* a, __global float* out, int items) {{
    // Read-only: each work-item sums ITEMS float4s strided by the global size (coalesced) and writes one float.
    size_t stride = get_global_size(0);
    float4 acc = (float4)(0.0f);
    for (int k = 0; k < items; k++) acc += a[get_global_id(0) + k * stride];
    out[get_global_id(0)] = acc.x + acc.y + acc.z + acc.w;
}}
{FMA_KERNEL}
__kernel void empty(__global float* out) {{ }}
"""


def probe(backend: Backend, telemetry: Telemetry, payload: Mapping[str, float]) -> dict[str, object]:
    """Copy, triad and read streams, FMA rate and launch latency of an OpenCL device; rates and the raw medians
    they came from."""
    import numpy as np

    from kerntune.measure.protocol import MeasureOptions, measure
    from kerntune.model import OpenCLKernel

    warmup_ms = float(payload.get("warmup_ms", 100.0))
    n4 = max(1 << 20, int(payload["array_bytes"]) // 16)  # float4 elements per array
    host = {"a": np.zeros(n4 * 4, np.float32), "b": np.ones(n4 * 4, np.float32), "c": np.ones(n4 * 4, np.float32)}
    arrays = backend.place(host)

    def time_kernel(
        name: str, args: dict[str, Any], global_size: int, local: int | None = None, budget_ms: float = FULL_MS
    ) -> float:
        def grid(meta: Any) -> tuple[tuple[int], tuple[int] | None]:
            return (global_size,), (local,) if local else None

        kernel = OpenCLKernel(OPENCL_PROBES, name, grid)
        compiled = backend.compile(kernel, {}, {}, args)
        options = MeasureOptions(regime="warm", warmup_ms=warmup_ms, budget_ms=budget_ms)
        return measure(backend, [lambda: compiled.launch(args)], options, telemetry).median_ms

    def stream(name: str, args: dict[str, Any], global_size: int) -> tuple[float, str]:
        """The stream at the best of the driver's own work-group size and a few fixed ones."""
        return fastest(
            {
                f"local={size or 'driver'}": partial(time_kernel, name, args, global_size, size or None)
                for size in LOCAL_SIZES
                if global_size % max(size, 1) == 0
            }
        )

    copy_ms, copy_config = stream("copy", {"a": arrays["a"], "b": arrays["b"]}, n4)
    triad_ms, triad_config = stream(
        "triad", {"a": arrays["a"], "b": arrays["b"], "c": arrays["c"], "s": np.float32(3.0)}, n4
    )
    sums = backend.place({"out": np.zeros(n4 // READ_ITEMS, np.float32)})["out"]
    read_ms, read_config = stream(
        "sum", {"a": arrays["a"], "out": sums, "items": np.int32(READ_ITEMS)}, n4 // READ_ITEMS
    )
    items = int(payload.get("fma_items", 1 << 14))
    out = backend.place({"out": np.zeros(items, np.float32)})["out"]
    fma_ms = time_kernel("fma_rate", {"out": out, "iters": np.int32(FMA_ITERS)}, items)
    empty = OpenCLKernel(OPENCL_PROBES, "empty", lambda meta: ((1,), None))
    compiled = backend.compile(empty, {}, {}, {"out": out})
    walls = []
    for _ in range(200):  # host-side: submit an empty kernel and wait for it, as a program does per launch
        start = time.perf_counter()
        compiled.launch({"out": out})
        backend.synchronize()
        walls.append((time.perf_counter() - start) * 1e3)
    bytes_per_array = n4 * 16
    flops = 2.0 * FMA_WIDTH * FMA_CHAINS * FMA_ITERS * items  # a multiply-add is 2 flops per lane
    return {
        "copy_bytes_per_s": 2 * bytes_per_array / (copy_ms * 1e-3),
        "triad_bytes_per_s": 3 * bytes_per_array / (triad_ms * 1e-3),
        "read_bytes_per_s": bytes_per_array / (read_ms * 1e-3),
        "fma_flops_per_s": flops / (fma_ms * 1e-3),
        "launch_latency_ms": statistics.median(walls),
        "details": {
            "array_bytes": bytes_per_array,
            "copy_ms": copy_ms,
            "triad_ms": triad_ms,
            "read_ms": read_ms,
            "stream_configs": {"copy": copy_config, "triad": triad_config, "read": read_config},
            "fma_ms": fma_ms,
            "fma_items": items,
            "fma_iters": FMA_ITERS,
            "regime": "warm",
        },
    }
