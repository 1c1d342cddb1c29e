"""Speed of light: a measured time against the device's calibrated ceilings (``kerntune calibrate``).

For a launch that does ``flops`` and must move ``bytes`` (the spec's cost model), the roofline's bound is the
slower of ``flops / compute rate`` and ``bytes / memory bandwidth``; a kernel at that time runs at 100% of the
roofline. The memory bandwidth is the best the device's probes attained (copy, triad, a read-only stream:
``memory_ceiling``), so the ceiling is never more than the card was measured doing. The compute rate is the FMA
rate, or for a cost
whose ``matrix`` names a dtype the calibrated matrix rate of that dtype (when the calibration has one; else the FMA
rate, and ``compute_ceiling`` says so). Bound class: ``memory`` or ``compute`` by which side of the ridge point its
arithmetic intensity is on, ``latency`` when even the roofline time is under one launch's latency (no kernel that
small can reach either ceiling)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from kerntune.model.roofline import CeilingsRecord, CostRecord, SpeedOfLight

BandwidthKey = Literal["copy_bytes_per_s", "triad_bytes_per_s", "read_bytes_per_s"]
BANDWIDTH_PROBES: tuple[tuple[str, BandwidthKey], ...] = (
    ("copy", "copy_bytes_per_s"),
    ("triad", "triad_bytes_per_s"),
    ("read", "read_bytes_per_s"),
)


def memory_ceiling(ceilings: Mapping[str, object]) -> tuple[float, str]:
    """The bandwidth ceiling: the fastest of the calibration's probes (bytes/s) and its name."""
    rates = [(ceilings.get(key), name) for name, key in BANDWIDTH_PROBES]
    found = [(float(rate), name) for rate, name in rates if isinstance(rate, (int, float)) and rate]
    if not found:
        raise KeyError("the calibration has no bandwidth probe (copy_bytes_per_s, triad_bytes_per_s, read_bytes_per_s)")
    return max(found)


def speed_of_light(cost: CostRecord, median_ms: float, ceilings: CeilingsRecord) -> SpeedOfLight:
    flops, moved = float(cost.get("flops", 0.0)), float(cost.get("bytes", 0.0))
    matrix = (ceilings.get("matrix_flops_per_s") or {}).get(str(cost.get("matrix")))
    if matrix:
        rate, ceiling = float(matrix), f"{cost['matrix']} matrix"
    else:
        rate, ceiling = float(ceilings["fma_flops_per_s"]), "FMA"
    bandwidth, probe = memory_ceiling(ceilings)
    seconds = median_ms * 1e-3
    compute_s, memory_s = flops / rate, moved / bandwidth
    bound_s = max(compute_s, memory_s)
    if bound_s * 1e3 < float(ceilings.get("launch_latency_ms", 0.0)):
        bound = "latency"
    else:
        bound = "compute" if compute_s >= memory_s else "memory"
    return {
        "flops_per_s": flops / seconds,
        "bytes_per_s": moved / seconds,
        "compute_fraction": compute_s / seconds,
        "compute_ceiling": ceiling,
        "memory_fraction": memory_s / seconds,
        "memory_ceiling": probe,
        "roofline_fraction": bound_s / seconds,
        "bound": bound,
    }


def describe(sol: SpeedOfLight) -> str:
    return (
        f"{sol['roofline_fraction']:.0%} of the roofline ({sol['bound']}-bound): "
        f"{sol['bytes_per_s'] / 1e9:.3g} GB/s ({sol['memory_fraction']:.0%} of {sol['memory_ceiling']}), "
        f"{sol['flops_per_s'] / 1e9:.3g} GFLOP/s ({sol['compute_fraction']:.0%} of {sol['compute_ceiling']})"
    )
