"""Compile a CUDA C++ kernel to a cubin for a named arch, on any machine: NVRTC through cuda.core (what the CUDA
backend loads at run time), or nvcc where cuda.core is not installed. No GPU is used.

Config and derived values (not the shape) become ``-D NAME=VALUE``; a kernel with ``template`` is instantiated by name
(``"tile_matmul<{TILE}>"`` formatted with the config), which needs NVRTC. Compile errors carry the compiler's
log. ``compile_cubin`` is shared by the backend (timing), ``kerntune inspect`` and the compile-ahead pool.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import json
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from kerntune.backends.base import digest
from kerntune.backends.cubin import Inspection, inspect_cubin
from kerntune.backends.native import NativeBinary, cache_load, cache_store, compiler_log, macros, threads, tool_identity
from kerntune.errors import BackendUnavailable, CandidateFailed
from kerntune.isa.targets import missing_features
from kerntune.model import CudaKernel, FailureKind, Meta

CudaBinary = NativeBinary
"""``code`` is a cubin."""


def _compiler_identity() -> str:
    """Which compiler a compile would use, and its release: a cached cubin is never reused across compilers.
    Asked each time (a few metadata reads, against a compile of 100 ms or more), so it follows what
    ``_compile`` would pick now."""
    try:
        import cuda.core  # noqa: F401
    except ImportError:
        nvcc = shutil.which("nvcc")
        if nvcc is None:
            return "none"
        return tool_identity("nvcc", nvcc)
    versions = []
    for dist in ("nvidia-cuda-nvrtc", "cuda-bindings", "cuda-core"):
        with contextlib.suppress(importlib.metadata.PackageNotFoundError):
            versions.append(f"{dist}={importlib.metadata.version(dist)}")
    return "nvrtc:" + ",".join(versions)


def compile_cubin(kernel: CudaKernel, tunables: Meta, arch: str) -> CudaBinary:
    """The cubin of ``kernel`` for ``tunables`` (config and derived values: the shape's fields are kernel
    arguments, never macros) on ``arch`` (``sm_90``, ``sm_90a``...); a CandidateFailed
    (``compile``) with the compiler's log when it does not build. Cubins are cached on disk by source,
    defines, template instance, options and arch, so a compile-ahead worker's compile serves the timing
    worker."""
    if kernel.requires is not None:
        refused = missing_features(arch, tuple(kernel.requires(tunables)))
        if refused:
            raise CandidateFailed(FailureKind.UNSUPPORTED.value, refused)
    expression = kernel.template.format(**tunables) if kernel.template else kernel.name
    key = digest(
        json.dumps(
            [
                kernel.source,
                macros(tunables, kernel.template),
                expression,
                list(kernel.options),
                arch,
                _compiler_identity(),
            ]
        )
    )
    found = cache_load(key)
    if found is not None:
        cubin, entry = found
        return CudaBinary(cubin, entry["symbol"], expression, arch, 0.0, entry["compiler"])
    binary = _compile(kernel, tunables, arch, expression)
    cache_store(key, binary.code, {"symbol": binary.symbol, "compiler": binary.compiler})
    return binary


def _compile(kernel: CudaKernel, meta: Meta, arch: str, expression: str) -> CudaBinary:
    start = time.perf_counter()
    try:
        from cuda.core import Program, ProgramOptions
    except ImportError:
        return _with_nvcc(kernel, meta, arch, expression, start)
    options = ProgramOptions(arch=arch, define_macro=macros(meta, kernel.template) or None, std="c++17")
    try:
        program = Program(kernel.source, code_type="c++", options=options)
        code = program.compile("cubin", name_expressions=(expression,) if kernel.template else ())
    except Exception as exc:  # NVRTCError: its text holds the compilation log
        raise CandidateFailed(
            FailureKind.COMPILE.value, f"NVRTC could not compile {expression} for {arch}: {compiler_log(str(exc))}"
        ) from exc
    mapping = getattr(code, "symbol_mapping", None) or {}
    symbol = mapping.get(expression, expression)
    symbol = symbol.decode() if isinstance(symbol, bytes) else str(symbol)
    return CudaBinary(bytes(code.code), symbol, expression, arch, time.perf_counter() - start, "nvrtc")


def _with_nvcc(kernel: CudaKernel, meta: Meta, arch: str, expression: str, start: float) -> CudaBinary:
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        raise BackendUnavailable(
            "compiling CUDA C++ needs cuda.core with NVRTC (pip install 'kerntune[cuda]') or nvcc on PATH"
        )
    if kernel.template:
        raise BackendUnavailable("template kernels are instantiated through NVRTC: pip install 'kerntune[cuda]'")
    with tempfile.TemporaryDirectory() as tmp:
        source, cubin = Path(tmp) / "kernel.cu", Path(tmp) / "kernel.cubin"
        source.write_text(kernel.source)
        defines = [f"-D{name}={value}" for name, value in macros(meta, kernel.template)]
        done = subprocess.run(
            [nvcc, "-cubin", f"-arch={arch}", "-std=c++17", *defines, *kernel.options, "-o", str(cubin), str(source)],
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            raise CandidateFailed(
                FailureKind.COMPILE.value,
                f"nvcc could not compile {expression} for {arch}: {compiler_log(done.stderr)}",
            )
        return CudaBinary(cubin.read_bytes(), expression, expression, arch, time.perf_counter() - start, "nvcc")


def inspect_cuda(kernel: CudaKernel, meta: Meta, tunables: Meta, arch: str) -> tuple[CudaBinary, Inspection]:
    """Compile for ``arch`` and read the cubin: registers, shared memory, spills, census, occupancy. ``meta``
    (shape and tunables) sizes the launch; ``tunables`` are the macros."""
    binary = compile_cubin(kernel, tunables, arch)
    shared = int(kernel.shared_bytes(meta)) if kernel.shared_bytes else 0
    try:
        return binary, inspect_cubin(binary.code, arch, shared, threads(kernel, meta), binary.symbol)
    except ValueError as exc:  # the cubin has no function of that name
        raise CandidateFailed(
            FailureKind.COMPILE.value,
            f"the source has no kernel {binary.symbol!r} ({exc}): "
            'CudaKernel(name=...) names an extern "C" __global__ function, or give '
            "template= for a C++ template instance",
        ) from exc
