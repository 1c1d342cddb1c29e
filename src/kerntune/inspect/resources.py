"""``kerntune inspect``: what one config of a Triton or CUDA C++ spec becomes on each target, without the
target's GPU (CUDA C++: compiled by NVRTC or nvcc for each sm_* target, read through ``backends.cubin``); a
Vulkan shader's pipeline as the driver of the Vulkan device present reads it (``backends.vulkan_inspect``).

In a worker process (a compiler can crash; the spec is loaded without Triton's interpreter), the spec's
inputs are made on the host and its launch runs with every ``kernel[grid](...)`` captured instead of run.
Each captured launch is cross-compiled for every target with the argument types and 16-byte divisibility
Triton's JIT would specialize on (so loads vectorize as they would on the device), and read back through
``isa/``: resources, instruction census, occupancy and its next boundary.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

from kerntune.backends.triton_types import JitFunction
from kerntune.errors import CandidateFailed, SpecError, UsageError
from kerntune.isa.targets import TARGETS
from kerntune.model import (
    Config,
    CudaKernel,
    HipKernel,
    NativeKernel,
    Problem,
    Scalar,
    Shape,
    TritonKernel,
    VulkanKernel,
)
from kerntune.settings import Settings
from kerntune.tune.inputs import parse_value, resolve_shapes
from kerntune.tune.spec import load_spec

if TYPE_CHECKING:
    import torch

INSPECT = "kerntune.inspect.resources:inspect_in_worker"
SETUP = "kerntune.inspect.resources:setup_in_worker"
LAUNCH_OPTIONS = ("num_warps", "num_stages", "num_ctas", "maxnreg")
KNOWN_TARGETS = tuple(TARGETS)
TRITON_TYPES = {
    "bfloat16": "bf16",
    "float16": "fp16",
    "float32": "fp32",
    "float64": "fp64",
    "int8": "i8",
    "int16": "i16",
    "int32": "i32",
    "int64": "i64",
    "uint8": "u8",
    "bool": "i1",
    "float8_e4m3fn": "fp8e4nv",
    "float8_e5m2": "fp8e5",
}


@dataclass(frozen=True)
class InspectRequest:
    spec: str
    configs: Sequence[Mapping[str, object]]
    """Overrides over the spec's default config: one config, or two to compare (``kerntune.inspect.diff``)."""
    targets: Sequence[str]
    shape: Mapping[str, str] | None = None
    dtype: str | None = None


def setup_in_worker(state: dict[str, object], payload: Mapping[str, str]) -> dict[str, str]:
    # Compiling for a target needs Triton's real JIT functions, never the interpreter's stand-ins.
    os.environ.pop("TRITON_INTERPRET", None)
    loaded = load_spec(payload["spec_path"])
    if not isinstance(loaded.problem.kernel, (TritonKernel, NativeKernel, VulkanKernel)):
        raise SpecError(
            "inspect cross-compiles Triton, CUDA C++ and HIP kernels and reads Vulkan pipelines; this "
            f"spec's kernel is {loaded.problem.kernel.language}"
        )
    state["problem"] = loaded.problem
    return {"name": loaded.problem.name}


def _argument_type(name: str, value: object) -> tuple[str, bool]:
    """Triton's type for one runtime argument and whether it is divisible by 16 (pointer alignment or value)."""
    import torch

    if isinstance(value, torch.Tensor):
        return "*" + _element_type(name, value), value.data_ptr() % 16 == 0
    block_shape, base = getattr(value, "block_shape", None), getattr(value, "base", None)
    if isinstance(base, torch.Tensor) and block_shape is not None:
        # A host-made TMA descriptor (triton.tools.tensor_descriptor.TensorDescriptor): Triton specializes the
        # kernel on its element type and block shape, not on its address or the tensor's extent.
        # A Gluon descriptor also carries its shared-memory layout, which is part of the kernel's type.
        layout = getattr(value, "layout", None)
        tail = f",{layout!r}" if layout is not None else ""
        return f"tensordesc<{_element_type(name, base)}[{', '.join(map(str, block_shape))}]{tail}>", False
    if isinstance(value, bool):
        return "i1", False
    if isinstance(value, int):
        return ("i32" if -(2**31) <= value < 2**31 else "i64"), value % 16 == 0
    if isinstance(value, float):
        return "fp32", False
    raise UsageError(
        f"argument {name!r} is a {type(value).__name__}: inspect cross-compiles tensor, TMA "
        "descriptor, int and float arguments only"
    )


