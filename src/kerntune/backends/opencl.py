"""OpenCL backend (pyopencl). The PoCL CPU device is the default when no GPU platform is present.

A config becomes ``-D NAME=VALUE`` build options (config and derived values); the spec's grid gives the
global and work-group sizes; samples come from OpenCL profiling events of the kernel alone.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from kerntune.backends.base import Backend, Compiled, digest, fail, place_arrays
from kerntune.devices.telemetry import Telemetry, Unavailable
from kerntune.errors import BackendUnavailable, CandidateFailed
from kerntune.model import FailureKind, Kernel, Meta, OpenCLKernel, Target
from kerntune.runtime.keys import opencl_device_fields
from kerntune.settings import Settings

try:
    import pyopencl as cl
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise BackendUnavailable(
        "the OpenCL backend needs pyopencl: pip install 'kerntune[opencl]' (brings PoCL, a CPU device)"
    ) from exc


@dataclass
class DeviceArray:
    """An OpenCL buffer with the host array's shape and dtype (needed to read it back)."""

    buffer: Any
    shape: tuple[int, ...]
    dtype: np.dtype[Any]


def _pick_device(selector: str) -> cl.Device:
    devices = [(p, d) for p in cl.get_platforms() for d in p.get_devices()]
    if not devices:
        raise BackendUnavailable("no OpenCL device found: pip install 'pyopencl[pocl]' for the CPU device")
    if selector and selector not in ("auto", "opencl"):
        wanted = selector.lower().removeprefix("opencl:")
        if wanted.isdigit():
            index = int(wanted)
            if index >= len(devices):
                raise BackendUnavailable(f"OpenCL device index {index} out of range ({len(devices)} devices)")
            return devices[index][1]
        for platform, device in devices:
            if wanted in device.name.lower() or wanted in platform.name.lower():
                return device
        names = ", ".join(f"{p.name}: {d.name}" for p, d in devices)
        raise BackendUnavailable(f"no OpenCL device matches {selector!r}; devices here: {names}")
    gpus = [d for _, d in devices if d.type & cl.device_type.GPU]
    return gpus[0] if gpus else devices[0][1]


def _define(name: str, value: object) -> str:
    if isinstance(value, bool):
        value = int(value)
    return f"-D{name}={value}"


