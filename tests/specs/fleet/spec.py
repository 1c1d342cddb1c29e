"""A 200-config OpenCL space (examples/opencl_vector_add with an unroll switch, ten work-group sizes and ten
elements-per-work-item counts) on two small shapes: enough work for the worker pool and Ray executor tests to
share out and to lose a worker in."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import kerntune as kt
from kerntune.tune.spec import load_spec

base = load_spec(str(Path(__file__).resolve().parents[3] / "examples" / "opencl_vector_add")).problem
assert isinstance(base.kernel, kt.OpenCLKernel)
SOURCE = base.kernel.source.replace("    for (int w", "#if UNROLL\n#pragma unroll\n#endif\n    for (int w", 1)

problem = dataclasses.replace(
    base,
    name="fleet_vector_add",
    kernel=dataclasses.replace(base.kernel, source=SOURCE),
    space=kt.Space(
        params={
            "LS": [1, 2, 4, 8, 16, 32, 64, 128, 256, 512],
            "WPT": [1, 2, 3, 4, 5, 6, 8, 10, 12, 16],
            "UNROLL": [0, 1],
        },
        default={"LS": 64, "WPT": 1, "UNROLL": 0},
    ),
    shapes=[{"N": 4096}, {"N": 8192}],
    cost=None,
)
