"""A live program launching kerntune's CUDA C++ reduction (``examples/cuda_reduction``, or the spec file given as
the first argument) through kerntune's CUDA backend, as the tuner's workers do: compiled once at the spec's default
config, launched three times on a 1M-float vector scaled by the step; prints the sums."""

import importlib.util
import sys
from pathlib import Path

import torch

from kerntune.backends.cuda import CudaBackend
from kerntune.model import Shape

spec_file = (
    Path(sys.argv[1])
    if len(sys.argv) > 1
    else Path(__file__).resolve().parents[3] / "examples" / "cuda_reduction" / "spec.py"
)
loaded = importlib.util.spec_from_file_location("cuda_reduction_spec", spec_file)
assert loaded is not None and loaded.loader is not None
module = importlib.util.module_from_spec(loaded)
sys.modules["cuda_reduction_spec"] = module  # as an import would: the lab finds the source's file among modules
loaded.loader.exec_module(module)
problem = module.problem

shape = Shape.of({"N": 1 << 20})
config = problem.space.default_config()
inputs = {
    k: v.cuda() if isinstance(v, torch.Tensor) else v
    for k, v in problem.make_inputs(shape.as_dict(), "float32", 0).items()
}
backend = CudaBackend()
compiled = backend.compile(
    problem.kernel, problem.space.tunables(config, shape), problem.space.meta(config, shape), inputs
)
base = inputs["x"].clone()
for step in range(3):
    inputs["x"].copy_(base * (1 + step))
    compiled.launch(inputs)
    torch.cuda.synchronize()
    print(f"sum {step}: {inputs['out'].item():.4f}")
