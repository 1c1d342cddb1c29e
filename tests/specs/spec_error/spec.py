import numpy as np

import kerntune as kt


def broken_reference(args, shape):
    return args["missing"]


problem = kt.Problem(
    name="spec_error",
    kernel=kt.OpenCLKernel(
        "__kernel void k(__global float* c) { c[get_global_id(0)] = 1.0f; }", "k", grid=lambda m: ((4,), None)
    ),
    space=kt.Space(params={"LS": [1, 2]}),
    shapes=[{"N": 4}],
    make_inputs=lambda shape, dtype, seed: {"c": np.ones(4, dtype=np.float32)},
    reference=broken_reference,
    outputs=("c",),
)
