"""A live OpenCL program for the lab tests: axpy on the first OpenCL device (PoCL on the CPU), three launches
with another alpha each; prints a checksum."""

import sys
from pathlib import Path

import numpy as np
import pyopencl as cl

sys.path.insert(0, str(Path(__file__).resolve().parent))
from opencl_kernels import SOURCE

device = next(d for p in cl.get_platforms() for d in p.get_devices())
context = cl.Context([device])
queue = cl.CommandQueue(context)
kernel = cl.Kernel(cl.Program(context, SOURCE).build(), "axpy")
n = 1000
rng = np.random.default_rng(0)
x, y = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
flags = cl.mem_flags
x_buf = cl.Buffer(context, flags.READ_ONLY | flags.COPY_HOST_PTR, hostbuf=x)
y_buf = cl.Buffer(context, flags.READ_ONLY | flags.COPY_HOST_PTR, hostbuf=y)
out_buf = cl.Buffer(context, flags.WRITE_ONLY, size=x.nbytes)
total = 0.0
for step in range(3):
    kernel(queue, (1024,), (64,), x_buf, y_buf, out_buf, np.float32(1.0 + step), np.int32(n))
    out = np.empty_like(x)
    cl.enqueue_copy(queue, out, out_buf)
    total += float(out.sum())
print(f"checksum {total:.3f}")
