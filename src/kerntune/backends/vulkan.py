"""Vulkan compute backend (the ``vulkan`` bindings, cffi over the system's Vulkan loader). Mesa's lavapipe is a
Vulkan device on any CPU (``apt-get install mesa-vulkan-drivers``), the counterpart of PoCL; on a GPU the vendor's
driver.

A config becomes ``#define``s of the GLSL and, for the names the kernel maps to ``constant_id``s, specialization
constants; the local size goes through the specialization ids 100-102 (``vulkan_compile``). Buffers are placed as
``KERNTUNE_VULKAN_MEMORY`` says: ``device-local`` (the default; filled and read through a host-visible staging
buffer) or ``host-visible`` (host-coherent, mapped), and the placement is part of the Target, so runs under the two
are never mixed. Samples are timestamp queries written before and after each dispatch (the device's
``timestampPeriod``, its valid bits masked), the cache flush (a fill of twice the last-level cache) and its barrier
outside them, every launch of a sample batch recorded into one command buffer and submitted once, so the device
never waits on the host inside a sample."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from kerntune.backends import vulkan_inspect
from kerntune.backends.base import Backend, Compiled, digest, place_arrays
from kerntune.backends.vulkan_compile import WORKGROUP_IDS, check_names, compile_glsl, reflect, validate
from kerntune.backends.vulkan_loader import why_no_driver
from kerntune.backends.vulkan_pipeline import Pipeline, VulkanArray, owned, pack, vk
from kerntune.devices.telemetry import Telemetry, Unavailable
from kerntune.errors import BackendUnavailable, CandidateFailed, UsageError
from kerntune.model import FailureKind, Kernel, Meta, Target, VulkanKernel
from kerntune.settings import Settings

MEMORY = ("device-local", "host-visible")
FENCE_NS = 3_600 * 10**9  # the worker's candidate timeout kills a hung dispatch long before this


def _pick(selector: str, instance: object) -> object:
    devices = vk.vkEnumeratePhysicalDevices(instance)
    if not devices:
        raise BackendUnavailable("no Vulkan device found: apt-get install mesa-vulkan-drivers for lavapipe (CPU)")
    names = [vk.vkGetPhysicalDeviceProperties(d).deviceName for d in devices]
    wanted = selector.lower().removeprefix("vulkan:") if selector not in ("", "auto", "vulkan") else ""
    if wanted.isdigit():
        if int(wanted) >= len(devices):
            raise BackendUnavailable(f"Vulkan device index {wanted} out of range ({len(devices)} devices)")
        return devices[int(wanted)]
    if wanted:
        for device, name in zip(devices, names, strict=True):
            if wanted in name.lower():
                return device
        raise BackendUnavailable(f"no Vulkan device matches {selector!r}; devices here: {', '.join(names)}")
    discrete = [
        d for d in devices if vk.vkGetPhysicalDeviceProperties(d).deviceType == vk.VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU
    ]
    return (discrete or devices)[0]


class VulkanBackend(Backend):
    name = "vulkan"
    timer = "vulkan-timestamps"

    def __init__(self, device: str = "", memory: str | None = None) -> None:
        """``memory``: where buffers are placed (default ``KERNTUNE_VULKAN_MEMORY``; a replay gives the capture's)."""
        self.memory_kind = memory or Settings.from_env().vulkan_memory
        if self.memory_kind not in MEMORY:
            raise UsageError(f"KERNTUNE_VULKAN_MEMORY={self.memory_kind!r}: one of {', '.join(MEMORY)}")
        app = vk.VkApplicationInfo(pApplicationName="kerntune", apiVersion=vk.VK_MAKE_VERSION(1, 2, 0))
        try:
            self.instance = vk.vkCreateInstance(vk.VkInstanceCreateInfo(pApplicationInfo=app), None)
        except Exception as exc:
            raise BackendUnavailable(f"no Vulkan instance ({type(exc).__name__}): {why_no_driver()}") from exc
        self.physical = _pick(device, self.instance)
        self.props = vk.vkGetPhysicalDeviceProperties(self.physical)
        families = vk.vkGetPhysicalDeviceQueueFamilyProperties(self.physical)
        compute = [i for i, f in enumerate(families) if f.queueFlags & vk.VK_QUEUE_COMPUTE_BIT]
        if not compute:
            raise BackendUnavailable(f"the Vulkan device {self.props.deviceName!r} has no compute queue")
        self.family = compute[0]
        self.valid_bits = int(families[self.family].timestampValidBits)
        if self.valid_bits == 0 or not self.props.limits.timestampComputeAndGraphics:
            raise BackendUnavailable(
                f"the Vulkan device {self.props.deviceName!r} has no timestamps on its compute "
                "queue: nothing to time with"
            )
        queue_info = vk.VkDeviceQueueCreateInfo(queueFamilyIndex=self.family, queueCount=1, pQueuePriorities=[1.0])
        # The driver's reading of each pipeline (registers, spills, ISA) where it offers one: see vulkan_inspect.
        # A driver that lists the extension but refuses a device with it still gives a device without it.
        self.executable_info = vulkan_inspect.supported(self.physical)
        self.capture_internal = False  # also keep internal representations (ISA text): kerntune inspect
        self.device = None
        if self.executable_info:
            try:
                self.device = vk.vkCreateDevice(
                    self.physical,
                    vk.VkDeviceCreateInfo(
                        pNext=vulkan_inspect.feature_chain(),
                        queueCreateInfoCount=1,
                        pQueueCreateInfos=[queue_info],
                        enabledExtensionCount=1,
                        ppEnabledExtensionNames=[vulkan_inspect.EXTENSION],
                    ),
                    None,
                )
            except Exception:
                self.executable_info = False
        if self.device is None:
            self.device = vk.vkCreateDevice(
                self.physical, vk.VkDeviceCreateInfo(queueCreateInfoCount=1, pQueueCreateInfos=[queue_info]), None
            )
        self.queue = vk.vkGetDeviceQueue(self.device, self.family, 0)
        self.pool = vk.vkCreateCommandPool(
            self.device,
            vk.VkCommandPoolCreateInfo(
                queueFamilyIndex=self.family, flags=vk.VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT
            ),
            None,
        )
        self.fence = vk.vkCreateFence(self.device, vk.VkFenceCreateInfo(), None)
        self.memory_props = vk.vkGetPhysicalDeviceMemoryProperties(self.physical)
        self._recording: Any = None
        self._queries: Any = None
        self._query_count = 0
        # Vulkan reports no cache sizes. A GPU's L2 reaches 50-128 MB (H100/H200 50 MB, MI300X's Infinity Cache
        # 256 MB is memory-side and not flushed by this): 256 MiB, as do_bench fills; a CPU's last level (lavapipe)
        # is covered twice by 64 MiB, and a larger fill there would cost tens of ms per sample.
        cpu = self.props.deviceType == vk.VK_PHYSICAL_DEVICE_TYPE_CPU
        self._flush_bytes = Settings.from_env().flush_bytes(0, (64 if cpu else 256) << 20)
        self._flush = self._buffer(self._flush_bytes, host=False)

    # ------------------------------------------------------------------ memory
    def _memory_type(self, bits: int, host: bool) -> int:
        host_flags = vk.VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | vk.VK_MEMORY_PROPERTY_HOST_COHERENT_BIT
        want = host_flags if host else vk.VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT
        found = [
            i
            for i in range(self.memory_props.memoryTypeCount)
            if bits & (1 << i) and (self.memory_props.memoryTypes[i].propertyFlags & want) == want
        ]
        if not found:
            raise BackendUnavailable(
                f"the Vulkan device has no {'host-visible' if host else 'device-local'} "
                "memory type for a storage buffer"
            )
        if not host:  # prefer memory the host cannot see: on a discrete GPU that is the card's own
            found.sort(
                key=lambda i: bool(
                    self.memory_props.memoryTypes[i].propertyFlags & vk.VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT
                )
            )
        return found[0]

    def _buffer(self, size: int, host: bool) -> VulkanArray:
        usage = (
            vk.VK_BUFFER_USAGE_STORAGE_BUFFER_BIT
            | vk.VK_BUFFER_USAGE_TRANSFER_SRC_BIT
            | vk.VK_BUFFER_USAGE_TRANSFER_DST_BIT
        )
        buffer = vk.vkCreateBuffer(
            self.device,
            vk.VkBufferCreateInfo(size=max(size, 4), usage=usage, sharingMode=vk.VK_SHARING_MODE_EXCLUSIVE),
            None,
        )
        needs = vk.vkGetBufferMemoryRequirements(self.device, buffer)
        memory = vk.vkAllocateMemory(
            self.device,
            vk.VkMemoryAllocateInfo(
                allocationSize=needs.size, memoryTypeIndex=self._memory_type(needs.memoryTypeBits, host)
            ),
            None,
        )
        vk.vkBindBufferMemory(self.device, buffer, memory, 0)
        return owned(VulkanArray(buffer, memory, max(size, 4), (), np.dtype(np.uint8)), self.device)

    def _write(self, host_buffer: VulkanArray, data: bytes) -> None:
        mapped = vk.vkMapMemory(self.device, host_buffer.memory, 0, host_buffer.size, 0)
        vk.ffi.memmove(mapped, data, len(data))
        vk.vkUnmapMemory(self.device, host_buffer.memory)

    def _read(self, host_buffer: VulkanArray, size: int) -> bytes:
        mapped = vk.vkMapMemory(self.device, host_buffer.memory, 0, host_buffer.size, 0)
        data = bytes(mapped[:size])
        vk.vkUnmapMemory(self.device, host_buffer.memory)
        return data

    def _array(self, array: np.ndarray) -> VulkanArray:
        host = self.memory_kind == "host-visible"
        placed = self._buffer(array.nbytes, host)
        placed.shape, placed.dtype = array.shape, array.dtype
        if host:
            self._write(placed, array.tobytes())
        else:
            placed.staging = self._buffer(array.nbytes, host=True)
            self._write(placed.staging, array.tobytes())
            self._submit(
                lambda cb: vk.vkCmdCopyBuffer(
                    cb,
                    placed.staging.buffer,  # type: ignore[union-attr]
                    placed.buffer,
                    1,
                    [vk.VkBufferCopy(srcOffset=0, dstOffset=0, size=placed.size)],
                )
            )
        return placed

    # ------------------------------------------------------------------ commands
    def _submit(self, record: Callable[[object], None]) -> None:
        """Record one command buffer with ``record``, submit it and wait for it."""
        cb = vk.vkAllocateCommandBuffers(
            self.device,
            vk.VkCommandBufferAllocateInfo(
                commandPool=self.pool, level=vk.VK_COMMAND_BUFFER_LEVEL_PRIMARY, commandBufferCount=1
            ),
        )[0]
        vk.vkBeginCommandBuffer(cb, vk.VkCommandBufferBeginInfo(flags=vk.VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT))
        record(cb)
        vk.vkEndCommandBuffer(cb)
        vk.vkResetFences(self.device, 1, [self.fence])
        vk.vkQueueSubmit(self.queue, 1, [vk.VkSubmitInfo(commandBufferCount=1, pCommandBuffers=[cb])], self.fence)
        vk.vkWaitForFences(self.device, 1, [self.fence], vk.VK_TRUE, FENCE_NS)
        vk.vkFreeCommandBuffers(self.device, self.pool, 1, [cb])

    @staticmethod
    def _barrier(cb: object) -> None:
        """Every earlier write (a dispatch, a fill, a copy) lands before any later command reads or writes."""
        access = (
            vk.VK_ACCESS_SHADER_READ_BIT
            | vk.VK_ACCESS_SHADER_WRITE_BIT
            | vk.VK_ACCESS_TRANSFER_READ_BIT
            | vk.VK_ACCESS_TRANSFER_WRITE_BIT
        )
        vk.vkCmdPipelineBarrier(
            cb,
            vk.VK_PIPELINE_STAGE_ALL_COMMANDS_BIT,
            vk.VK_PIPELINE_STAGE_ALL_COMMANDS_BIT,
            0,
            1,
            [vk.VkMemoryBarrier(srcAccessMask=access, dstAccessMask=access)],
            0,
            None,
            0,
            None,
        )

    # ------------------------------------------------------------------ Backend
    def target(self) -> Target:
        p = self.props
        version = p.apiVersion
        return Target(
            backend=self.name,
            vendor=f"0x{p.vendorID:04x}",
            arch=f"vulkan:0x{p.deviceID:04x}",
            device_name=str(p.deviceName),
            compute_units=0,
            versions=(
                (
                    "vulkan",
                    f"{vk.VK_VERSION_MAJOR(version)}.{vk.VK_VERSION_MINOR(version)}.{vk.VK_VERSION_PATCH(version)}",
                ),
                ("driver", self._driver()),
                ("memory", self.memory_kind),
            ),
        )

    def _driver(self) -> str:
        """The driver's own name and version (Vulkan 1.2's driver properties: "llvmpipe Mesa 22.3.6 (LLVM 15.0.6)",
        "NVIDIA 580.159.04"), else the raw driverVersion number, whose encoding is each vendor's own."""
        try:
            found = vk.VkPhysicalDeviceDriverProperties()
            vk.vkGetPhysicalDeviceProperties2(self.physical, vk.VkPhysicalDeviceProperties2(pNext=found))
            return f"{vk.ffi.string(found.driverName).decode()} {vk.ffi.string(found.driverInfo).decode()}".strip()
        except Exception:  # a Vulkan 1.1 device: no driver properties
            return str(self.props.driverVersion)

    def place(self, host_args: Mapping[str, object]) -> dict[str, object]:
        return place_arrays(host_args, self._array)

    def copy_placed(self, placed: Mapping[str, object]) -> dict[str, object] | None:
        """Each buffer copied on the device into a new one of the same placement, in one submit; a copy shares
        its source's staging twin (the host path of reads and writes, which holds nothing of its own)."""
        copies: dict[str, object] = {}
        pairs: list[tuple[VulkanArray, VulkanArray]] = []
        for name, value in placed.items():
            if isinstance(value, VulkanArray):
                copy = self._buffer(value.size, host=self.memory_kind == "host-visible")
                copy.shape, copy.dtype, copy.staging = value.shape, value.dtype, value.staging
                pairs.append((value, copy))
                value = copy
            copies[name] = value

        def record(cb: object) -> None:
            self._barrier(cb)
            for source, copy in pairs:
                vk.vkCmdCopyBuffer(
                    cb, source.buffer, copy.buffer, 1, [vk.VkBufferCopy(srcOffset=0, dstOffset=0, size=source.size)]
                )

        if pairs:
            self._submit(record)
        return copies

    def poison(self, args: Mapping[str, object], outputs: Sequence[str]) -> None:
        def fill(cb: object) -> None:
            for name in outputs:
                array = args[name]
                if not isinstance(array, VulkanArray):
                    raise CandidateFailed(FailureKind.ERROR.value, f"output {name!r} is not an array")
                pattern = 0x7FC00000 if array.dtype == np.float32 else 0xFFFFFFFF  # NaN / all bits set
                vk.vkCmdFillBuffer(cb, array.buffer, 0, array.size - array.size % 4, pattern)

        self._submit(fill)

    def to_host(self, value: object) -> np.ndarray:
        if not isinstance(value, VulkanArray):
            return np.asarray(value, dtype=np.float64)
        return np.frombuffer(self.read_bytes(value), dtype=value.dtype).reshape(value.shape).astype(np.float64)

    def read_bytes(self, value: VulkanArray) -> bytes:
        """The array's bytes as the device holds them (a device-local one through its staging twin)."""
        source = value
        if value.staging is not None:
            staging = value.staging

            def copy_back(cb: object) -> None:
                self._barrier(cb)
                vk.vkCmdCopyBuffer(
                    cb, value.buffer, staging.buffer, 1, [vk.VkBufferCopy(srcOffset=0, dstOffset=0, size=value.size)]
                )

            self._submit(copy_back)
            source = staging
        return self._read(source, int(np.prod(value.shape)) * value.dtype.itemsize)

    def write_bytes(self, value: VulkanArray, data: bytes) -> None:
        """Overwrite the array with ``data`` (its own size), finished before this returns."""
        if value.staging is None:
            self._write(value, data)
            return
        staging = value.staging
        self._write(staging, data)

        def copy_in(cb: object) -> None:
            self._barrier(cb)
            vk.vkCmdCopyBuffer(
                cb, staging.buffer, value.buffer, 1, [vk.VkBufferCopy(srcOffset=0, dstOffset=0, size=len(data))]
            )

        self._submit(copy_in)

    def limits(self) -> dict[str, int]:
        limits = self.props.limits
        return {
            "shared_bytes_per_block": int(limits.maxComputeSharedMemorySize),
            "threads_per_block": int(limits.maxComputeWorkGroupInvocations),
        }

    def compile(self, kernel: Kernel, tunables: Meta, meta: Meta, args: dict[str, object]) -> Compiled:
        if not isinstance(kernel, VulkanKernel):
            raise CandidateFailed(FailureKind.ERROR.value, f"the Vulkan backend cannot run a {kernel.language} kernel")
        import time

        start = time.perf_counter()
        if isinstance(kernel.source, bytes):
            spirv, cached = kernel.source, False
            validate(spirv)
        else:
            # A name given as a specialization constant is not also a #define: the macro would rewrite the
            # constant's own declaration. One SPIR-V module then serves every value of it.
            defines = {k: v for k, v in tunables.items() if k not in kernel.constants}
            spirv, cached = compile_glsl(kernel.source, defines)
        shape = reflect(spirv)
        check_names(shape, kernel.entry, dict(kernel.constants))
        local = tuple(int(x) for x in kernel.workgroup(meta)) if kernel.workgroup else None
        groups = tuple(int(x) for x in kernel.dispatch(meta))
        if local is not None and shape.local_size is None and not set(WORKGROUP_IDS) & shape.spec_ids:
            raise UsageError(
                "VulkanKernel(workgroup=...) needs the shader to take its local size from "
                "`layout(local_size_x_id = 100, local_size_y_id = 101, local_size_z_id = 102) in;`"
            )
        entries: list[tuple[int, Any]] = [(cid, meta[name]) for name, cid in kernel.constants.items()]
        if local is not None:
            entries += [(cid, size) for cid, size in zip(WORKGROUP_IDS, local, strict=True) if cid in shape.spec_ids]
        flags = vulkan_inspect.capture_flags(self.capture_internal) if self.executable_info else 0
        pipeline = Pipeline(self, spirv, kernel.entry, entries, args, flags)
        compile_s = time.perf_counter() - start
        invocations = int(np.prod(local or shape.local_size or (1, 1, 1)))
        if invocations > self.props.limits.maxComputeWorkGroupInvocations:
            raise CandidateFailed(
                FailureKind.LAUNCH.value,
                f"local size {local} has {invocations} invocations; "
                f"the device allows {self.props.limits.maxComputeWorkGroupInvocations}",
            )
        resources = {
            "local_size": list(local or shape.local_size or ()),
            "workgroups": list(groups),
            "specialization": {str(cid): v for cid, v in entries},
            "spirv_bytes": len(spirv),
            "spirv_cached": cached,
        }
        if self.executable_info:
            resources["driver"] = self.driver_reading(pipeline.pipeline)

        def launch(args: dict[str, object]) -> object:
            if self._recording is None:  # run alone: one submit and wait
                self._submit(lambda cb: pipeline.record(cb, args, groups))
                return None
            pipeline.record(self._recording, args, groups)
            return None

        binary = digest(spirv + pack([v for _, v in entries]))
        return Compiled(
            launch=launch,
            compile_s=compile_s,
            binary_hash=binary,
            resources=resources,
            signature=digest(f"{binary}@{groups}/{local}"),
        )

    def not_exposed(self) -> str:
        """What a driver without VK_KHR_pipeline_executable_properties cannot say, in a sentence."""
        return (
            f"{self._driver()} does not offer {vulkan_inspect.EXTENSION}: no registers, spills or ISA from this driver"
        )

    def driver_reading(self, pipeline: object) -> dict[str, object]:
        """What the driver says the pipeline became (a device with ``executable_info``): its statistics
        (``registers`` and ``spills`` named where its own names say so) and, with ``capture_internal``, its
        internal representations; a query that fails gives ``not_exposed`` with the reason."""
        try:
            executables = vulkan_inspect.read_pipeline(self.device, pipeline, self.capture_internal)
        except Exception as exc:  # a driver that lists the extension but fails the query: said, never fatal
            return {"not_exposed": f"{vulkan_inspect.EXTENSION} query failed: {type(exc).__name__}: {exc}"}
        found = vulkan_inspect.summary(executables)
        if self.capture_internal:
            found["internal"] = [rep for e in executables for rep in e.internal]
            found["units"] = {k: v for e in executables[:1] for k, v in e.units.items()}
            errors = [e.internal_error for e in executables if e.internal_error]
            if errors:
                found["not_exposed"] = errors[0]
            notes = [e.internal_note for e in executables if e.internal_note]
            if notes and not found["internal"]:
                found["internal_note"] = notes[0]
        return found

    def synchronize(self) -> None:
        vk.vkQueueWaitIdle(self.queue)

    def _query_pool(self, count: int) -> object:
        if count > self._query_count:
            if self._queries is not None:
                vk.vkDestroyQueryPool(self.device, self._queries, None)
            self._queries = vk.vkCreateQueryPool(
                self.device, vk.VkQueryPoolCreateInfo(queryType=vk.VK_QUERY_TYPE_TIMESTAMP, queryCount=count), None
            )
            self._query_count = count
        return self._queries

    def time_launches(self, launches: Sequence[Callable[[], object]], flush: bool) -> list[float]:
        count = 2 * len(launches)
        pool = self._query_pool(count)

        def record(cb: object) -> None:
            vk.vkCmdResetQueryPool(cb, pool, 0, count)
            self._recording = cb
            try:
                for i, launch in enumerate(launches):
                    if flush:  # outside the timestamps, and finished before the first one is written
                        vk.vkCmdFillBuffer(cb, self._flush.buffer, 0, self._flush_bytes, 0)
                    self._barrier(cb)
                    vk.vkCmdWriteTimestamp(cb, vk.VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, pool, 2 * i)
                    launch()
                    vk.vkCmdWriteTimestamp(cb, vk.VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, pool, 2 * i + 1)
            finally:
                self._recording = None

        self._submit(record)
        data = vk.ffi.new("uint64_t[]", count)
        vk.vkGetQueryPoolResults(
            self.device, pool, 0, count, count * 8, data, 8, vk.VK_QUERY_RESULT_64_BIT | vk.VK_QUERY_RESULT_WAIT_BIT
        )
        mask = (1 << self.valid_bits) - 1 if self.valid_bits < 64 else (1 << 64) - 1
        period_ms = float(self.props.limits.timestampPeriod) * 1e-6
        # A counter with fewer valid bits wraps: the difference is taken modulo its range.
        return [
            (((int(data[2 * i + 1]) & mask) - (int(data[2 * i]) & mask)) & mask) * period_ms
            for i in range(len(launches))
        ]

    def flush_cache(self) -> None:
        self._submit(lambda cb: vk.vkCmdFillBuffer(cb, self._flush.buffer, 0, self._flush_bytes, 0))

    def telemetry(self) -> Telemetry:
        return Unavailable(f"no telemetry for the Vulkan device {self.props.deviceName!r}")

    @property
    def flush_bytes(self) -> int:
        return self._flush_bytes
