"""The lab for Vulkan compute shaders dispatched through kerntune's Vulkan backend: a capture hook on
``VulkanBackend.compile``, whose dispatches it wraps, and the replayed dispatch.

A capture keeps what rebuilds the dispatch: the GLSL source (or the SPIR-V, kept beside the manifest as
``shader.spv``), the entry point, the specialization constants by name and id, the ``#define``s the config
became, the local size and the workgroup counts the backend used, and the arguments in binding order — each
storage buffer's bytes (safetensors, uint8, with the array's dtype and shape; a buffer bound twice stays one),
each push-constant scalar with its numpy dtype — and the hash of the SPIR-V and constants that ran. A replay
compiles it again through a new ``VulkanBackend`` on the captured device (the same memory placement,
``KERNTUNE_VULKAN_MEMORY``), restores the buffers into fresh ones, and times each dispatch by the backend's
timestamp queries with its cache flush outside them; outputs are compared bitwise. A variant is a GLSL file with
the same entry point, storage bindings and push-constant block (``--variant v.comp``), or other values of the
captured defines and constants (``--set ITEMS=4``) on the captured dispatch shape; ``lab save`` writes a
variant's text over the source string in the program file that holds it.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from safetensors.numpy import load_file, save_file

from kerntune.backends.base import Compiled
from kerntune.errors import UsageError
from kerntune.lab.manifest import KernelIdentity, Manifest, ScalarOption
from kerntune.lab.operator import too_large
from kerntune.lab.snapshot import MANIFEST, ArgumentRecord, failure
from kerntune.lab.variant import require_signature, source_file, source_text
from kerntune.runtime.keys import kernel_hash

if TYPE_CHECKING:
    from kerntune.backends.vulkan import VulkanBackend
    from kerntune.backends.vulkan_pipeline import VulkanArray

SPIRV_FILE = "shader.spv"


def backend_class() -> type[VulkanBackend] | None:
    """kerntune's Vulkan backend where the bindings import (a driver is needed only to launch)."""
    try:
        from kerntune.backends.vulkan import VulkanBackend
    except Exception:  # no `vulkan` package or no loader: nothing to hook
        return None
    return VulkanBackend


def parameters(source: str) -> list[str]:
    """What a dispatch binds, as a variant must keep it: each storage buffer of set 0 by binding, then the
    push-constant block where there is one."""
    bindings = sorted(
        int(b) for b in re.findall(r"layout\s*\([^)]*\bbinding\s*=\s*(\d+)[^)]*\)[^;{]*\bbuffer\b", source)
    )
    push = ["push_constant"] if re.search(r"layout\s*\(\s*push_constant\s*\)", source) else []
    return [f"binding {b}" for b in bindings] + push


def _arguments(
    backend: Any, call_args: Mapping[str, object]
) -> tuple[dict[str, ArgumentRecord], dict[str, np.ndarray]]:
    """The manifest's view of a dispatch's arguments and the bytes of each distinct buffer (by first name)."""
    from kerntune.backends.vulkan_pipeline import VulkanArray

    described: dict[str, ArgumentRecord] = {}
    blobs: dict[str, np.ndarray] = {}
    seen: dict[int, str] = {}
    for name, value in call_args.items():
        if isinstance(value, VulkanArray):
            first = seen.setdefault(id(value), name)
            if first != name:
                described[name] = {"kind": "buffer", "same_as": first}
                continue
            blobs[name] = np.frombuffer(backend.read_bytes(value), dtype=np.uint8).copy()
            described[name] = {
                "kind": "buffer",
                "bytes": int(blobs[name].size),
                "dtype": str(value.dtype),
                "shape": list(value.shape),
            }
        elif isinstance(value, np.generic):
            described[name] = {"kind": "scalar", "dtype": str(value.dtype), "value": value.item()}
        else:
            raise UsageError(
                f"argument {name} is a {type(value).__name__}: a Vulkan dispatch takes buffers and numpy scalars"
            )
    return described, blobs


