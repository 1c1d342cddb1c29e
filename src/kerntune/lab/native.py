"""The lab for kerntune's native kernels (CUDA C++ through NVRTC, HIP through hiprtc): a capture hook on the
backends' ``compile``, whose launches it wraps, and the replayed launch.

A native kernel has no Python function to import: the capture keeps what rebuilds it — the source text, the
kernel's name and template instance, the macros the config became (``-D NAME=VALUE``), the compiler options and
arch — with the launch shape the backend used (grid, block, dynamic shared memory), the arguments in launch order
(tensors as safetensors, numpy scalars with their dtype) and the hash of the binary that ran. A replay compiles it
again through the same backend (the binary cache serves the identical binary; the replay says whether the hash
matches) and launches it on torch's stream, so the lab's timing, restore and flush apply unchanged. A variant is a
source file with a kernel of the same name and parameters (``--variant k.cu``), or other macro values
(``--set TILE=32``) on the captured launch shape. ``lab save`` writes a variant's text over the source string in
the program file that holds it, as for OpenCL.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from kerntune.backends.base import Backend, Compiled
from kerntune.errors import UsageError
from kerntune.lab.captured import CapturedCall
from kerntune.lab.manifest import DeviceRecord, KernelIdentity, Manifest, ScalarOption
from kerntune.lab.operator import too_large
from kerntune.lab.snapshot import MANIFEST, ArgumentRecord, failure, snapshot
from kerntune.lab.variant import require_signature, source_file, source_text
from kerntune.model import CudaKernel, HipKernel
from kerntune.runtime.keys import kernel_hash

if TYPE_CHECKING:
    from kerntune.backends.torch import TorchBackend

LANGUAGES = ("cuda", "hip")
BACKENDS = (("kerntune.backends.cuda", "CudaBackend"), ("kerntune.backends.hip", "HipBackend"))


def backend_classes() -> list[type[Backend]]:
    """The native backends this machine can import (cuda.core, hip-python): the classes whose ``compile`` the
    capture wraps."""
    import importlib

    from kerntune.errors import KerntuneError

    found = []
    for module, name in BACKENDS:
        try:
            found.append(getattr(importlib.import_module(module), name))
        except (ImportError, KerntuneError):
            continue
    return found


def parameters(source: str, name: str) -> list[str] | None:
    """The parameter names of ``__global__ void name(...)`` (a template's too), or None where the source does not
    spell its signature out (a macro writes it)."""
    found = re.search(
        r"__global__\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?void\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?"
        + re.escape(name)
        + r"\s*\(([^)]*)\)",
        source,
    )
    if found is None:
        return None
    return [re.split(r"[\s*&]+", p.split("=")[0].strip())[-1] for p in found.group(1).split(",") if p.strip()]


def _scalars(values: Mapping[str, object]) -> dict[str, ScalarOption]:
    return {
        k: (int(v) if isinstance(v, bool) else v) for k, v in values.items() if isinstance(v, (bool, int, float, str))
    }


def describe(
    backend: object, kernel: CudaKernel | HipKernel, tunables: Mapping[str, object], meta: Mapping[str, object]
) -> Manifest:
    """The manifest's kernel identity and launch shape of a native kernel compiled by ``backend``."""
    file, file_sha = source_file(kernel.source)
    identity: KernelIdentity = {
        "language": kernel.language,
        "name": kernel.name,
        "source": kernel.source,
        "source_hash": kernel_hash(kernel.source),
        "file": file,
        "file_sha256": file_sha,
        "template": kernel.template,
        "compile_options": list(kernel.options),
        "arch": kernel.arch or "",
        "device_arch": getattr(backend, "arch", ""),
        "arg_names": parameters(kernel.source, kernel.name),
    }
    grid = [int(g) for g in kernel.grid(dict(meta))]
    block = [int(b) for b in kernel.block(dict(meta))]
    shared = int(kernel.shared_bytes(dict(meta))) if kernel.shared_bytes else 0
    return {"kernel": identity, "grid": grid, "block": block, "shared_bytes": shared, "options": _scalars(tunables)}


def arguments(call_args: Mapping[str, object]) -> tuple[dict[str, object], dict[str, ArgumentRecord]]:
    """The launch's tensors and plain scalars (what ``snapshot`` stores), and its numpy scalars with their dtype
    (a kernel reads an ``np.int64`` as 8 bytes: the type is part of the call)."""
    plain: dict[str, object] = {}
    typed: dict[str, ArgumentRecord] = {}
    for name, value in call_args.items():
        if isinstance(value, np.generic):
            typed[name] = {"kind": "scalar", "value": value.item(), "dtype": str(value.dtype)}
        else:
            plain[name] = value
    return plain, typed


def hook_compile(
    state: Any, header: Callable[[int, str], Manifest], device_of: Callable[[Mapping[str, object]], DeviceRecord]
) -> Callable[[Callable[..., object]], Callable[..., object]]:
    """The wrapper of a native backend's ``compile``: every launch of the compiled kernel is counted under its
    name; the ``state.nth`` launch of ``state.kernel`` is saved around the real launch (inputs before, outputs
    after). A capture that fails is recorded in ``state.errors``; the launch always runs."""

    def wrap(original: Callable[..., object]) -> Callable[..., object]:
        def compile(self: Any, kernel: Any, tunables: Any, meta: Any, args: dict[str, Any]) -> Any:
            compiled = original(self, kernel, tunables, meta, args)
            if not isinstance(compiled, Compiled):  # every backend's compile returns one; the hook wraps nothing else
                return compiled
            if getattr(kernel, "language", "") not in LANGUAGES:
                return compiled
            launch = compiled.launch

            def captured(call_args: dict[str, object]) -> None:
                state.count(kernel.name, kernel.language)
                if kernel.name != state.kernel or state.manifest is not None or state.refused:
                    launch(call_args)
                    return
                state.seen += 1
                if state.seen != state.nth:
                    launch(call_args)
                    return
                manifest = None
                try:
                    plain, typed = arguments(call_args)
                    state.refused = too_large(plain, state.limit_bytes, f"launch {state.nth} of {kernel.name}")
                    if not state.refused:
                        state.out.mkdir(parents=True, exist_ok=True)
                        table, sha = snapshot(plain, state.out / "inputs.safetensors")
                        table["arguments"] = {n: table["arguments"].get(n) or typed[n] for n in call_args}
                        manifest = {
                            **header(state.nth, state.scope),
                            **describe(self, kernel, tunables, meta),
                            "positional": list(call_args),
                            **table,
                            "inputs_sha256": sha,
                            "interpreted": False,
                            "device": device_of(plain),
                            "binary_hash": compiled.binary_hash,
                        }
                except Exception as exc:
                    state.errors.append(failure(exc))
                launch(call_args)
                if manifest is not None:
                    try:
                        snapshot(arguments(call_args)[0], state.out / "outputs.safetensors")
                        (state.out / MANIFEST).write_text(json.dumps(manifest, indent=1))
                        state.manifest = manifest
                    except Exception as exc:
                        state.errors.append(failure(exc))

            return replace(compiled, launch=captured)

        return compile

    return wrap


def load_source(manifest: Manifest, variant: Path | None) -> str:
    """The captured kernel's source, or a variant's (a .cu / .hip file defining the kernel under the same name
    and parameters)."""
    identity, text = manifest["kernel"], source_text(manifest, variant)
    if variant is None:
        return text
    found = parameters(text, identity["name"])
    if found is None and f"{identity['name']}" not in text:
        raise UsageError(f"{variant} defines no __global__ void {identity['name']}(...)")
    if identity.get("arg_names") is not None and found is not None:
        require_signature(identity, found, variant)
    return text


class NativeLaunch(CapturedCall):
    """A native launch rebuilt: the source (captured or a variant) compiled by the backend it was captured
    through, at the captured macros (``options``, which ``--set`` overrides) and launch shape; timed by CUDA events
    on torch's stream as every captured call."""

    def __init__(self, manifest: Manifest, folder: Path, source: str, device: str) -> None:
        super().__init__(manifest, folder, device, device == "cuda")
        identity = manifest["kernel"]
        from kerntune.model import CudaKernel, HipKernel

        backend = self._backend(identity["language"])
        grid, block, shared = tuple(manifest["grid"]), tuple(manifest["block"]), int(manifest["shared_bytes"])
        kind = CudaKernel if identity["language"] == "cuda" else HipKernel
        self.kernel = kind(
            source=source,
            name=identity["name"],
            grid=lambda m: grid,
            block=lambda m: block,
            shared_bytes=(lambda m: shared) if shared else None,
            template=identity.get("template"),
            options=tuple(identity.get("compile_options") or ()),
            arch=identity.get("arch") or None,
        )
        tunables = dict(manifest["options"])
        self.compiled = backend.compile(self.kernel, tunables, tunables, {})
        self.same_binary = self.compiled.binary_hash == manifest.get("binary_hash")
        self.call = {n: self._typed(n, manifest["arguments"][n]) for n in manifest["positional"]}

    @staticmethod
    def _backend(language: str) -> TorchBackend:
        if language == "cuda":
            from kerntune.backends.cuda import CudaBackend

            return CudaBackend()
        from kerntune.backends.hip import HipBackend

        return HipBackend()

    def _typed(self, name: str, entry: ArgumentRecord) -> object:
        if entry.get("kind") == "scalar" and entry.get("dtype"):
            return np.dtype(entry["dtype"]).type(entry["value"])
        return self.values[name]

    def run(self) -> object:
        self.compiled.launch(self.call)
        return None

    def resources(self) -> dict[str, object]:
        return {
            **self.compiled.resources,
            "binary_hash": self.compiled.binary_hash,
            "same_binary_as_captured": self.same_binary,
        }
