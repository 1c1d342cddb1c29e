"""Triton backend: real on CUDA and ROCm GPUs; on a CPU machine, Triton's interpreter checks correctness
and the Target says that no timing is claimed.

Config values become constexpr keyword arguments; ``num_warps``, ``num_stages``, ``num_ctas`` and
``maxnreg`` become launch options. Compilation goes through ``JITFunction.warmup`` where it exists, so a
kernel is compiled (and its registers, spills and shared memory read) before it ever runs.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from kerntune.backends.base import Compiled, digest, fail
from kerntune.backends.torch import TorchBackend, run_first
from kerntune.backends.triton_types import JitFunction
from kerntune.errors import BackendUnavailable, CandidateFailed
from kerntune.model import FailureKind, Kernel, Meta, Target, TorchCallable, TritonKernel

try:
    import triton
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise BackendUnavailable("the Triton backend needs triton: pip install 'kerntune[triton]'") from exc

LAUNCH_OPTIONS = ("num_warps", "num_stages", "num_ctas", "maxnreg")


def interpreting() -> bool:
    """True when Triton runs kernels in its interpreter (set before any kernel is decorated)."""
    return os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")


def kernel_resources(compiled: Any) -> tuple[dict[str, object], str | None]:
    """Registers, spills, shared memory and the binary's hash from a Triton CompiledKernel.

    Attribute names moved between Triton releases (metadata as a dict, then a namedtuple; handles loaded
    lazily), so every field is read defensively: a field that cannot be read is left out, never guessed.
    """
    resources: dict[str, object] = {}
    init = getattr(compiled, "_init_handles", None)
    if callable(init):
        with contextlib.suppress(Exception):
            init()
    for attr, key in (("n_regs", "registers"), ("n_spills", "spills"), ("n_max_threads", "max_threads")):
        value = getattr(compiled, attr, None)
        if isinstance(value, int):
            resources[key] = value
    metadata = getattr(compiled, "metadata", None)
    for key in ("shared", "num_warps", "num_stages", "num_ctas", "target"):
        value = metadata.get(key) if isinstance(metadata, dict) else getattr(metadata, key, None)
        if value is not None:
            resources["shared_bytes" if key == "shared" else key] = value if isinstance(value, int) else str(value)
    asm = getattr(compiled, "asm", None) or {}
    binary = asm.get("cubin") or asm.get("hsaco") if isinstance(asm, dict) else None
    return resources, digest(binary) if isinstance(binary, (bytes, str)) else None


@contextlib.contextmanager
def intercepted_launches(
    handler: Callable[[JitFunction, object, tuple[object, ...], dict[str, object]], object],
) -> Iterator[None]:
    """Within this block ``kernel[grid](*args, **kwargs)`` calls ``handler(kernel, grid, args, kwargs)`` instead
    of launching: how a spec's own launch function is compiled without a device (``compile_only``) or read for
    its arguments (``kerntune inspect``)."""
    interface = triton.runtime.jit.KernelInterface
    original = interface.__getitem__

    def getitem(self: JitFunction, grid: object) -> object:
        return lambda *args, **kwargs: handler(self, grid, args, kwargs)

    interface.__getitem__ = getitem
    try:
        yield
    finally:
        interface.__getitem__ = original


@contextlib.contextmanager
def compile_only() -> Iterator[list[tuple[Any, Any]]]:
    """Launches compile (Triton's own warm-up path) and return the kernel without running it; each (compiled
    kernel, grid) is recorded. A compile-ahead worker so builds a spec's launch without putting work on a device
    that another process is timing."""
    launched: list[tuple[Any, Any]] = []

    def compile_one(kernel: Any, grid: Any, args: tuple[object, ...], kwargs: dict[str, object]) -> object:
        compiled = kernel.run(*args, grid=grid, warmup=True, **kwargs)
        launched.append((compiled, grid))
        return compiled

    with intercepted_launches(compile_one):
        yield launched


def _loaded_resources(compiled: Any) -> tuple[dict[str, object], str | None]:
    """Resources of a kernel compiled but not yet loaded: loading it (no launch) reads its registers, and
    fails when it needs more shared memory or registers than the device has — which is then a resource the
    kernel cannot have, recorded for pruning rather than raised."""
    init = getattr(compiled, "_init_handles", None)
    load_error = None
    if callable(init):
        try:
            init()
        except Exception as exc:  # OutOfResources and its kin
            load_error = f"{type(exc).__name__}: {' '.join(str(exc).split())}"
    resources, binary = kernel_resources(compiled)
    if load_error:
        resources["load_error"] = load_error
    return resources, binary


class TritonBackend(TorchBackend):
    name = "triton"

    def __init__(self, device: str = "") -> None:
        super().__init__(device)
        self.interpret = interpreting()
        if self.on_gpu and self.interpret:
            raise BackendUnavailable("TRITON_INTERPRET is set while a GPU is in use: unset it to time kernels")
        if not self.on_gpu and not self.interpret:
            raise BackendUnavailable(
                "no GPU here and TRITON_INTERPRET is not set: kerntune sets it in its workers; "
                "load Triton specs through kerntune, not by importing them first"
            )
        if not self.on_gpu:
            self.timer = "none (Triton interpreter)"

    def target(self) -> Target:
        target = super().target()
        if self.on_gpu:
            return target
        return Target(
            backend=self.name,
            vendor="cpu",
            arch="triton-interpreter",
            device_name="Triton interpreter on the host CPU",
            compute_units=1,
            versions=target.versions,
            claims_timing=False,
        )

    def _extra_versions(self) -> list[tuple[str, str]]:
        return [("triton", str(triton.__version__))]

    def compile(self, kernel: Kernel, tunables: Meta, meta: Meta, args: dict[str, object]) -> Compiled:
        if isinstance(kernel, TorchCallable):
            return self.compile_callable(kernel, meta, args)
        if not isinstance(kernel, TritonKernel):
            raise CandidateFailed(FailureKind.ERROR.value, f"the Triton backend cannot run a {kernel.language} kernel")
        fn = kernel.fn
        if kernel.launch is not None:
            custom = kernel.launch

            def launch_custom(a: dict[str, object]) -> object:
                return custom(fn, a, meta)

            # A custom launch may run several kernels: compile by running it once.
            first, seconds = run_first(lambda: launch_custom(args), self.synchronize, "compile")
            resources, binary = kernel_resources(first) if first is not None else ({}, None)
            return Compiled(launch_custom, seconds, binary, resources)

        kwargs = self._kernel_kwargs(fn, tunables)
        grid = tuple(int(g) for g in kernel.grid(meta))

        def launch(a: dict[str, object]) -> object:
            return fn[grid](*a.values(), **kwargs)

        if self.interpret:
            return Compiled(launch, 0.0, None, {"interpreter": True})
        start = time.perf_counter()
        try:
            compiled = fn.warmup(*args.values(), grid=grid, **kwargs)
        except Exception as exc:
            raise fail(exc, "compile") from exc
        seconds = time.perf_counter() - start
        resources, binary = kernel_resources(compiled)
        return Compiled(launch, seconds, binary, resources)

    def precompile(self, kernel: Kernel, tunables: Meta, meta: Meta, args: dict[str, object]) -> Compiled:
        if isinstance(kernel, TorchCallable) or not isinstance(kernel, TritonKernel) or self.interpret:
            return self.compile(kernel, tunables, meta, args)
        if not hasattr(triton.runtime.jit, "KernelInterface"):
            raise BackendUnavailable(
                f"compile-ahead needs Triton's warm-up path (Triton >= 3.0, this is "
                f"{triton.__version__}): set KERNTUNE_COMPILE_WORKERS=0"
            )
        fn = kernel.fn
        start = time.perf_counter()
        try:
            with compile_only() as launched:
                if kernel.launch is not None:
                    kernel.launch(fn, args, meta)
                else:
                    grid = tuple(int(g) for g in kernel.grid(meta))
                    fn[grid](*args.values(), **self._kernel_kwargs(fn, tunables))
        except CandidateFailed:
            raise
        except Exception as exc:
            raise fail(exc, "compile") from exc
        seconds = time.perf_counter() - start
        if not launched:
            raise CandidateFailed(FailureKind.ERROR.value, "the launch function launched no Triton kernel")
        parts, per_kernel = [], []
        binaries: list[str | None] = []
        for compiled, grid in launched:
            kernel_res, binary = _loaded_resources(compiled)
            per_kernel.append(kernel_res)
            binaries.append(binary)
            # A grid given as a function of the arguments is not known here: no signature, no de-duplication.
            parts.append(f"{binary}@{tuple(grid)}" if binary and isinstance(grid, (tuple, list)) else "")
        resources = dict(per_kernel[0])
        if len(per_kernel) > 1:
            resources["kernels"] = per_kernel
        return Compiled(
            lambda a: None, seconds, binaries[0], resources, signature=digest("|".join(parts)) if all(parts) else None
        )

    @staticmethod
    def _kernel_kwargs(fn: JitFunction, tunables: Mapping[str, object]) -> dict[str, object]:
        names = set(getattr(fn, "arg_names", ()) or ())
        return {k: v for k, v in tunables.items() if k in names or k in LAUNCH_OPTIONS}
