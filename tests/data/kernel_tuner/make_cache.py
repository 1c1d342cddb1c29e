"""How vector_add_pocl.json was made: Kernel Tuner 1.5.0 on PoCL (this repository's CPU machine, 2026-11-29),
c = a + b with a work-group size and elements per work-item, block_size_x=256 with WPT=4 excluded by a
restriction, 7 iterations per config. vector_add_pocl_unfinished.json is the cache of the same script with
WPT=8 added to the space: its `#error` made Kernel Tuner's OpenCL backend stop mid-run, and the file was left
open, as Kernel Tuner leaves it. Run from this folder: python make_cache.py (needs kernel_tuner and pyopencl)."""

import kernel_tuner
import numpy as np

SOURCE = """
#if WPT == 8
#error WPT=8 is refused on purpose: a compile failure in the cache
#endif
__kernel void vector_add(__global float *c, __global const float *a, __global const float *b, int n) {
    int i = get_global_id(0) * WPT;
    for (int w = 0; w < WPT; w++) { if (i + w < n) c[i + w] = a[i + w] + b[i + w]; }
}
"""
n = np.int32(1 << 20)
rng = np.random.default_rng(0)
a = rng.standard_normal(n).astype(np.float32)
b = rng.standard_normal(n).astype(np.float32)
c = np.zeros_like(a)
params = {"block_size_x": [32, 64, 128, 256], "WPT": [1, 2, 4]}
kernel_tuner.tune_kernel(
    "vector_add",
    SOURCE,
    n,
    [c, a, b, n],
    params,
    lang="OpenCL",
    grid_div_x=["block_size_x", "WPT"],
    cache="vector_add_pocl.json",
    verbose=False,
    restrictions=["not (block_size_x == 256 and WPT == 4)"],
    iterations=7,
    answer=[a + b, None, None, None],
)
