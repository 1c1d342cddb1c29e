"""kerntune: tune GPU kernels honestly.

``import kerntune`` is light: it never imports torch, triton or pyopencl (backends load in workers).
"""

from kerntune.errors import KerntuneError, SpecError
from kerntune.model import (
    Baseline,
    Config,
    Constraint,
    Cost,
    CudaKernel,
    HipKernel,
    OpenCLKernel,
    Problem,
    Serve,
    Shape,
    Space,
    Target,
    TorchCallable,
    TritonKernel,
    VulkanKernel,
)
from kerntune.runtime import TunableKernel, autotune

__version__ = "0.1.0"

__all__ = [
    "Baseline",
    "Config",
    "Constraint",
    "Cost",
    "CudaKernel",
    "HipKernel",
    "KerntuneError",
    "OpenCLKernel",
    "Problem",
    "Serve",
    "Shape",
    "Space",
    "SpecError",
    "Target",
    "TorchCallable",
    "TritonKernel",
    "TunableKernel",
    "VulkanKernel",
    "__version__",
    "autotune",
]
