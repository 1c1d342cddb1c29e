"""The lab for OpenCL kernels (``pyopencl``): a capture hook on ``pyopencl.Kernel.__call__`` and the replayed
launch. Buffers are untyped bytes: they are saved whole (safetensors, uint8), restored into fresh buffers, and
validated bitwise; the same buffer passed twice stays one buffer. Numpy scalars keep their dtype. The kernel's
source is the program's; ``lab save`` finds the one file among the program's loaded modules that holds that
source text and replaces it there. Timing is the device's profiling events (as kerntune's OpenCL backend)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyopencl as cl
import torch
from safetensors.numpy import load_file, save_file

from kerntune.errors import UsageError
from kerntune.lab.manifest import Manifest
from kerntune.lab.snapshot import ArgumentRecord
from kerntune.lab.variant import require_signature, source_file, source_text
from kerntune.runtime.keys import kernel_hash


def parameters(source: str, name: str) -> list[str]:
    """The parameter names of ``__kernel void name(...)`` in ``source``."""
    found = re.search(r"__kernel\s+void\s+" + re.escape(name) + r"\s*\(([^)]*)\)", source)
    if found is None:
        raise UsageError(f"the source defines no __kernel void {name}(...)")
    return [re.split(r"[\s*]+", p.strip())[-1] for p in found.group(1).split(",") if p.strip()]


def describe_call(
    kernel: cl.Kernel,
    queue: cl.CommandQueue,
    global_size: Sequence[int],
    local_size: Sequence[int] | None,
    args: tuple[object, ...],
    path: Path,
) -> Manifest:
    """Snapshot the call's buffers into ``path`` and describe it for the manifest."""
    source = str(kernel.program.get_info(cl.program_info.SOURCE)).rstrip("\x00")
    device = queue.device
    names = parameters(source, kernel.function_name)
    if len(names) != len(args):
        raise UsageError(f"{kernel.function_name} takes {len(names)} arguments, the call gave {len(args)}")
    arguments: dict[str, ArgumentRecord] = {}
    seen: dict[int, str] = {}
    for name, value in zip(names, args, strict=True):
        if isinstance(value, cl.Buffer):
            first = seen.setdefault(value.int_ptr, name)
            arguments[name] = (
                {"kind": "buffer", "bytes": int(value.size)} if first == name else {"kind": "buffer", "same_as": first}
            )
        elif isinstance(value, np.generic):
            arguments[name] = {"kind": "scalar", "dtype": str(value.dtype), "value": value.item()}
        elif isinstance(value, cl.LocalMemory):
            arguments[name] = {"kind": "local", "bytes": int(value.size)}
        elif value is None:
            arguments[name] = {"kind": "none"}
        else:
            raise UsageError(
                f"argument {name} is a {type(value).__name__}: the lab captures buffers, numpy scalars and local memory"
            )
    save_buffers(kernel, queue, args, path)
    file, file_sha = source_file(source)
    return {
        "kernel": {
            "language": "opencl",
            "name": kernel.function_name,
            "source": source,
            "source_hash": kernel_hash(source),
            "file": file,
            "file_sha256": file_sha,
            "build_options": str(kernel.program.get_build_info(device, cl.program_build_info.OPTIONS)),
            "arg_names": names,
        },
        "grid": [int(g) for g in global_size],
        "local": [int(x) for x in local_size] if local_size else None,
        "options": {},
        "positional": names,
        "arguments": arguments,
        "device": {
            "type": "opencl",
            "name": device.name.strip(),
            "arch": device.platform.name.strip(),
            "compute_units": int(device.max_compute_units),
        },
    }


def save_buffers(kernel: cl.Kernel, queue: cl.CommandQueue, args: tuple[object, ...], path: Path) -> None:
    """Each distinct buffer of the call, as bytes, under its first argument's name: the inputs before the real
    launch, and after it what a replay must reproduce."""
    names = parameters(str(kernel.program.get_info(cl.program_info.SOURCE)).rstrip("\x00"), kernel.function_name)
    blobs: dict[str, np.ndarray] = {}
    seen: set[int] = set()
    for name, value in zip(names, args, strict=True):
        if isinstance(value, cl.Buffer) and value.int_ptr not in seen:
            seen.add(value.int_ptr)
            blobs[name] = np.empty(value.size, dtype=np.uint8)
            cl.enqueue_copy(queue, blobs[name], value)
    queue.finish()
    save_file(blobs, str(path))


