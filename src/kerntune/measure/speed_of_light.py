"""Speed of light: a measured time against the device's calibrated ceilings (``kerntune calibrate``).

For a launch that does ``flops`` and must move ``bytes`` (the spec's cost model), the roofline's bound is
the slower of ``flops / compute rate`` and ``bytes / copy bandwidth``; a kernel at that time runs at 100% of
the roofline. The compute rate is the FMA rate, or for a cost whose ``matrix`` names a dtype the calibrated
matrix rate of that dtype (when the calibration has one; else the FMA rate, and ``compute_ceiling`` says so).
Bound class: ``memory`` or ``compute`` by which side of the ridge point its arithmetic intensity is on,
``latency`` when even the roofline time is under one launch's latency (no kernel that small can reach either
ceiling)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def speed_of_light(cost: Mapping[str, float], median_ms: float, ceilings: Mapping[str, Any]) -> dict[str, Any]:
    flops, moved = float(cost.get("flops", 0.0)), float(cost.get("bytes", 0.0))
    matrix = (ceilings.get("matrix_flops_per_s") or {}).get(str(cost.get("matrix")))
    if matrix:
        rate, ceiling = float(matrix), f"{cost['matrix']} matrix"
    else:
        rate, ceiling = float(ceilings["fma_flops_per_s"]), "FMA"
    copy = float(ceilings["copy_bytes_per_s"])
    seconds = median_ms * 1e-3
    compute_s, memory_s = flops / rate, moved / copy
    bound_s = max(compute_s, memory_s)
    if bound_s * 1e3 < float(ceilings.get("launch_latency_ms", 0.0)):
        bound = "latency"
    else:
        bound = "compute" if compute_s >= memory_s else "memory"
    return {"flops_per_s": flops / seconds, "bytes_per_s": moved / seconds, "compute_fraction": compute_s / seconds,
            "compute_ceiling": ceiling, "copy_fraction": memory_s / seconds, "roofline_fraction": bound_s / seconds,
            "bound": bound}


def describe(sol: Mapping[str, Any]) -> str:
    return (f"{sol['roofline_fraction']:.0%} of the roofline ({sol['bound']}-bound): "
            f"{sol['bytes_per_s'] / 1e9:.3g} GB/s ({sol['copy_fraction']:.0%} of copy), "
            f"{sol['flops_per_s'] / 1e9:.3g} GFLOP/s ({sol['compute_fraction']:.0%} of {sol['compute_ceiling']})")
