"""HIP backend: kernels compiled by hiprtc (``backends.hip_compile``, hipcc where hiprtc cannot load) and launched
through hip-python's ``hipModuleLaunchKernel`` on torch's current stream, so the torch backend's tensors, L2 flush,
event timing and stream hold apply unchanged (torch's ROCm build answers to ``torch.cuda``). The arch is the
device's (``gcnArchName``, e.g. ``gfx942``) unless the kernel names one.

Launch: ``grid(meta)`` blocks of ``block(meta)`` threads with ``shared_bytes(meta)`` bytes of dynamic LDS.
Arguments in the input maker's order, packed as hip-python packs ``extra``: tensors as device pointers, numpy
scalars as their own C type, plain ints as int32 (refused if they do not fit), floats as float32.

Written to the same contract and tests as the CUDA backend, and untested on AMD hardware: no ROCm GPU is
reachable from this project's machines. Its compile side runs on a CPU machine
(``tests/cpu/backends/test_hip_compile.py``).
"""

from __future__ import annotations

import ctypes
import time
from collections.abc import Mapping
from typing import Any

import numpy as np

from kerntune.backends.base import Compiled
from kerntune.backends.hip_compile import HipBinary, compile_hsaco, hipcc_path, inspect_hip
from kerntune.backends.native import launch_scalar, threads
from kerntune.backends.torch import TorchBackend
from kerntune.errors import BackendUnavailable, CandidateFailed
from kerntune.model import FailureKind, HipKernel, Kernel, Meta, TorchCallable

try:
    import torch
    from hip import hip
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise BackendUnavailable(
        "the HIP backend needs hip-python and a ROCm build of torch: pip install 'kerntune[hip]' and torch for ROCm"
    ) from exc

_C_TYPES: dict[Any, Any] = {
    np.int8: ctypes.c_int8,
    np.int16: ctypes.c_int16,
    np.int32: ctypes.c_int32,
    np.int64: ctypes.c_int64,
    np.uint8: ctypes.c_uint8,
    np.uint16: ctypes.c_uint16,
    np.uint32: ctypes.c_uint32,
    np.uint64: ctypes.c_uint64,
    np.float32: ctypes.c_float,
    np.float64: ctypes.c_double,
    np.bool_: ctypes.c_bool,
}


def kernel_argument(name: str, value: object) -> object:
    if isinstance(value, torch.Tensor):
        return ctypes.c_void_p(value.data_ptr())
    scalar = value if isinstance(value, np.generic) else launch_scalar(name, value)
    if type(scalar) not in _C_TYPES:
        raise CandidateFailed(FailureKind.LAUNCH.value, f"argument {name!r} is a {type(scalar).__name__}: no C type")
    return _C_TYPES[type(scalar)](scalar.item())


def _check(result: object, what: str) -> object:
    err, *rest = result if isinstance(result, tuple) else (result,)
    if err != hip.hipError_t.hipSuccess:
        raise CandidateFailed(FailureKind.LAUNCH.value, f"{what} failed: {err}")
    return rest[0] if len(rest) == 1 else rest


def _dim3(dims: tuple[int, ...]) -> tuple[int, int, int]:
    padded = [int(d) for d in dims] + [1, 1, 1]
    return padded[0], padded[1], padded[2]


class HipBackend(TorchBackend):
    name = "hip"

    def __init__(self, device: str = "") -> None:
        super().__init__(device or "cuda")
        if not self.on_gpu or not getattr(torch.version, "hip", None):
            raise BackendUnavailable("the HIP backend needs an AMD GPU and a ROCm build of torch (torch sees none)")
        self.arch = str(torch.cuda.get_device_properties(self.device).gcnArchName).split(":")[0]
        self._loaded: dict[tuple[str, str], Any] = {}

    def compile(self, kernel: Kernel, tunables: Meta, meta: Meta, args: dict[str, object]) -> Compiled:
        if isinstance(kernel, TorchCallable):
            return self.compile_callable(kernel, meta, args)
        if not isinstance(kernel, HipKernel):
            raise CandidateFailed(FailureKind.ERROR.value, f"the HIP backend cannot run a {kernel.language} kernel")
        start = time.perf_counter()
        binary, resources = self._binary(kernel, meta, tunables)
        function = self._load(binary)
        grid, block = _dim3(kernel.grid(meta)), _dim3(kernel.block(meta))
        shared = int(kernel.shared_bytes(meta)) if kernel.shared_bytes else 0

        def launch(call_args: Mapping[str, object]) -> None:
            extra = tuple(kernel_argument(n, v) for n, v in call_args.items())
            stream = torch.cuda.current_stream(self.device).cuda_stream
            _check(
                hip.hipModuleLaunchKernel(
                    function, *grid, *block, sharedMemBytes=shared, stream=stream, kernelParams=None, extra=extra
                ),
                "hipModuleLaunchKernel",
            )

        return Compiled(
            launch=launch,
            compile_s=time.perf_counter() - start,
            binary_hash=binary.hash,
            resources={**resources, "compiler": binary.compiler, "arch": binary.arch, "threads": threads(kernel, meta)},
        )

    def precompile(self, kernel: Kernel, tunables: Meta, meta: Meta, args: dict[str, object]) -> Compiled:
        """The code object only (into the on-disk cache): nothing is loaded on the device the timing worker uses."""
        if not isinstance(kernel, HipKernel):
            return super().precompile(kernel, tunables, meta, args)
        binary, resources = self._binary(kernel, meta, tunables)

        def not_loaded(call_args: Mapping[str, object]) -> None:
            raise CandidateFailed(FailureKind.ERROR.value, "a precompiled HIP kernel is not loaded: compile it")

        return Compiled(launch=not_loaded, compile_s=binary.compile_s, binary_hash=binary.hash, resources=resources)

    def _binary(self, kernel: HipKernel, meta: Meta, tunables: Meta) -> tuple[HipBinary, dict[str, object]]:
        """The code object, and its resources from hipcc's assembly where hipcc is installed (else none: the
        candidate is timed without resource pruning)."""
        arch = kernel.arch or self.arch
        if hipcc_path() is None:
            return compile_hsaco(kernel, tunables, arch), {}
        binary, found = inspect_hip(kernel, meta, tunables, arch)
        return binary, {**found.resources, "spills": found.spills}

    def _load(self, binary: HipBinary) -> object:
        key = (binary.hash, binary.symbol)
        if key not in self._loaded:
            module = _check(hip.hipModuleLoadData(binary.code), "hipModuleLoadData")
            self._loaded[key] = _check(
                hip.hipModuleGetFunction(module, binary.symbol.encode()), f"hipModuleGetFunction({binary.symbol!r})"
            )
        return self._loaded[key]
