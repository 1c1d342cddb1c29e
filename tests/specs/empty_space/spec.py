import numpy as np

import kerntune as kt

problem = kt.Problem(
    name="empty_space",
    kernel=kt.OpenCLKernel("__kernel void k() {}", "k", grid=lambda m: ((1,), None)),
    space=kt.Space(params={}),
    shapes=[{"N": 1}],
    make_inputs=lambda shape, dtype, seed: {"c": np.ones(1, dtype=np.float32)},
    reference=lambda args, shape: args["c"],
    outputs=("c",),
)
