"""A live program dispatching kerntune's Vulkan reduction (``examples/vulkan_reduction``, or the spec file given as
the first argument) through kerntune's Vulkan backend, as the tuner's workers do: compiled once at the spec's default
config, dispatched three times on a 64K-float vector scaled by the step; prints the sums."""

import importlib.util
import sys
from pathlib import Path

import numpy as np

from kerntune.backends.vulkan import VulkanBackend
from kerntune.model import Shape

spec_file = (
    Path(sys.argv[1])
    if len(sys.argv) > 1
    else Path(__file__).resolve().parents[3] / "examples" / "vulkan_reduction" / "spec.py"
)
loaded = importlib.util.spec_from_file_location("vulkan_reduction_spec", spec_file)
assert loaded is not None and loaded.loader is not None
module = importlib.util.module_from_spec(loaded)
sys.modules["vulkan_reduction_spec"] = module  # as an import would: the lab finds the source's file among modules
loaded.loader.exec_module(module)
problem = module.problem

shape = Shape.of({"N": 1 << 16})
config = problem.space.default_config()
host = problem.make_inputs(shape.as_dict(), "float32", 0)
backend = VulkanBackend()
compiled = None
for step in range(3):
    args = backend.place({**host, "x": (host["x"] * (1 + step)).astype(np.float32)})
    if compiled is None:
        compiled = backend.compile(
            problem.kernel, problem.space.tunables(config, shape), problem.space.meta(config, shape), args
        )
    compiled.launch(args)
    print(f"sum {step}: {float(backend.to_host(args['out'])[0]):.4f}")
