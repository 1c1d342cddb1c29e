import numpy as np

import kerntune as kt

problem = kt.Problem(
    name="inputs_list",
    kernel=kt.OpenCLKernel("__kernel void k(__global float* c) { c[0] = 1.0f; }", "k", grid=lambda m: ((1,), None)),
    space=kt.Space(params={"LS": [16, 32]}),
    shapes=[{"N": 1}],
    make_inputs=lambda shape, dtype, seed: [np.random.default_rng(seed).random(1, dtype=np.float32)],
    reference=lambda args, shape: np.ones(1),
    outputs=("c",),
)