def _element_type(name: str, tensor: torch.Tensor) -> str:
    dtype = str(tensor.dtype).removeprefix("torch.")
    if dtype not in TRITON_TYPES:
        raise UsageError(f"argument {name!r} has dtype {dtype}, which inspect cannot map to a Triton type")
    return TRITON_TYPES[dtype]


def compile_inputs(
    fn: JitFunction, args: tuple[object, ...], kwargs: dict[str, object]
) -> tuple[dict[str, str], dict[str, object], dict[tuple[int, ...], list[list[object]]], dict[str, object]]:
    """What Triton's JIT would compile ``fn[grid](*args, **kwargs)`` as: its signature, constexprs, specialization
    attributes and launch options (for ``triton_cross.cross_compile_source``)."""
    names = list(fn.arg_names)
    values = dict(zip(names, args, strict=False))
    values.update({k: v for k, v in kwargs.items() if k in names})
    constexpr_names = {names[i] for i in getattr(fn, "constexprs", [])}
    signature: dict[str, str] = {}
    constexprs: dict[str, object] = {}
    attrs: dict[tuple[int, ...], list[list[object]]] = {}
    for index, name in enumerate(names):
        if name not in values:
            raise UsageError(f"the launch gave no value for argument {name!r} of {fn.__name__}")
        value = values[name]
        # Triton's JIT turns an int argument equal to 1 (a unit stride) into a constant: contiguity the
        # compiler then sees and vectorizes on; so does this.
        if name in constexpr_names or (type(value) is int and value == 1):
            signature[name], constexprs[name] = "constexpr", value
            continue
        signature[name], divisible = _argument_type(name, values[name])
        if divisible:
            attrs[(index,)] = [["tt.divisibility", 16]]  # Triton >= 3.3's form of its "D" specialization
    options = {k: v for k, v in kwargs.items() if k in LAUNCH_OPTIONS}
    return signature, constexprs, attrs, options


class InspectPayload(TypedDict):
    shape: dict[str, Scalar]
    config: dict[str, Scalar]
    dtype: str
    targets: list[str]


def inspect_in_worker(state: dict[str, object], payload: InspectPayload) -> list[dict[str, object]]:
    problem = state["problem"]
    if not isinstance(problem, Problem):
        raise RuntimeError("this worker has no spec loaded: call setup_in_worker first")
    shape = Shape.of(payload["shape"])
    config = Config.of(payload["config"])
    meta, tunables = problem.space.meta(config, shape), problem.space.tunables(config, shape)
    if isinstance(problem.kernel, NativeKernel):
        return _inspect_native(problem.kernel, meta, tunables, payload["targets"])
    if isinstance(problem.kernel, VulkanKernel):
        return [
            _inspect_vulkan(problem, shape, meta, tunables, payload["dtype"], target) for target in payload["targets"]
        ]

    from kerntune.backends.triton import intercepted_launches
    from kerntune.backends.triton_cross import cross_compile_source, inspect_compiled

    args = problem.make_inputs(shape.as_dict(), payload["dtype"], 1)
    kernel = problem.kernel
    if not isinstance(kernel, TritonKernel):
        raise SpecError(f"inspect reads Triton, native and Vulkan kernels; this spec's is {kernel.language}")
    calls: list[tuple[JitFunction, object, tuple[object, ...], dict[str, object]]] = []
    with intercepted_launches(lambda *call: calls.append(call)):  # recorded, never run
        if kernel.launch is not None:
            kernel.launch(kernel.fn, args, meta)
        else:
            names = set(kernel.fn.arg_names)
            kernel.fn[tuple(kernel.grid(meta))](
                *args.values(), **{k: v for k, v in tunables.items() if k in names or k in LAUNCH_OPTIONS}
            )
    if not calls:
        raise UsageError("the spec's launch ran no Triton kernel for this config")
    rows = []
    for fn, _grid, call_args, call_kwargs in calls:
        signature, constexprs, attrs, options = compile_inputs(fn, call_args, call_kwargs)
        for target in payload["targets"]:
            row: dict[str, object] = {"kernel": fn.__name__, "target": target, "options": options}
            try:
                compiled = cross_compile_source(fn, signature, constexprs, attrs, target, options)
                found = inspect_compiled(compiled, target)
                row.update(
                    resources=found.resources,
                    census=found.census,
                    spills=found.spills,
                    occupancy=asdict(found.occupancy) if found.occupancy else None,
                    next_boundary=found.next_boundary,
                )
            except CandidateFailed as exc:
                row["error"] = exc.reason
            rows.append(row)
    return rows