def describe(
    backend: Any, kernel: Any, tunables: Mapping[str, object], meta: Mapping[str, object], out: Path
) -> Manifest:
    """The manifest's shader identity, dispatch shape and the values the config set (defines and constants)."""
    glsl = isinstance(kernel.source, str)
    if not glsl:
        (out / SPIRV_FILE).write_bytes(kernel.source)
    file, file_sha = source_file(kernel.source) if glsl else (None, None)
    constants = dict(kernel.constants)
    identity: KernelIdentity = {
        "language": "vulkan",
        "name": kernel.label,
        "entry": kernel.entry,
        "source": kernel.source if glsl else None,
        "spirv": None if glsl else SPIRV_FILE,
        "source_hash": kernel_hash(kernel.source) if glsl else None,
        "file": file,
        "file_sha256": file_sha,
        "constants": constants,
        "arg_names": parameters(kernel.source) if glsl else None,
    }
    local = [int(x) for x in kernel.workgroup(dict(meta))] if kernel.workgroup else None
    options: dict[str, ScalarOption] = {k: v for k, v in tunables.items() if isinstance(v, (bool, int, float, str))}
    for name in constants:  # the specialization constants the config set
        value = meta.get(name)
        if name in meta and (value is None or isinstance(value, (bool, int, float, str))):
            options[name] = value
    target = backend.target()
    return {
        "kernel": identity,
        "grid": [int(g) for g in kernel.dispatch(dict(meta))],
        "local": local,
        "options": options,
        "device": {
            "type": "vulkan",
            "name": target.device_name,
            "arch": target.arch,
            "memory": backend.memory_kind,
            "compute_units": 0,
        },
    }


def hook_compile(
    state: Any, header: Callable[[int, str], Manifest]
) -> Callable[[Callable[..., object]], Callable[..., object]]:
    """The wrapper of ``VulkanBackend.compile``: every dispatch of the compiled shader is counted under its name;
    the ``state.nth`` dispatch of ``state.kernel`` is saved around the real one (buffers before, and after). A
    capture that fails is recorded in ``state.errors``; the dispatch always runs."""
    from dataclasses import replace

    def wrap(original: Callable[..., object]) -> Callable[..., object]:
        def compile(self: Any, kernel: Any, tunables: Any, meta: Any, args: dict[str, Any]) -> Any:
            compiled = original(self, kernel, tunables, meta, args)
            if not isinstance(compiled, Compiled):  # every backend's compile returns one; the hook wraps nothing else
                return compiled
            if getattr(kernel, "language", "") != "vulkan":
                return compiled
            launch = compiled.launch

            def captured(call_args: dict[str, object]) -> object:
                state.count(kernel.label, "vulkan")
                if kernel.label != state.kernel or state.manifest is not None or state.refused:
                    return launch(call_args)
                state.seen += 1
                if state.seen != state.nth:
                    return launch(call_args)
                manifest = None
                try:
                    described, blobs = _arguments(self, call_args)
                    state.refused = too_large(
                        {n: torch.from_numpy(b) for n, b in blobs.items()},
                        state.limit_bytes,
                        f"dispatch {state.nth} of {kernel.label}",
                    )
                    if not state.refused:
                        state.out.mkdir(parents=True, exist_ok=True)
                        save_file(blobs, str(state.out / "inputs.safetensors"))
                        sha = hashlib.sha256((state.out / "inputs.safetensors").read_bytes()).hexdigest()
                        manifest = {
                            **header(state.nth, state.scope),
                            **describe(self, kernel, tunables, meta, state.out),
                            "positional": list(call_args),
                            "arguments": described,
                            "inputs_sha256": sha,
                            "interpreted": False,
                            "binary_hash": compiled.binary_hash,
                        }
                except Exception as exc:
                    state.errors.append(failure(exc))
                result = launch(call_args)
                if manifest is not None:
                    try:
                        save_file(_arguments(self, call_args)[1], str(state.out / "outputs.safetensors"))
                        (state.out / MANIFEST).write_text(json.dumps(manifest, indent=1))
                        state.manifest = manifest
                    except Exception as exc:
                        state.errors.append(failure(exc))
                return result

            return replace(compiled, launch=captured)

        return compile

    return wrap


def check_device(manifest: Manifest) -> str:
    """Refuse a replay on a machine without the captured Vulkan device; the replay's device kind."""
    cls = backend_class()
    captured = manifest["device"]
    if cls is None:
        raise UsageError(
            f"captured on the Vulkan device {captured['name']!r}; this machine cannot load Vulkan "
            "(pip install vulkan; a driver: apt-get install mesa-vulkan-drivers for lavapipe)"
        )
    try:
        backend = cls(captured["name"], captured.get("memory"))
    except Exception as exc:
        raise UsageError(
            f"captured on the Vulkan device {captured['name']!r}, which this machine does not have "
            f"({exc}): replay where it was captured"
        ) from None
    if backend.target().arch != captured["arch"]:
        raise UsageError(f"captured on {captured['name']} ({captured['arch']}), this is {backend.target().arch}")
    return "vulkan"


def load_source(manifest: Manifest, variant: Path | None) -> str | bytes:
    """The captured shader (GLSL text, or the kept SPIR-V), or a variant's GLSL, which must keep the entry point,
    the storage bindings and the push-constant block."""
    identity = manifest["kernel"]
    if identity.get("source") is None:
        if variant is not None:
            raise UsageError(
                "this dispatch was captured from SPIR-V: a variant is GLSL source of a shader captured "
                "from GLSL; compare other constants with --set"
            )
        return b""  # the launch reads shader.spv from the capture
    text = source_text(manifest, variant)
    if variant is not None:
        if not re.search(r"\bvoid\s+" + re.escape(identity["entry"]) + r"\s*\(", text):
            raise UsageError(
                f"{variant} defines no entry point {identity['entry']}(): a variant keeps the captured entry point"
            )
        require_signature(identity, parameters(text), variant)
    return text


