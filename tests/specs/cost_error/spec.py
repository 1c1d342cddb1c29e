"""The OpenCL vector add with a cost model that reads a shape field it does not have (a bad-input test)."""

from __future__ import annotations

import dataclasses
import importlib.util
from pathlib import Path

import kerntune as kt

_path = Path(__file__).resolve().parents[3] / "examples" / "opencl_vector_add" / "spec.py"
_spec = importlib.util.spec_from_file_location("_vector_add_base", _path)
assert _spec is not None and _spec.loader is not None
_base = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_base)

problem = dataclasses.replace(
    _base.problem, name="cost_error", cost=lambda s, d: kt.Cost(flops=float(s["BATCH"]))
)  # planted: no such field