def _inspect_native(
    kernel: NativeKernel, meta: Mapping[str, object], tunables: Mapping[str, object], targets: Sequence[str]
) -> list[dict[str, object]]:
    """A CUDA C++ kernel compiled for each NVIDIA target (NVRTC, or nvcc), a HIP kernel for each AMD target
    (hiprtc or hipcc): one row per target."""
    from kerntune.backends.cubin import Inspection

    vendor, language, builds_for, other = (
        ("cuda", "CUDA C++", "NVIDIA", "AMD: write it as a HipKernel")
        if isinstance(kernel, CudaKernel)
        else ("hip", "HIP", "AMD", "NVIDIA: write it as a CudaKernel")
    )
    rows: list[dict[str, object]] = []
    for target in targets:
        row: dict[str, object] = {"kernel": kernel.name, "target": target, "options": {}}
        if TARGETS[target][0] != vendor:
            row["error"] = f"a {language} kernel builds for {builds_for} targets only ({target} is {other})"
        else:
            try:
                found: Inspection
                if isinstance(kernel, CudaKernel):
                    from kerntune.backends.cuda_compile import inspect_cuda

                    cuda_binary, found = inspect_cuda(kernel, dict(meta), dict(tunables), target)
                    compiler = cuda_binary.compiler
                elif isinstance(kernel, HipKernel):
                    from kerntune.backends.hip_compile import inspect_hip

                    hip_binary, found = inspect_hip(kernel, dict(meta), dict(tunables), target)
                    compiler = hip_binary.compiler
                else:
                    raise CandidateFailed("error", f"no inspector for a {type(kernel).__name__}")
                row.update(
                    resources=found.resources,
                    census=found.census,
                    spills=found.spills,
                    occupancy=asdict(found.occupancy) if found.occupancy else None,
                    next_boundary=found.next_boundary,
                    compiler=compiler,
                )
            except CandidateFailed as exc:
                row["error"] = exc.reason
        rows.append(row)
    return rows


