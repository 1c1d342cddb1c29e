"""Capture one real Triton launch: ``with kerntune.lab.capture("matmul_kernel", out="cap"):`` around a live
program, or ``kerntune lab capture --kernel NAME [--nth K] -o DIR -- python PROGRAM ...``.

A hook on ``JITFunction.run`` (and the interpreter's ``InterpretedFunction.run``: every ``kernel[grid](...)``,
``triton.autotune``'s chosen config and kerntune's dispatcher pass through it) waits for the ``nth`` launch of the
kernel named ``kernel``, snapshots its arguments before the launch (``inputs.safetensors``) and after it
(``outputs.safetensors``: what the real program computed, which a replay must reproduce), and writes
``manifest.json``: the kernel's source, file, first line and hashes, its argument names, the resolved grid, the
constexprs and launch options, the scalar arguments, every tensor's dtype, shape, strides, offset and alias group,
the device and the versions. Scope ``reachable`` (default) saves the launch's arguments; ``all`` also saves every
other live tensor on the launch's device (``others.safetensors``), the whole memory picture. Never pickle.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import inspect
import json
import os
import platform
import re
from collections import Counter, deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TypedDict

import torch

from kerntune.errors import UsageError
from kerntune.lab.inductor import arguments as inductor_arguments
from kerntune.lab.inductor import autotuner_class, chosen, keep_source, live_function
from kerntune.lab.inductor import kernel_name as inductor_kernel_name
from kerntune.lab.manifest import DeviceRecord, DispatchRecord, KernelIdentity, Manifest, ScalarOption
from kerntune.lab.operator import OperatorState, arm, is_operator, overloads, too_large
from kerntune.lab.snapshot import MANIFEST, SnapshotTable, failure, snapshot
from kerntune.runtime.keys import arch_name, kernel_hash

FORMAT = "kerntune-capture"
SCOPES = ("reachable", "all")


@dataclass
class CaptureState:
    kernel: str
    nth: int
    out: Path
    scope: str
    seen: int = 0
    manifest: Manifest | None = None
    errors: list[str] = field(default_factory=list)
    selections: deque[tuple[Any, tuple[object, ...], dict[str, object], Mapping[str, object]]] = field(
        default_factory=lambda: deque(maxlen=64)
    )
    """The latest kerntune Dispatcher selections (dispatcher, args, kwargs, config): which one fed the launch."""
    limit_bytes: int = 4096 << 20
    calls: Counter[str] = field(default_factory=Counter)
    """Launches per kernel name, every kernel the hooks saw: what a capture that missed names."""
    kinds: dict[str, str] = field(default_factory=dict)
    """Per kernel name, which hook saw it: triton, inductor, opencl, cuda or hip."""
    refused: str = ""
    """Why the launch asked for was not saved (over the size limit), or empty."""
    inside_inductor: int = 0
    """Inside an Inductor launch: the Triton hook below it does not count the launch again."""

    def summary(self) -> dict[str, object]:
        return {
            "captured": self.manifest is not None,
            "seen": self.seen,
            "calls": dict(self.calls.most_common()),
            "kinds": self.kinds,
            "refused": self.refused,
            "errors": self.errors[:5],
        }

    def count(self, name: str, kind: str) -> None:
        if len(self.calls) < 256 or name in self.calls:
            self.calls[name] += 1
            self.kinds.setdefault(name, kind)


def _versions() -> dict[str, str]:
    import importlib.metadata

    found = {"python": platform.python_version(), "torch": torch.__version__}
    for dist in ("triton", "pyopencl", "kerntune"):
        with contextlib.suppress(importlib.metadata.PackageNotFoundError):
            found[dist] = importlib.metadata.version(dist)
    return found


def device_of(values: Mapping[str, object]) -> DeviceRecord:
    tensors = [v for v in values.values() if isinstance(v, torch.Tensor)]
    device = tensors[0].device if tensors else torch.device("cpu")
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        # Not gcnArchName alone: on CUDA builds of torch it holds the device's name, not an sm_* arch.
        return {
            "type": "cuda",
            "name": props.name,
            "arch": arch_name(props, bool(torch.version.hip)),
            "compute_units": props.multi_processor_count,
        }
    return {"type": device.type, "name": platform.processor() or "cpu", "arch": "host", "compute_units": 0}


def kernel_identity(fn: Any) -> KernelIdentity:
    """Where the kernel's definition lives, and its text: what replay imports and ``lab save`` rewrites."""
    python_fn = getattr(fn, "fn", fn)
    path = Path(inspect.getsourcefile(python_fn) or "").resolve()
    lines, first = inspect.getsourcelines(python_fn)
    source = "".join(lines)
    return {
        "language": "triton",
        "name": python_fn.__name__,
        "file": str(path),
        "first_line": first,
        "source": source,
        "source_hash": kernel_hash(source),
        "file_sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
        "arg_names": list(getattr(fn, "arg_names", inspect.signature(python_fn).parameters)),
    }


