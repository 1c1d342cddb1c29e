"""The roofline's inputs as a run keeps them: the spec's cost at a shape and the device's measured ceilings."""

from __future__ import annotations

from typing import TypedDict


class CostRecord(TypedDict, total=False):
    """The spec's cost model at one shape: work done and bytes moved, and the matrix dtype it runs at, if any."""

    flops: float
    bytes: float
    matrix: str


class CeilingsRecord(TypedDict, total=False):
    """A device's calibration as stored (``measure.calibrate.Ceilings``): rates per second, latency in ms."""

    device_key: str
    device: str
    copy_bytes_per_s: float
    triad_bytes_per_s: float
    fma_flops_per_s: float
    launch_latency_ms: float
    read_bytes_per_s: float
    matrix_flops_per_s: dict[str, float]
    created: float
    details: dict[str, object]


class SpeedOfLight(TypedDict):
    """A time against the roofline: achieved rates and the fraction of each ceiling they reach."""

    flops_per_s: float
    bytes_per_s: float
    compute_fraction: float
    compute_ceiling: str
    memory_fraction: float
    memory_ceiling: str
    roofline_fraction: float
    bound: str