class OpenCLBackend(Backend):
    name = "opencl"
    timer = "opencl-profiling"

    def __init__(self, device: str = "") -> None:
        self.device = _pick_device(device)
        self.context = cl.Context([self.device])
        self.queue = cl.CommandQueue(self.context, properties=cl.command_queue_properties.PROFILING_ENABLE)
        cache = int(self.device.global_mem_cache_size or 0)
        # Twice the last-level cache, at least 32 MiB: PoCL reports one cache level, and a flush smaller
        # than the real LLC would leave part of the working set warm.
        self._flush_bytes = Settings.from_env().flush_bytes(cache, 32 << 20)
        self._flush = cl.Buffer(self.context, cl.mem_flags.READ_WRITE, self._flush_bytes)

    def target(self) -> Target:
        fields = opencl_device_fields(self.device, int(cl.device_type.CPU))
        return Target(
            backend=self.name,
            vendor=self.device.vendor.strip(),
            arch=fields["arch"],
            device_name=fields["device_name"],
            compute_units=fields["compute_units"],
            versions=(
                ("opencl", self.device.version.strip()),
                ("driver", self.device.driver_version.strip()),
                ("pyopencl", str(cl.VERSION_TEXT)),
            ),
        )

    def place(self, host_args: Mapping[str, object]) -> dict[str, object]:
        flags = cl.mem_flags

        def array(host: np.ndarray) -> DeviceArray:
            buffer = cl.Buffer(self.context, flags.READ_WRITE | flags.COPY_HOST_PTR, hostbuf=host)
            return DeviceArray(buffer, host.shape, host.dtype)

        return place_arrays(host_args, array)

    def poison(self, args: Mapping[str, object], outputs: Sequence[str]) -> None:
        for name in outputs:
            array = args[name]
            if not isinstance(array, DeviceArray):
                raise CandidateFailed(FailureKind.ERROR.value, f"output {name!r} is not an array")
            if np.issubdtype(array.dtype, np.floating):
                pattern = np.array(np.nan, dtype=array.dtype)
            else:
                pattern = np.array(np.iinfo(array.dtype).max, dtype=array.dtype)
            size = int(np.prod(array.shape)) * array.dtype.itemsize
            cl.enqueue_fill_buffer(self.queue, array.buffer, pattern, 0, size)
        self.queue.finish()

    def to_host(self, value: Any) -> np.ndarray:
        if isinstance(value, DeviceArray):
            host = np.empty(value.shape, dtype=value.dtype)
            cl.enqueue_copy(self.queue, host, value.buffer)
            self.queue.finish()
            return host.astype(np.float64)
        return np.asarray(value, dtype=np.float64)

    def compile(self, kernel: Kernel, tunables: Meta, meta: Meta, args: dict[str, object]) -> Compiled:
        if not isinstance(kernel, OpenCLKernel):
            raise CandidateFailed(FailureKind.ERROR.value, f"the OpenCL backend cannot run a {kernel.language} kernel")
        # Only config and derived values become defines; shape fields reach the kernel as arguments, so a
        # binary does not silently depend on the shape it was first built for.
        defines = [_define(k, v) for k, v in tunables.items()]
        start = time.perf_counter()
        try:
            program = cl.Program(self.context, kernel.source).build(options=[*defines, *kernel.build_options])
            cl_kernel = getattr(program, kernel.name)
        except Exception as exc:  # every build failure is this candidate's failure
            errors = [line.strip() for line in str(exc).splitlines() if line.startswith("error:")]
            if errors:  # the compiler's own diagnostics, not pyopencl's repeated header
                raise CandidateFailed(FailureKind.COMPILE.value, "compile: " + " | ".join(errors[:3])) from exc
            raise fail(exc, "compile") from exc
        compile_s = time.perf_counter() - start
        binaries = program.get_info(cl.program_info.BINARIES)
        info = cl.kernel_work_group_info
        resources: dict[str, object] = {
            "max_work_group_size": int(cl_kernel.get_work_group_info(info.WORK_GROUP_SIZE, self.device)),
            "local_mem_bytes": int(cl_kernel.get_work_group_info(info.LOCAL_MEM_SIZE, self.device)),
            "private_mem_bytes": int(cl_kernel.get_work_group_info(info.PRIVATE_MEM_SIZE, self.device)),
        }
        global_size, local_size = kernel.grid(meta)
        gsize = tuple(int(g) for g in global_size)
        lsize = tuple(int(x) for x in local_size) if local_size is not None else None
        resources["global_size"] = list(gsize)
        resources["local_size"] = list(lsize) if lsize else None
        queue = self.queue

        def launch(args: dict[str, object]) -> cl.Event:
            values = [a.buffer if isinstance(a, DeviceArray) else a for a in args.values()]
            event: cl.Event = cl_kernel(queue, gsize, lsize, *values)
            return event

        binary = digest(b"".join(binaries))
        return Compiled(
            launch=launch,
            compile_s=compile_s,
            binary_hash=binary,
            resources=resources,
            signature=digest(f"{binary}@{gsize}/{lsize}"),
        )

    def limits(self) -> dict[str, int]:
        return {
            "shared_bytes_per_block": int(self.device.local_mem_size),
            "threads_per_block": int(self.device.max_work_group_size),
        }

    def synchronize(self) -> None:
        self.queue.finish()

    def time_launches(self, launches: Sequence[Callable[[], object]], flush: bool) -> list[float]:
        events: list[cl.Event] = []
        for launch in launches:
            if flush:
                cl.enqueue_fill_buffer(self.queue, self._flush, np.uint8(0), 0, self._flush_bytes)
            events.append(cast(cl.Event, launch()))  # an OpenCL launch returns its profiling event
        self.queue.finish()
        return [(e.profile.end - e.profile.start) * 1e-6 for e in events]

    def flush_cache(self) -> None:
        cl.enqueue_fill_buffer(self.queue, self._flush, np.uint8(0), 0, self._flush_bytes)

    def telemetry(self) -> Telemetry:
        return Unavailable(f"no telemetry for the OpenCL device {self.device.name.strip()!r}")

    @property
    def flush_bytes(self) -> int:
        return self._flush_bytes