def resolve_grid(grid: Any, bound: Mapping[str, object]) -> list[int]:
    resolved = grid(bound) if callable(grid) else grid
    return [int(g) for g in (resolved if isinstance(resolved, (tuple, list)) else (resolved,))]


def _other_tensors(device: torch.device, skip: set[int]) -> dict[str, torch.Tensor]:
    found: dict[str, torch.Tensor] = {}
    for obj in gc.get_objects():
        with contextlib.suppress(Exception):  # objects mid-teardown can refuse attribute access
            if isinstance(obj, torch.Tensor) and obj.device == device and id(obj) not in skip:
                found[f"other{len(found)}"] = obj
    return found


def _header(nth: int, scope: str) -> Manifest:
    return {
        "format": FORMAT,
        "version": 1,
        "launch_of": nth,
        "scope": scope,
        "versions": _versions(),
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }


def _write(state: CaptureState, fn: object, args: tuple[object, ...], kwargs: dict[str, object], grid: Any) -> None:
    identity = kernel_identity(fn)
    names = identity["arg_names"] or []
    values = {**dict(zip(names, args, strict=False)), **{k: v for k, v in kwargs.items() if k in names}}
    bad = [
        k for k, v in kwargs.items() if k not in names and v is not None and not isinstance(v, (bool, int, float, str))
    ]
    if bad:
        raise UsageError(f"launch option {bad[0]!r} is not a scalar: the lab records scalar options only")
    options: dict[str, ScalarOption] = {
        k: v for k, v in kwargs.items() if k not in names and (v is None or isinstance(v, (bool, int, float, str)))
    }
    state.refused = too_large(values, state.limit_bytes, f"launch {state.nth} of {identity['name']}")
    if state.refused:
        return
    state.out.mkdir(parents=True, exist_ok=True)
    table, inputs_sha = snapshot(values, state.out / "inputs.safetensors")
    manifest: Manifest = {
        **_header(state.nth, state.scope),
        "kernel": identity,
        "grid": resolve_grid(grid, {**values, **options}),
        "options": options,
        "positional": names[: len(args)],
        **table,
        "inputs_sha256": inputs_sha,
        "interpreted": os.environ.get("TRITON_INTERPRET") == "1",
        "device": device_of(values),
    }
    dispatch = _dispatch_of(state, fn, {**values, **options})
    if dispatch is not None:
        manifest["dispatch"] = dispatch
    if state.scope == "all":
        tensors = [v for v in values.values() if isinstance(v, torch.Tensor)]
        others = _other_tensors(tensors[0].device, {id(t) for t in tensors}) if tensors else {}
        manifest["others"] = {"count": len(others), "bytes": sum(t.numel() * t.element_size() for t in others.values())}
        snapshot(others, state.out / "others.safetensors")
    state.manifest = manifest


def _dispatch_of(state: CaptureState, fn: object, launch: dict[str, object]) -> DispatchRecord | None:
    """The latest Dispatcher selection made for this kernel — its key's ``source`` is the kernel's hash, or, with
    no source field, the dispatcher's name prefixes the kernel's — whose config the launch ran (every config
    field the launch names holds the selected value): the table key, decision and table this launch's config
    came from, or None."""
    source, name = kernel_hash(fn), getattr(getattr(fn, "fn", fn), "__name__", "")
    for dispatcher, args, kwargs, config in reversed(state.selections):
        mine = (
            dispatcher.fixed["source"] == source
            if "source" in dispatcher.fixed
            else bool(dispatcher.name) and name.startswith(dispatcher.name)
        )
        named = [k for k in config if k in launch]
        if mine and named and all(launch[k] == config[k] for k in named):
            described = dispatcher.describe(*args, **kwargs)
            table = Path(described["table"]).resolve() if described["table"] else None
            return DispatchRecord(
                name=described["name"],
                fields=described["fields"],
                key=described["key"],
                kind=described["kind"],
                config=described["config"],
                table=str(table) if table else "",
                table_sha256=hashlib.sha256(table.read_bytes()).hexdigest() if table and table.is_file() else None,
                mode=described["mode"],
                table_validators=described["table_validators"],
                versions=described["versions"],
                disabled=described["disabled"],
            )
    return None