def _inspect_vulkan(
    problem: Problem, shape: Shape, meta: Mapping[str, object], tunables: Mapping[str, object], dtype: str, target: str
) -> dict[str, object]:
    """A Vulkan shader is not cross-compiled: its pipeline is built on the Vulkan device ``target`` names
    (``vulkan``: the first discrete GPU, else the first device; ``vulkan:NAME`` or ``vulkan:INDEX``), and the
    driver's own reading of it is returned — statistics and ISA text where the driver offers them, a sentence
    saying it does not where it does not."""
    from kerntune.backends.vulkan import VulkanBackend

    backend = VulkanBackend(device=target)
    backend.capture_internal = True
    args = backend.place(problem.make_inputs(shape.as_dict(), dtype, 1))
    compiled = backend.compile(problem.kernel, dict(tunables), dict(meta), args)
    resources = dict(compiled.resources)
    reading = resources.pop("driver", None) or {"not_exposed": backend.not_exposed()}
    if not isinstance(problem.kernel, VulkanKernel):
        raise SpecError(f"a Vulkan inspection needs a VulkanKernel; this spec's is {problem.kernel.language}")
    row: dict[str, object] = {
        "kernel": problem.kernel.label,
        "target": f"{target} ({backend.props.deviceName})",
        "options": {},
        "compiler": dict(backend.target().versions)["driver"],
    }
    for key in ("local_size", "workgroups"):
        resources[key] = "×".join(str(v) for v in resources[key])
    resources.pop("specialization", None)
    row["internal"] = reading.pop("internal", [])
    row["units"] = reading.pop("units", {})
    if "internal_note" in reading:  # the query worked and the driver gave none: said, beside its statistics
        row["internal_note"] = reading.pop("internal_note")
    if "not_exposed" in reading:
        row["not_exposed"] = reading.pop("not_exposed")
    row["spills"] = reading.get("spills")
    row["resources"] = {**resources, **reading}
    return row


def inspect(request: InspectRequest, settings: Settings, log_dir: Path) -> list[dict[str, Any]]:
    """Cross-compile the request's configs for each target in a worker; one row per (config, kernel, target),
    with ``error`` set where the kernel does not build for that target. Unknown targets are a UsageError."""
    from kerntune.exec.pool import Worker

    loaded = load_spec(request.spec)
    problem = loaded.problem
    if isinstance(problem.kernel, VulkanKernel):
        wrong = [t for t in request.targets if t != "vulkan" and not t.startswith("vulkan:")]
        if wrong or not request.targets:
            raise UsageError(
                f"a Vulkan shader is read on the Vulkan device present, not cross-compiled: give "
                f"--target vulkan (or vulkan:NAME, vulkan:INDEX){f', not {wrong[0]!r}' if wrong else ''}"
            )
    else:
        unknown = [t for t in request.targets if t not in KNOWN_TARGETS]
        if unknown or not request.targets:
            raise UsageError(
                f"unknown target {unknown[0]!r}: choose from {', '.join(KNOWN_TARGETS)}"
                if unknown
                else f"give at least one --target: {', '.join(KNOWN_TARGETS)}"
            )
    shape = resolve_shapes(problem, [request.shape] if request.shape else [])[0]
    dtype = request.dtype or problem.dtypes[0]
    if dtype not in problem.dtypes:
        raise UsageError(f"dtype {dtype!r} is not one of this spec's dtypes: {', '.join(problem.dtypes)}")
    if not 1 <= len(request.configs) <= 2:
        raise UsageError("give one --config to inspect, or two to compare side by side")
    configs = []
    for overrides in request.configs:
        unknown_params = [k for k in overrides if k not in problem.space.params]
        if unknown_params:
            raise UsageError(
                f"unknown parameter {unknown_params[0]!r}: this spec's are {', '.join(problem.space.params)}"
            )
        configs.append(
            Config.of(
                {
                    **problem.space.default_config().as_dict(),
                    **{k: parse_value(str(v), f"config {k}") for k, v in overrides.items()},
                }
            )
        )
    worker = Worker(
        (SETUP, {"spec_path": str(loaded.path)}),
        log_path=log_dir / f"inspect-{os.getpid()}.log",
        setup_timeout_s=settings.setup_timeout_s,
    )
    worker.start()
    rows: list[dict[str, Any]] = []
    try:
        for config in configs:
            payload = {
                "shape": shape.as_dict(),
                "config": config.as_dict(),
                "dtype": dtype,
                "targets": list(request.targets),
            }
            outcome = worker.call(INSPECT, payload, settings.candidate_timeout_s * len(request.targets))
            if outcome.status != "ok":
                error = UsageError if outcome.kind == "UsageError" else SpecError
                raise error(f"inspect of {config.key} failed ({outcome.kind}): {outcome.reason}")
            rows += [{**row, "shape": shape.key, "config": config.key, "dtype": dtype} for row in outcome.value]
    finally:
        worker.stop()
    return rows
