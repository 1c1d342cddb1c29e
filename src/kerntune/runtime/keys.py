"""The kernel-source field of a dispatch key. Standard library only.

A tuned config belongs to one kernel source: an edited kernel must miss, not inherit its predecessor's
winner. ``kernel_hash`` is what the tuner records for a run and what the live dispatcher adds to every key,
so both sides compute it one way.
"""

from __future__ import annotations

import hashlib
import inspect
import re
import sys
import textwrap
from typing import Protocol, TypedDict

from kerntune.model import NativeKernel, OpenCLKernel, Problem, VulkanKernel


class DeviceFields(TypedDict):
    """The device fields every table key carries."""

    arch: str
    compute_units: int
    device_name: str


class TorchDeviceProperties(Protocol):
    """What the runtime reads of torch's CUDA device properties (ROCm's ``gcnArchName`` is read by name)."""

    @property
    def major(self) -> int: ...

    @property
    def minor(self) -> int: ...


class OpenCLPlatform(Protocol):
    @property
    def name(self) -> str: ...


class OpenCLDevice(Protocol):
    """What the runtime reads of a pyopencl ``Device`` (duck-typed: the runtime never imports pyopencl)."""

    @property
    def name(self) -> str: ...

    @property
    def type(self) -> int: ...

    @property
    def max_compute_units(self) -> int: ...

    @property
    def platform(self) -> OpenCLPlatform: ...

    @property
    def version(self) -> str: ...

    @property
    def driver_version(self) -> str: ...


def kernel_source(kernel: object) -> str:
    """The source text of ``kernel``: a Triton ``JITFunction`` (its ``src``), a wrapper of one (``.fn``, as
    ``triton.autotune`` and ``triton.heuristics`` make), a kernel source string (OpenCL), or a Python function."""
    seen = 0
    while not isinstance(getattr(kernel, "src", None), str) and hasattr(kernel, "fn") and seen < 8:
        kernel, seen = kernel.fn, seen + 1
    src = getattr(kernel, "src", None)
    if isinstance(src, str):
        return src
    if isinstance(kernel, str):
        return kernel
    try:
        text = textwrap.dedent(inspect.getsource(kernel))  # type: ignore[arg-type]  # a TypeError is caught
    except (OSError, TypeError) as exc:
        raise ValueError(f"cannot read the source of {kernel!r} to key a dispatch table by it") from exc
    # From ``def`` on, as a JITFunction's ``src`` is: under TRITON_INTERPRET=1 the kernel is an
    # InterpretedFunction read from its Python function, decorators included, and must hash the same.
    found = re.search(r"^def\s+\w+\s*\(", text, re.MULTILINE)
    return text[found.start() :] if found else text


def kernel_hash(kernel: object) -> str:
    """16 hex digits of SHA-256 over the kernel's source text (whitespace at the ends ignored)."""
    return hashlib.sha256(kernel_source(kernel).strip().encode()).hexdigest()[:16]


def problem_source_hash(problem: Problem) -> str | None:
    """The source hash a problem's kernel is keyed by (the tuner records it for a run, deploy writes it into every
    key, a served spec's dispatcher adds it); None for kernels without one (torch callables)."""
    kernel = problem.kernel
    if isinstance(kernel, VulkanKernel) and isinstance(kernel.source, bytes):  # SPIR-V: keyed by its bytes
        return hashlib.sha256(kernel.source).hexdigest()[:16]
    source = (
        kernel.source if isinstance(kernel, (OpenCLKernel, NativeKernel, VulkanKernel)) else getattr(kernel, "fn", None)
    )
    try:
        return kernel_hash(source) if source is not None else None
    except ValueError:
        return None


def problem_kernel_name(problem: Problem) -> str:
    """The name a problem's kernel launches under (a Triton function's, a native or OpenCL kernel's)."""
    kernel = problem.kernel
    if isinstance(kernel, (OpenCLKernel, NativeKernel)):
        return kernel.name
    if isinstance(kernel, VulkanKernel):
        return kernel.label
    fn = getattr(kernel, "fn", None)
    while fn is not None and not hasattr(fn, "__name__") and hasattr(fn, "fn"):
        fn = fn.fn
    return str(getattr(fn, "__name__", "") or getattr(getattr(fn, "fn", None), "__name__", ""))


def arch_name(props: TorchDeviceProperties, hip: bool) -> str:
    """The arch a device's torch properties name: ``sm_90`` (CUDA) or ``gfx942`` (ROCm, feature suffix dropped).
    The tuner's Target and the live key both use it."""
    if hip:
        return str(getattr(props, "gcnArchName", "gfx")).split(":")[0]
    return f"sm_{props.major}{props.minor}"


def torch_device_fields(index: int | None = None) -> DeviceFields:
    """The device fields every table key carries (arch, compute_units, device_name), read from torch's view of
    the current (or ``index``) GPU, as ``kerntune tune`` recorded them for the run."""
    torch = sys.modules.get("torch")  # the live program holds it already; the runtime never imports it
    if torch is None:
        raise RuntimeError(
            "torch_device_fields reads torch's device properties: import torch first, or pass "
            "device={'arch': ..., 'compute_units': ..., 'device_name': ...} yourself"
        )
    props = torch.cuda.get_device_properties(torch.cuda.current_device() if index is None else index)
    return {
        "arch": arch_name(props, bool(getattr(torch.version, "hip", None))),
        "compute_units": int(props.multi_processor_count),
        "device_name": str(props.name),
    }


def opencl_device_fields(device: OpenCLDevice, cpu_type_bit: int = 2) -> DeviceFields:
    """The device fields of a pyopencl ``Device`` (duck-typed: the runtime never imports pyopencl), as the
    OpenCL backend records them: PoCL on a CPU is ``cpu-pocl``, other devices their name in lower case."""
    is_pocl = "portable computing language" in device.platform.name.lower()
    is_cpu = bool(device.type & cpu_type_bit)  # CL_DEVICE_TYPE_CPU
    arch = "cpu-pocl" if is_pocl and is_cpu else device.name.strip().lower().replace(" ", "-")
    return {"arch": arch, "compute_units": int(device.max_compute_units), "device_name": device.name.strip()}