def check_selection(kernel: str, match: str, scope: str) -> None:
    """Refuse a selection the capture cannot make: an operator torch does not have, a ``match`` that is no regular
    expression or is given for a kernel (selected by name and ``nth``), another scope than ``reachable`` for an
    operator call."""
    if not is_operator(kernel):
        if match:
            raise UsageError(
                "--match selects among an operator's calls (--kernel aten::mm); a kernel is selected "
                "by its name and --nth"
            )
        return
    overloads(kernel)
    if scope != "reachable":
        raise UsageError("an operator call is captured with its arguments only (--tensors reachable)")
    try:
        re.compile(match)
    except re.error as exc:
        raise UsageError(f"--match {match!r} is not a regular expression: {exc}") from None


@contextlib.contextmanager
def capture(
    kernel: str, out: str | Path, *, nth: int = 1, scope: str = "reachable", match: str = "", limit_mb: float = 4096.0
) -> Iterator[CaptureState | OperatorState]:
    """Capture the ``nth`` launch of the Triton or OpenCL kernel named ``kernel`` — or, for a name with ``::``
    (``aten::mm``), the nth call of that operator whose description matches ``match`` (``lab.operator``) — into
    the folder ``out``. The state's ``manifest`` is set once it happened; nothing is written when it did not, nor
    when the launch's tensors exceed ``limit_mb`` (``refused`` says so)."""
    if scope not in SCOPES:
        raise UsageError(f"capture scope {scope!r}: choose {' or '.join(SCOPES)}")
    if nth < 1:
        raise UsageError("--nth counts launches from 1")
    check_selection(kernel, match, scope)
    if is_operator(kernel):
        operator = OperatorState(kernel, nth, Path(out), match, _header(nth, scope), device_of, int(limit_mb * 2**20))
        disarm = arm(operator)
        try:
            yield operator
        finally:
            disarm()
        return
    state = CaptureState(kernel, nth, Path(out), scope, limit_bytes=int(limit_mb * 2**20))
    originals: list[tuple[type, str, Callable[..., object]]] = []
    with contextlib.suppress(ImportError):  # a program may use Triton, pyopencl, or both
        import triton.runtime.interpreter as interpreter
        import triton.runtime.jit as jit

        originals += [(cls, "run", cls.run) for cls in (jit.JITFunction, interpreter.InterpretedFunction)]
    with contextlib.suppress(ImportError):
        import pyopencl

        originals.append((pyopencl.Kernel, "__call__", pyopencl.Kernel.__call__))

    def hooked(original: Callable[..., object]) -> Callable[..., object]:
        def run(self: Any, *args: object, grid: Any, warmup: bool, **kwargs: object) -> Any:
            if state.inside_inductor:  # Inductor's interpreter path launching the kernel its hook already counted
                return original(self, *args, grid=grid, warmup=warmup, **kwargs)
            name = getattr(getattr(self, "fn", None), "__name__", "")
            if not warmup:
                state.count(name, "triton")
            if warmup or name != state.kernel or state.manifest is not None or state.refused:
                return original(self, *args, grid=grid, warmup=warmup, **kwargs)
            state.seen += 1
            if state.seen != state.nth:
                return original(self, *args, grid=grid, warmup=warmup, **kwargs)
            _write(state, self, args, kwargs, grid)
            if state.refused:
                return original(self, *args, grid=grid, warmup=warmup, **kwargs)
            result = original(self, *args, grid=grid, warmup=warmup, **kwargs)
            names: list[str] = state.manifest["kernel"]["arg_names"] if state.manifest else []
            after = {**dict(zip(names, args, strict=False)), **{k: v for k, v in kwargs.items() if k in names}}
            snapshot(after, state.out / "outputs.safetensors")  # what the real launch computed
            (state.out / MANIFEST).write_text(json.dumps(state.manifest, indent=1))
            return result

        return run

    def hooked_opencl(original: Callable[..., object]) -> Callable[..., object]:
        def call(self: Any, queue: Any, global_size: Any, local_size: Any, *args: object, **kwargs: object) -> Any:
            state.count(self.function_name, "opencl")
            if self.function_name != state.kernel or state.manifest is not None:
                return original(self, queue, global_size, local_size, *args, **kwargs)
            state.seen += 1
            if state.seen != state.nth:
                return original(self, queue, global_size, local_size, *args, **kwargs)
            from kerntune.lab.opencl import describe_call, save_buffers

            state.out.mkdir(parents=True, exist_ok=True)
            inputs = state.out / "inputs.safetensors"
            described = describe_call(self, queue, global_size, local_size, args, inputs)
            manifest: Manifest = {
                **_header(state.nth, state.scope),
                **described,
                "scope": "reachable",
                "inputs_sha256": hashlib.sha256(inputs.read_bytes()).hexdigest(),
                "interpreted": False,
            }
            state.manifest = manifest
            result = original(self, queue, global_size, local_size, *args, **kwargs)
            save_buffers(self, queue, args, state.out / "outputs.safetensors")
            (state.out / MANIFEST).write_text(json.dumps(state.manifest, indent=1))
            return result

        return call

    def hooked_inductor(original: Callable[..., object]) -> Callable[..., object]:
        def run(self: Any, *args: object, **kwargs: object) -> Any:
            name = inductor_kernel_name(self)
            benchmark = bool(kwargs.get("benchmark_run"))  # Inductor timing its own configs: not the program's
            if not benchmark:
                state.count(name, "inductor")
            save = not benchmark and name == state.kernel and state.manifest is None and not state.refused
            if save:
                state.seen += 1
                save = state.seen == state.nth
            values = _inductor_before(state, self, args) if save else None
            state.inside_inductor += 1
            try:
                result = original(self, *args, **kwargs)
            finally:
                state.inside_inductor -= 1
            if values is not None:
                _inductor_after(state, self, args, values)
            return result

        return run

    def hooked_select(original: Callable[..., object]) -> Callable[..., object]:
        def select(self: Any, *args: object, **kwargs: object) -> Any:
            config = original(self, *args, **kwargs)
            if state.manifest is None and isinstance(config, Mapping):
                state.selections.append((self, args, kwargs, config))
            return config

        return select

    from kerntune.runtime.dispatch import Dispatcher

    originals.append((Dispatcher, "select", Dispatcher.select))
    hooks = {"run": hooked, "__call__": hooked_opencl, "select": hooked_select}
    installed: list[
        tuple[type, str, Callable[..., object], Callable[[Callable[..., object]], Callable[..., object]]]
    ] = [(cls, attribute, original, hooks[attribute]) for cls, attribute, original in originals]
    autotuner = autotuner_class()
    if autotuner is not None:  # torch.compile's Triton kernels launch through it, not through JITFunction.run
        installed.append((autotuner, "run", autotuner.run, hooked_inductor))
    from kerntune.lab.native import backend_classes, hook_compile

    for backend in backend_classes():  # kerntune's CUDA C++ / HIP launches: the compiled launch is wrapped
        compile_fn: Callable[..., object] = backend.compile
        installed.append((backend, "compile", compile_fn, hook_compile(state, _header, device_of)))
    from kerntune.lab.vulkan import backend_class
    from kerntune.lab.vulkan import hook_compile as hook_vulkan

    vulkan = backend_class()
    if vulkan is not None:  # kerntune's Vulkan dispatches: the compiled dispatch is wrapped
        installed.append((vulkan, "compile", vulkan.compile, hook_vulkan(state, _header)))
    for cls, attribute, original, hook in installed:
        setattr(cls, attribute, hook(original))
    try:
        yield state
    finally:
        for cls, attribute, original, _ in installed:
            setattr(cls, attribute, original)


