"""CUDA C++ backend: kernels compiled by NVRTC (``backends.cuda_compile``) and launched through cuda.core on
torch's current stream, so the torch backend's tensors, L2 flush, CUDA-event timing and stream hold apply
unchanged. The arch is the device's (``sm_90``) unless the kernel names one (``sm_90a`` for wgmma).

Launch: ``grid(meta)`` blocks of ``block(meta)`` threads with ``shared_bytes(meta)`` bytes of dynamic shared
memory; above the 48 KB default the kernel's limit is raised first (the driver refuses the launch otherwise).
Arguments in the input maker's order: tensors as device pointers, numpy scalars as they are, plain ints as
int32 (refused if they do not fit) and floats as float32.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import numpy as np

from kerntune.backends.base import Compiled
from kerntune.backends.cuda_compile import CudaBinary, inspect_cuda
from kerntune.backends.native import launch_scalar, threads
from kerntune.backends.torch import TorchBackend
from kerntune.errors import BackendUnavailable, CandidateFailed
from kerntune.model import CudaKernel, FailureKind, Kernel, Meta, TorchCallable

try:
    import cuda.core as cuda_core
    import torch
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise BackendUnavailable("the CUDA backend needs cuda.core and torch: pip install 'kerntune[cuda,triton]'") from exc

DEFAULT_SHARED_LIMIT = 48 * 1024


class _TorchStream:
    """torch's current stream in cuda.core's stream protocol: kernels and CUDA events share one stream."""

    def __init__(self, handle: int) -> None:
        self.handle = handle

    def __cuda_stream__(self) -> tuple[int, int]:
        return (0, self.handle)


def kernel_argument(name: str, value: object) -> object:
    if isinstance(value, torch.Tensor):
        return value.data_ptr()  # cuda.core passes a Python int as a pointer-sized argument
    return value if isinstance(value, np.generic) else launch_scalar(name, value)


class CudaBackend(TorchBackend):
    name = "cuda"

    def __init__(self, device: str = "") -> None:
        super().__init__(device or "cuda")
        if not self.on_gpu or getattr(torch.version, "hip", None):
            raise BackendUnavailable("the CUDA C++ backend needs an NVIDIA GPU (torch sees none here)")
        self.cuda_device = cuda_core.Device(self.device.index or 0)
        self.cuda_device.set_current()  # the primary context, which torch uses too
        major, minor = torch.cuda.get_device_capability(self.device)
        self.arch = f"sm_{major}{minor}"
        self._loaded: dict[tuple[str, str], Any] = {}

    def _extra_versions(self) -> list[tuple[str, str]]:
        return [("cuda.core", str(getattr(cuda_core, "__version__", "?")))]

    def compile(self, kernel: Kernel, tunables: Meta, meta: Meta, args: dict[str, object]) -> Compiled:
        if isinstance(kernel, TorchCallable):
            return self.compile_callable(kernel, meta, args)
        if not isinstance(kernel, CudaKernel):
            raise CandidateFailed(FailureKind.ERROR.value, f"the CUDA backend cannot run a {kernel.language} kernel")
        start = time.perf_counter()
        binary, found = inspect_cuda(kernel, meta, tunables, kernel.arch or self.arch)
        function = self._load(binary)
        shared = int(kernel.shared_bytes(meta)) if kernel.shared_bytes else 0
        if shared > DEFAULT_SHARED_LIMIT:
            self._raise_shared_limit(function, shared)
        config = cuda_core.LaunchConfig(
            grid=tuple(int(g) for g in kernel.grid(meta)),
            block=tuple(int(b) for b in kernel.block(meta)),
            shmem_size=shared,
        )
        launch_fn = cuda_core.launch

        def launch(call_args: Mapping[str, object]) -> None:
            params = [kernel_argument(n, v) for n, v in call_args.items()]
            launch_fn(_TorchStream(torch.cuda.current_stream(self.device).cuda_stream), config, function, *params)

        resources = {
            **found.resources,
            "spills": found.spills,
            "compiler": binary.compiler,
            "arch": binary.arch,
            "threads": threads(kernel, meta),
        }
        return Compiled(
            launch=launch, compile_s=time.perf_counter() - start, binary_hash=binary.hash, resources=resources
        )

    def precompile(self, kernel: Kernel, tunables: Meta, meta: Meta, args: dict[str, object]) -> Compiled:
        """The cubin only (into the on-disk cache the timing worker's compile reads): nothing is loaded or
        launched on the device a compile-ahead worker shares with the timing worker."""
        if not isinstance(kernel, CudaKernel):
            return super().precompile(kernel, tunables, meta, args)
        binary, found = inspect_cuda(kernel, meta, tunables, kernel.arch or self.arch)

        def not_loaded(call_args: Mapping[str, object]) -> None:
            raise CandidateFailed(FailureKind.ERROR.value, "a precompiled CUDA kernel is not loaded: compile it")

        return Compiled(
            launch=not_loaded,
            compile_s=binary.compile_s,
            binary_hash=binary.hash,
            resources={**found.resources, "spills": found.spills},
        )

    def _load(self, binary: CudaBinary) -> object:
        key = (binary.hash, binary.symbol)
        if key not in self._loaded:
            module = cuda_core.ObjectCode.from_cubin(binary.code)
            self._loaded[key] = module.get_kernel(binary.symbol)
        return self._loaded[key]

    def _raise_shared_limit(self, function: Any, shared: int) -> None:
        """Allow more than 48 KB of dynamic shared memory (cudaFuncSetAttribute, on the kernel handle)."""
        from cuda.bindings import driver

        attribute = driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
        handle = function.handle
        if type(handle).__name__ == "CUkernel":
            device = driver.CUdevice(self.cuda_device.device_id)
            (err,) = driver.cuKernelSetAttribute(attribute, shared, handle, device)
        else:
            (err,) = driver.cuFuncSetAttribute(handle, attribute, shared)
        if int(err) != 0:
            raise CandidateFailed(
                FailureKind.LAUNCH.value,
                f"the driver refused {shared} B of dynamic shared memory for this kernel (error {int(err)})",
            )
