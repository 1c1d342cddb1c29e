"""kernels/triton_gemm with a compact explicit space, for the sweeps `kerntune train` learns from: the same
kernel, op name and launch (so the trained table keys match the live demo's), 16 configs that every shape times
(exhaustive), so each shape's regret against every config is measured, not inferred.

The configs: ten of the Triton tutorial's autotune list, TMA and persistent-TMA variants of its large tiles, and
small-BLOCK_M decode tiles (one with split-K) for M <= 64.
"""

from __future__ import annotations

import dataclasses
import importlib.util
from pathlib import Path

import kerntune as kt

_path = Path(__file__).resolve().parents[3] / "kernels" / "triton_gemm" / "spec.py"
_loaded = importlib.util.spec_from_file_location("kerntune_sweep_base_matmul", _path)
assert _loaded is not None and _loaded.loader is not None
base = importlib.util.module_from_spec(_loaded)
_loaded.loader.exec_module(base)

_FIXED = {"GROUP_M": 8, "SPLIT_K": 1, "FUSED": 0, "TMA": 0, "PERSISTENT": 0}


def _c(bm: int, bn: int, bk: int, stages: int, warps: int, **extra: int) -> dict[str, int]:
    return {**_FIXED, "BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "num_stages": stages, "num_warps": warps, **extra}


POINTS = [
    _c(128, 256, 64, 3, 8),
    _c(64, 256, 32, 4, 4),
    _c(128, 128, 32, 4, 4),
    _c(128, 64, 32, 4, 4),
    _c(64, 128, 32, 4, 4),
    _c(64, 32, 32, 5, 2),
    _c(32, 64, 32, 5, 2),
    _c(128, 128, 64, 4, 4),
    _c(64, 128, 64, 4, 4),
    _c(128, 64, 64, 4, 4),
    _c(128, 256, 64, 3, 8, TMA=1),
    _c(128, 128, 64, 4, 4, TMA=1, PERSISTENT=1),
    _c(16, 64, 256, 5, 2),
    _c(16, 128, 128, 4, 4),
    _c(32, 64, 128, 4, 4),
    _c(16, 64, 128, 4, 2, SPLIT_K=2, FUSED=1),
]

problem = dataclasses.replace(base.problem, space=kt.Space(points=POINTS, default=base.problem.space.default))