class InductorInputs(TypedDict):
    """An Inductor launch's inputs, saved before it runs."""

    values: dict[str, object]
    table: SnapshotTable
    sha: str


def _inductor_before(state: CaptureState, autotuner: Any, args: tuple[object, ...]) -> InductorInputs | None:
    """Save the arguments of the Inductor launch about to run; None (and the reason kept) when it cannot be."""
    try:
        values = inductor_arguments(autotuner, args)
        state.refused = too_large(values, state.limit_bytes, f"launch {state.nth} of {state.kernel}")
        if state.refused:
            return None
        state.out.mkdir(parents=True, exist_ok=True)
        table, sha = snapshot(values, state.out / "inputs.safetensors")
        return {"values": values, "table": table, "sha": sha}
    except Exception as exc:  # the capture's failure is said; the program's launch still runs
        state.errors.append(failure(exc))
        return None


def _inductor_after(state: CaptureState, autotuner: Any, args: tuple[object, ...], saved: InductorInputs) -> None:
    """Complete an Inductor capture once its launch ran: the config Inductor chose, its grid, the outputs."""
    try:
        constexprs, options, grid, about = chosen(autotuner, args)
        table = saved["table"]
        table["arguments"].update({k: {"kind": "scalar", "value": v} for k, v in constexprs.items()})
        identity = keep_source(kernel_identity(live_function(autotuner)), state.out)
        manifest: Manifest = {
            **_header(state.nth, state.scope),
            "kernel": identity,
            "grid": grid,
            "options": options,
            "positional": [],
            **table,
            "inputs_sha256": saved["sha"],
            "interpreted": os.environ.get("TRITON_INTERPRET") == "1",
            "device": device_of(saved["values"]),
            "inductor": about,
        }
        snapshot(saved["values"], state.out / "outputs.safetensors")  # what the real launch computed
        (state.out / MANIFEST).write_text(json.dumps(manifest, indent=1))
        state.manifest = manifest
    except Exception as exc:
        state.errors.append(failure(exc))
