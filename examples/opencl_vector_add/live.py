"""A live program that reads a deployed table: ``c = a + b`` through pyopencl, its LS and WPT chosen per call by
``kerntune.runtime.Dispatcher`` (the default config where the table has nothing for the size).

    python examples/opencl_vector_add/live.py TABLE.json [--sizes 65536,262144] [--reps 50]

It prints the milliseconds per pass over all sizes last, the metric ``kerntune verify`` and ``kerntune ab`` read.
The key is built the way ``kerntune deploy`` writes it: op, kernel source hash, dtype, shape and device fields.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pyopencl as cl

from kerntune.runtime import Dispatcher, kernel_hash
from kerntune.runtime.dispatch import live_versions
from kerntune.runtime.keys import opencl_device_fields

sys.path.insert(0, str(Path(__file__).resolve().parent))
from spec import SOURCE, problem  # the kernel the table was tuned for


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("table")
    parser.add_argument("--sizes", default="65536,262144")
    parser.add_argument("--reps", type=int, default=50)
    args = parser.parse_args()
    devices = [d for p in cl.get_platforms() for d in p.get_devices()]
    gpus = [d for d in devices if d.type & cl.device_type.GPU]
    device = gpus[0] if gpus else devices[0]  # the device kerntune's OpenCL backend picks by default
    context = cl.Context([device])
    queue = cl.CommandQueue(context)
    fixed = {
        **opencl_device_fields(device, int(cl.device_type.CPU)),
        "op": problem.name,
        "dtype": "float32",
        "source": kernel_hash(SOURCE),
    }
    dispatch = Dispatcher(
        args.table,
        key=lambda n: (n,),
        key_fields=("N",),
        default=problem.space.default or {},
        device=fixed,
        name="vector_add",
        space=problem.space,  # a table's config outside the spec's space (LS=0) is never launched
        versions=live_versions(opencl_device=device),  # the OpenCL version and driver the table was tuned under
    )
    programs: dict[tuple[int, int], cl.Kernel] = {}
    sizes = [int(s) for s in args.sizes.split(",")]
    buffers = {}
    for n in sizes:
        host = np.random.default_rng(0).standard_normal(n).astype(np.float32)
        flags = cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR
        buffers[n] = [cl.Buffer(context, flags, hostbuf=host) for _ in range(3)]

    def launch(n: int) -> None:
        config = dispatch.select(n)
        ls, wpt = int(config["LS"]), int(config["WPT"])
        if (ls, wpt) not in programs:
            built = cl.Program(context, SOURCE).build(options=[f"-DLS={ls}", f"-DWPT={wpt}"])
            programs[(ls, wpt)] = built.vector_add
        groups = -(-n // (ls * wpt))
        a, b, c = buffers[n]
        programs[(ls, wpt)](queue, (groups * ls,), (ls,), np.int32(n), a, b, c)

    for n in sizes:  # warm-up: builds and first launches outside the timed passes
        launch(n)
    queue.finish()
    start = time.perf_counter()
    for _ in range(args.reps):
        for n in sizes:
            launch(n)
    queue.finish()
    print(f"ms_per_pass {(time.perf_counter() - start) * 1e3 / args.reps:.4f}")


if __name__ == "__main__":
    main()
