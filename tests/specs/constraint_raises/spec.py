import numpy as np

import kerntune as kt

problem = kt.Problem(
    name="constraint_raises",
    kernel=kt.OpenCLKernel("__kernel void k(__global float* c) { c[0] = 1.0f; }", "k", grid=lambda m: ((1,), None)),
    space=kt.Space(
        params={"LS": [16, 32]},
        constraints=[kt.Constraint(lambda c: c["LS"] // (c["LS"] - 16) > 0, "tile divides")],
    ),
    shapes=[{"N": 1}],
    make_inputs=lambda shape, dtype, seed: {"c": np.ones(1, dtype=np.float32)},
    reference=lambda args, shape: np.ones(1),
    outputs=("c",),
)