class VulkanLaunch:
    """A captured dispatch rebuilt on the captured Vulkan device: the shader (captured or a variant) compiled by a
    new backend at the captured defines and constants (``options``, which ``--set`` overrides) and dispatch shape,
    its buffers restored from the capture, timed by timestamp queries with the backend's flush outside them."""

    claims_timing = True

    def __init__(self, manifest: Manifest, folder: Path, source: str | bytes) -> None:
        from kerntune.backends.vulkan import VulkanBackend
        from kerntune.backends.vulkan_pipeline import VulkanArray
        from kerntune.model import VulkanKernel

        self.manifest = manifest
        identity = manifest["kernel"]
        self.backend = VulkanBackend(manifest["device"]["name"], manifest["device"].get("memory"))
        shader = source if source else (folder / (identity["spirv"] or "")).read_bytes()
        x, y, z = manifest["grid"]
        grid = (x, y, z)
        sizes = manifest.get("local")
        local = (sizes[0], sizes[1], sizes[2]) if sizes else None
        self.kernel = VulkanKernel(
            source=shader,
            dispatch=lambda m: grid,
            workgroup=(lambda m: local) if local else None,
            entry=identity["entry"],
            constants=dict(identity.get("constants") or {}),
            name=identity["name"],
        )
        blobs = load_file(str(folder / "inputs.safetensors"))
        self.buffers: dict[str, VulkanArray] = {}
        self.call: dict[str, object] = {}
        for name in manifest["positional"]:
            entry = manifest["arguments"][name]
            if entry["kind"] == "buffer" and "same_as" not in entry:
                host = blobs[name].view(np.dtype(entry["dtype"])).reshape(entry["shape"])
                placed = self.backend.place({name: host})[name]
                if not isinstance(placed, VulkanArray):
                    raise TypeError(f"the Vulkan backend placed {name} as a {type(placed).__name__}, not a buffer")
                self.buffers[name] = self.call[name] = placed
            elif entry["kind"] == "buffer":
                self.call[name] = self.buffers[entry["same_as"]]
            else:
                self.call[name] = np.dtype(entry["dtype"]).type(entry["value"])
        self.pristine = [torch.from_numpy(blobs[n].copy()) for n in self.buffers]
        options = dict(manifest["options"])
        try:
            self.compiled = self.backend.compile(self.kernel, options, options, self.call)
        except Exception as exc:
            raise UsageError(f"the shader does not build: {exc}") from None
        self.same_binary = self.compiled.binary_hash == manifest.get("binary_hash")

    def reset(self) -> None:
        for buffer, clean in zip(self.buffers.values(), self.pristine, strict=True):
            self.backend.write_bytes(buffer, clean.numpy().tobytes())

    def run(self) -> object:
        self.compiled.launch(self.call)
        return None

    def times(self, iterations: int, restore_each: bool) -> list[float]:
        """Device milliseconds of each dispatch from its timestamps; the restore, when asked, runs and finishes
        before each dispatch, and the backend's cache flush is recorded before it, outside the timestamps."""
        if not restore_each:
            return self.backend.time_launches([self.run] * iterations, flush=False)
        out = []
        for _ in range(iterations):
            self.reset()
            out += self.backend.time_launches([self.run], flush=True)
        return out

    def cache(self, restore_each: bool) -> str:
        return (
            f"cold: {self.backend.flush_bytes >> 20} MiB filled before each dispatch, outside the timestamps"
            if restore_each
            else "warm: dispatches back to back in one command buffer"
        )

    def state(self) -> list[torch.Tensor]:
        return list(self.outputs().values())

    def outputs(self) -> dict[str, torch.Tensor]:
        return {
            name: torch.frombuffer(bytearray(self.backend.read_bytes(buffer)), dtype=torch.uint8)
            for name, buffer in self.buffers.items()
        }

    def expected(self, folder: Path) -> dict[str, torch.Tensor]:
        return {n: torch.from_numpy(a) for n, a in load_file(str(folder / "outputs.safetensors")).items()}

    def aliased(self) -> list[str]:
        entries = self.manifest["arguments"].values()
        return [n for n, e in self.manifest["arguments"].items() if "same_as" in e] + [
            e["same_as"] for e in entries if "same_as" in e
        ]

    def resources(self) -> dict[str, object]:
        return {
            **self.compiled.resources,
            "binary_hash": self.compiled.binary_hash,
            "same_binary_as_captured": self.same_binary,
        }
