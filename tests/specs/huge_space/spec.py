import numpy as np

import kerntune as kt

# 20^10 x 4 configs, every one valid: enumerating them would fill memory.
problem = kt.Problem(
    name="huge_space",
    kernel=kt.OpenCLKernel("__kernel void k(__global float* c) { c[0] = 1.0f; }", "k", grid=lambda m: ((1,), None)),
    space=kt.Space(params={**{f"P{i}": list(range(20)) for i in range(10)}, "LS": [1, 2, 4, 8]}),
    shapes=[{"N": 1}],
    make_inputs=lambda shape, dtype, seed: {"c": np.ones(1, dtype=np.float32)},
    reference=lambda args, shape: np.ones(1),
    outputs=("c",),
)
