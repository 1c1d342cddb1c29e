"""Compile a HIP kernel to a code object for a named gfx arch, on any machine: hiprtc through hip-python (what the
HIP backend loads at run time on a ROCm machine), or hipcc (``--genco``) where hip-python's hiprtc cannot load.
No GPU is used.

Resources come from the AMDGCN assembly hipcc emits for the same macros (``-S``: the kernel descriptor and the
``; NumVgprs``-style comments, read by ``isa.amdgcn``); hiprtc gives no assembly, so ``inspect`` and pruning by
resources need hipcc (ROCm installs it beside hiprtc; on a CPU machine Debian's ``hipcc`` package brings an
LLVM 15 that targets gfx90a and gfx940, not gfx942). Macros, the binary cache and the compiler log in a failure
are shared with the CUDA C++ path (``backends.native``). Untested on AMD hardware here: only the compile side
has run (``tests/cpu/backends/test_hip_compile.py``).
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from kerntune.backends.base import digest
from kerntune.backends.cubin import Inspection
from kerntune.backends.hsaco import inspect_amdgcn
from kerntune.backends.native import NativeBinary, cache_load, cache_store, compiler_log, macros, threads, tool_identity
from kerntune.errors import BackendUnavailable, CandidateFailed
from kerntune.isa.targets import missing_features
from kerntune.model import FailureKind, HipKernel, Meta

HipBinary = NativeBinary
"""``code`` is an AMD code object or a clang offload bundle."""


def hipcc_path() -> str | None:
    for place in (os.environ.get("ROCM_PATH"), os.environ.get("HIP_PATH"), "/opt/rocm"):
        if place and (Path(place) / "bin" / "hipcc").exists():
            return str(Path(place) / "bin" / "hipcc")
    return shutil.which("hipcc")


def _hipcc_env() -> dict[str, str]:
    # hipcc compiles for NVIDIA when it finds nvcc on PATH (a CUDA machine with ROCm's compiler beside it): say AMD.
    return {**os.environ, "HIP_PLATFORM": "amd"}


@functools.cache
def _hiprtc() -> Any:
    """hip-python's hiprtc when it loads and answers, else None (no ROCm runtime, or an older one without the
    separate libhiprtc it binds)."""
    try:
        from hip import hiprtc

        err, _, _ = hiprtc.hiprtcVersion()
        return hiprtc if err == hiprtc.hiprtcResult.HIPRTC_SUCCESS else None
    except Exception:  # ImportError, or the library failing to load: either way hipcc is the compiler
        return None


def _compiler_identity() -> str:
    """Which compiler a compile would use, and its release: a cached code object is never reused across them."""
    if _hiprtc() is not None:
        import importlib.metadata

        return f"hiprtc:hip-python={importlib.metadata.version('hip-python')}"
    hipcc = hipcc_path()
    if hipcc is None:
        return "none"
    return tool_identity("hipcc", hipcc)


def compile_hsaco(kernel: HipKernel, tunables: Meta, arch: str) -> HipBinary:
    """The code object of ``kernel`` for ``tunables`` on ``arch`` (``gfx942``, ``gfx90a``...); a CandidateFailed
    (``compile``) with the compiler's log when it does not build, (``unsupported``) when the arch lacks an ISA
    feature the config requires. Cached on disk like cubins."""
    if kernel.requires is not None:
        refused = missing_features(arch, tuple(kernel.requires(tunables)))
        if refused:
            raise CandidateFailed(FailureKind.UNSUPPORTED.value, refused)
    expression = kernel.template.format(**tunables) if kernel.template else kernel.name
    key = digest(
        json.dumps(
            [
                "hip",
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
        code, entry = found
        return HipBinary(code, entry["symbol"], expression, arch, 0.0, entry["compiler"])
    binary = (
        _with_hiprtc(kernel, tunables, arch, expression)
        if _hiprtc() is not None
        else _with_hipcc(kernel, tunables, arch, expression)
    )
    cache_store(key, binary.code, {"symbol": binary.symbol, "compiler": binary.compiler})
    return binary


def _flags(kernel: HipKernel, meta: Meta, arch: str) -> list[str]:
    return [
        f"--offload-arch={arch}",
        "-O3",
        "-std=c++17",
        *(f"-D{name}={value}" for name, value in macros(meta, kernel.template)),
    ]


def _with_hiprtc(kernel: HipKernel, meta: Meta, arch: str, expression: str) -> HipBinary:
    hiprtc = _hiprtc()
    ok = hiprtc.hiprtcResult.HIPRTC_SUCCESS
    start = time.perf_counter()
    err, program = hiprtc.hiprtcCreateProgram(kernel.source.encode(), f"{kernel.name}.hip".encode(), 0, [], [])
    if err != ok:
        raise CandidateFailed(FailureKind.COMPILE.value, f"hiprtc could not create a program: {err}")
    try:
        if kernel.template:
            hiprtc.hiprtcAddNameExpression(program, expression.encode())
        options = [flag.encode() for flag in _flags(kernel, meta, arch)]
        (err,) = hiprtc.hiprtcCompileProgram(program, len(options), options)
        if err != ok:
            _, size = hiprtc.hiprtcGetProgramLogSize(program)
            log = bytearray(size)
            hiprtc.hiprtcGetProgramLog(program, log)
            raise CandidateFailed(
                FailureKind.COMPILE.value,
                f"hiprtc could not compile {expression} for {arch}: {compiler_log(log.decode(errors='replace'))}",
            )
        _, size = hiprtc.hiprtcGetCodeSize(program)
        code = bytearray(size)
        hiprtc.hiprtcGetCode(program, code)
        symbol = kernel.name
        if kernel.template:
            _, lowered = hiprtc.hiprtcGetLoweredName(program, expression.encode())
            symbol = lowered.decode() if isinstance(lowered, bytes) else str(lowered)
    finally:
        hiprtc.hiprtcDestroyProgram(program.createRef())
    return HipBinary(bytes(code), symbol, expression, arch, time.perf_counter() - start, "hiprtc")


def _run_hipcc(kernel: HipKernel, meta: Meta, arch: str, mode: list[str], suffix: str) -> bytes:
    """hipcc on the kernel's source with the config's macros; ``mode`` picks the output (``--genco``, ``-S``)."""
    hipcc = hipcc_path()
    if hipcc is None:
        raise BackendUnavailable(
            "compiling HIP needs hip-python with a ROCm runtime (pip install 'kerntune[hip]') "
            "or hipcc (ROCm, or Debian's hipcc package for compile-only checks)"
        )
    if kernel.template:
        raise BackendUnavailable(
            "template kernels are instantiated through hiprtc: pip install 'kerntune[hip]' on a ROCm machine"
        )
    with tempfile.TemporaryDirectory() as tmp:
        source, out = Path(tmp) / "kernel.hip", Path(tmp) / f"kernel{suffix}"
        source.write_text(kernel.source)
        # hiprtc declares the HIP built-ins (threadIdx, __shfl_down...) itself; for hipcc they come from the header,
        # so one source serves both compilers.
        done = subprocess.run(
            [
                hipcc,
                *mode,
                "-include",
                "hip/hip_runtime.h",
                *_flags(kernel, meta, arch),
                *kernel.options,
                "-o",
                str(out),
                str(source),
            ],
            capture_output=True,
            text=True,
            env=_hipcc_env(),
        )
        if done.returncode != 0 or not out.exists():
            errors = "\n".join(line for line in done.stderr.splitlines() if "warning:" not in line)
            raise CandidateFailed(
                FailureKind.COMPILE.value, f"hipcc could not compile {kernel.name} for {arch}: {compiler_log(errors)}"
            )
        return out.read_bytes()


def _with_hipcc(kernel: HipKernel, meta: Meta, arch: str, expression: str) -> HipBinary:
    start = time.perf_counter()
    code = _run_hipcc(kernel, meta, arch, ["--genco"], ".hsaco")
    return HipBinary(code, expression, expression, arch, time.perf_counter() - start, "hipcc")


def kernel_assembly(text: str, symbol: str) -> str:
    """The part of an AMDGCN assembly file that belongs to ``symbol``: from its ``.globl`` to the next kernel's
    (its code, the ``; NumVgprs``-style comments after it, and its ``.amdhsa_kernel`` descriptor)."""
    starts = [m for m in re.finditer(r"^\s*\.globl\s+(\S+)", text, re.MULTILINE)]
    for i, match in enumerate(starts):
        if match.group(1) == symbol:
            end = starts[i + 1].start() if i + 1 < len(starts) else text.find("amdhsa.kernels:", match.end())
            return text[match.start() : end if end > 0 else len(text)]
    kernels = ", ".join(re.findall(r"^\s*\.amdhsa_kernel\s+(\S+)", text, re.MULTILINE)) or "none"
    raise CandidateFailed(
        FailureKind.COMPILE.value,
        f"the source has no kernel {symbol!r} (kernels: {kernels}): "
        'HipKernel(name=...) names an extern "C" __global__ function',
    )


def inspect_hip(kernel: HipKernel, meta: Meta, tunables: Meta, arch: str) -> tuple[HipBinary, Inspection]:
    """Compile for ``arch`` and read the kernel's assembly: VGPRs/AGPRs/SGPRs, LDS, scratch, census, occupancy.
    ``meta`` (shape and tunables) sizes the launch; ``tunables`` are the macros."""
    binary = compile_hsaco(kernel, tunables, arch)
    text = _run_hipcc(kernel, tunables, arch, ["--cuda-device-only", "-S"], ".s").decode(errors="replace")
    lds = int(kernel.shared_bytes(meta)) if kernel.shared_bytes else 0
    section = kernel_assembly(text, binary.symbol)
    return binary, inspect_amdgcn(section, arch, dynamic_lds=lds, threads=threads(kernel, meta))