def find_device(name: str) -> cl.Device:
    devices = [d for p in cl.get_platforms() for d in p.get_devices()]
    for device in devices:
        if device.name.strip() == name:
            return device
    raise UsageError(
        f"captured on the OpenCL device {name!r}, which this machine does not have "
        f"({', '.join(d.name.strip() for d in devices) or 'none'}): replay where it was captured"
    )


def load_source(manifest: Manifest, variant: Path | None) -> str:
    """The captured kernel's source, or a variant's (a .cl file keeping the kernel's name and parameters)."""
    text = source_text(manifest, variant)
    if variant is not None:
        require_signature(manifest["kernel"], parameters(text, manifest["kernel"]["name"]), variant)
    return text


class OpenCLLaunch:
    """An OpenCL call rebuilt on the captured device: program built from ``source`` with the captured options,
    buffers filled from the capture, timed by profiling events."""

    claims_timing = True

    def __init__(self, manifest: Manifest, folder: Path, source: str) -> None:
        self.manifest = manifest
        device = find_device(manifest["device"]["name"])
        self.context = cl.Context([device])
        self.queue = cl.CommandQueue(self.context, properties=cl.command_queue_properties.PROFILING_ENABLE)
        try:
            program = cl.Program(self.context, source).build(options=manifest["kernel"]["build_options"])
        except cl.RuntimeError as exc:
            raise UsageError(f"the OpenCL source does not build: {exc}") from None
        self.kernel = cl.Kernel(program, manifest["kernel"]["name"])
        blobs = load_file(str(folder / "inputs.safetensors"))
        self.buffers: dict[str, cl.Buffer] = {}
        self.args: list[Any] = []
        for name, entry in manifest["arguments"].items():
            kind = entry["kind"]
            if kind == "buffer" and "same_as" not in entry:
                self.buffers[name] = cl.Buffer(
                    self.context, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=blobs[name]
                )
                self.args.append(self.buffers[name])
            elif kind == "buffer":
                self.args.append(self.buffers[entry["same_as"]])
            elif kind == "scalar":
                self.args.append(np.dtype(entry["dtype"]).type(entry["value"]))
            elif kind == "local":
                self.args.append(cl.LocalMemory(entry["bytes"]))
            else:
                self.args.append(None)
        self.aliases = [n for n, e in manifest["arguments"].items() if "same_as" in e]
        self.pristine = [torch.from_numpy(blobs[n].copy()) for n in self.buffers]

    def reset(self) -> None:
        for buffer, clean in zip(self.buffers.values(), self.pristine, strict=True):
            cl.enqueue_copy(self.queue, buffer, clean.numpy())
        self.queue.finish()

    def _launch(self) -> cl.Event:
        event = self.kernel(
            self.queue,
            tuple(self.manifest["grid"]),
            tuple(self.manifest["local"]) if self.manifest["local"] else None,
            *self.args,
        )
        event.wait()
        return event

    def run(self) -> object:
        self._launch()
        return None

    def times(self, iterations: int, restore_each: bool) -> list[float]:
        """Device milliseconds of each launch from its profiling event (start to end on the device: no host
        time inside); the restore, when asked, runs and finishes before each launch."""
        out = []
        for _ in range(iterations):
            if restore_each:
                self.reset()
            event = self._launch()
            out.append(float(event.profile.end - event.profile.start) / 1e6)
        return out

    def cache(self, restore_each: bool) -> str:
        return "not controlled: inputs as the restore left them" if restore_each else "warm: launches back to back"

    def state(self) -> list[torch.Tensor]:
        return list(self.outputs().values())

    def outputs(self) -> dict[str, torch.Tensor]:
        found = {}
        for name, buffer in self.buffers.items():
            host = np.empty(buffer.size, dtype=np.uint8)
            cl.enqueue_copy(self.queue, host, buffer)
            found[name] = torch.from_numpy(host)
        self.queue.finish()
        return found

    def expected(self, folder: Path) -> dict[str, torch.Tensor]:
        return {n: torch.from_numpy(a) for n, a in load_file(str(folder / "outputs.safetensors")).items()}

    def aliased(self) -> list[str]:
        return [*self.aliases, *(e["same_as"] for e in self.manifest["arguments"].values() if "same_as" in e)]
