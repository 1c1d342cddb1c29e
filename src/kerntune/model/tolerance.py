"""The correctness gate's relative-error thresholds per dtype: what the tuner's gate and the runtime's first-call
check hold a kernel's output to. Plain data."""

from __future__ import annotations

from collections.abc import Mapping

DEFAULT_TOLERANCE: dict[str, float] = {
    "float64": 1e-12,
    "float32": 1e-5,
    "tf32": 1e-3,
    "bfloat16": 1e-2,
    "float16": 1e-2,
    "float8": 5e-2,
    "float8_e4m3fn": 5e-2,
    "float8_e5m2": 5e-2,
    "int8": 0.0,
    "int32": 0.0,
}


def threshold_for(dtype: str, overrides: Mapping[str, float] | None = None) -> float:
    """The relative-error threshold for ``dtype``; a spec's ``tolerance`` overrides the defaults."""
    if overrides and dtype in overrides:
        return float(overrides[dtype])
    if dtype in DEFAULT_TOLERANCE:
        return DEFAULT_TOLERANCE[dtype]
    for name, value in DEFAULT_TOLERANCE.items():
        if dtype.startswith(name):
            return value
    raise KeyError(f"no gate threshold for dtype {dtype!r}: give tolerance={{{dtype!r}: ...}} in the spec")
