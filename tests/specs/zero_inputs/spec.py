import numpy as np

import kerntune as kt

problem = kt.Problem(
    name="zero_inputs",
    kernel=kt.OpenCLKernel(
        "__kernel void k(__global const float* a, __global float* c) { c[get_global_id(0)] = a[get_global_id(0)]; }",
        "k",
        grid=lambda m: ((m["N"],), None),
    ),
    space=kt.Space(params={"X": [1]}),
    shapes=[{"N": 16}],
    make_inputs=lambda shape, dtype, seed: {"a": np.zeros(16, dtype=np.float32), "c": np.empty(16, dtype=np.float32)},
    reference=lambda args, shape: args["a"].astype(np.float64),
    outputs=("c",),
)
