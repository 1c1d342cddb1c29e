"""A planted slowdown for checking ``kerntune ab``: ``busy.cl`` is a compute-bound loop, ``busy_slower.cl``
the same kernel with 3% more iterations (and ``ITERS`` a config knob for the same purpose).

    kerntune ab examples/opencl_planted_slowdown examples/opencl_planted_slowdown           # A/A: noise
    kerntune ab --spec examples/opencl_planted_slowdown examples/opencl_planted_slowdown/busy.cl \
        examples/opencl_planted_slowdown/busy_slower.cl --expect loss                          # fresh processes
    kerntune ab --spec examples/opencl_planted_slowdown @ITERS=200 @ITERS=206 --expect loss  # in-process
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

import kerntune as kt

SOURCE = (Path(__file__).parent / "busy.cl").read_text()


def make_inputs(shape: dict[str, Any], dtype: str, seed: int) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    n = int(shape["N"])
    return {"n": np.int32(n), "a": rng.random(n).astype(np.float32), "c": np.empty(n, dtype=np.float32)}


problem = kt.Problem(
    name="opencl_planted_slowdown",
    kernel=kt.OpenCLKernel(source=SOURCE, name="busy", grid=lambda m: ((-(-m["N"] // m["LS"]) * m["LS"],), (m["LS"],))),
    space=kt.Space(params={"ITERS": [200, 206], "LS": [64]}, default={"ITERS": 200, "LS": 64}),
    shapes=[{"N": 1 << 14}],
    make_inputs=make_inputs,
    reference=lambda args, shape: 2.0 * args["a"].astype(np.float64),
    outputs=("c",),
)
