"""What one compiled Vulkan config holds: the storage buffers it binds (``VulkanArray``), its scalars packed as
push constants or specialization data (``pack``), and the pipeline with its layouts and descriptor sets
(``Pipeline``), which records a dispatch into a command buffer. The device, memory and timing are
``backends.vulkan``'s."""

from __future__ import annotations

import struct
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from kerntune.errors import BackendUnavailable, CandidateFailed
from kerntune.model import FailureKind


class OnDevice(Protocol):
    """What a pipeline needs of its backend (``VulkanBackend``): the logical device it is built on."""

    @property
    def device(self) -> object: ...


try:
    import vulkan as vk  # re-exported: backends.vulkan takes the bindings from here, behind this guard
except (ImportError, OSError) as exc:  # pragma: no cover - depends on the environment
    raise BackendUnavailable(
        "the Vulkan backend needs the vulkan bindings and a Vulkan loader: pip install 'kerntune[vulkan]' and "
        "apt-get install libvulkan1 mesa-vulkan-drivers (lavapipe, a CPU device)"
    ) from exc

__all__ = ["Pipeline", "VulkanArray", "owned", "pack", "vk"]


def handle(obj: object) -> int:
    """A Vulkan handle's value: the identity of a buffer to the driver (a Python object's id is reused once the
    object is collected, and a wrapper's id says nothing about which buffer it wraps)."""
    return int(vk.ffi.cast("uintptr_t", obj))


def _free_buffer(device: object, buffer: object, memory: object) -> None:
    vk.vkDestroyBuffer(device, buffer, None)
    vk.vkFreeMemory(device, memory, None)


def _destroy_pipeline(device: object, pipeline: object, layout: object, set_layout: object, pool: object) -> None:
    vk.vkDestroyDescriptorPool(device, pool, None)  # its descriptor sets with it
    vk.vkDestroyPipeline(device, pipeline, None)
    vk.vkDestroyPipelineLayout(device, layout, None)
    vk.vkDestroyDescriptorSetLayout(device, set_layout, None)


@dataclass
class VulkanArray:
    """A storage buffer with the host array's shape and dtype; ``staging`` is the host-visible twin of a
    device-local buffer (None when the buffer itself is host-visible)."""

    buffer: object
    memory: object
    size: int
    shape: tuple[int, ...]
    dtype: np.dtype[Any]
    staging: VulkanArray | None = None


def owned(array: VulkanArray, device: object) -> VulkanArray:
    """``array``, its buffer and memory freed when the last reference to it goes (every submit is waited for,
    so no command can still be using it then). A tune at a 1 GiB shape places a set per candidate and seed:
    without this each one stayed allocated until the worker exited."""
    # Not at exit: the process's end frees the device's memory anyway, and a long list of frees would delay it.
    weakref.finalize(array, _free_buffer, device, array.buffer, array.memory).atexit = False
    return array


def pack(values: Sequence[Any]) -> bytes:
    """Scalars as 32-bit words in order: ints as int32 (uint32 as itself), floats as float32."""
    out = b""
    for v in values:
        if isinstance(v, (np.floating, float)):
            out += struct.pack("<f", float(v))
        elif isinstance(v, np.unsignedinteger):
            out += struct.pack("<I", int(v))
        else:
            out += struct.pack("<i", int(v))
    return out


class Pipeline:
    """One compiled config: shader module, layouts, pipeline, and a descriptor set per set of buffers bound."""

    def __init__(
        self,
        backend: OnDevice,
        spirv: bytes,
        entry: str,
        constants: list[tuple[int, Any]],
        args: Mapping[str, object],
        flags: int = 0,
    ) -> None:
        """``flags``: pipeline creation flags (the driver's statistics captured: ``vulkan_inspect``)."""
        self.backend, dev = backend, backend.device
        arrays = [a for a in args.values() if isinstance(a, VulkanArray)]
        scalars = [a for a in args.values() if not isinstance(a, VulkanArray)]
        self.push_size = 4 * len(scalars)
        module = vk.vkCreateShaderModule(dev, vk.VkShaderModuleCreateInfo(codeSize=len(spirv), pCode=spirv), None)
        bindings = [
            vk.VkDescriptorSetLayoutBinding(
                binding=i,
                descriptorType=vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                descriptorCount=1,
                stageFlags=vk.VK_SHADER_STAGE_COMPUTE_BIT,
            )
            for i in range(len(arrays))
        ]
        self.set_layout = vk.vkCreateDescriptorSetLayout(
            dev, vk.VkDescriptorSetLayoutCreateInfo(bindingCount=len(bindings), pBindings=bindings or None), None
        )
        ranges = [vk.VkPushConstantRange(stageFlags=vk.VK_SHADER_STAGE_COMPUTE_BIT, offset=0, size=self.push_size)]
        self.layout = vk.vkCreatePipelineLayout(
            dev,
            vk.VkPipelineLayoutCreateInfo(
                setLayoutCount=1,
                pSetLayouts=[self.set_layout],
                pushConstantRangeCount=1 if scalars else 0,
                pPushConstantRanges=ranges if scalars else None,
            ),
            None,
        )
        data = pack([v for _, v in constants])
        self._spec_data = vk.ffi.new("char[]", data or b"\0")  # kept alive while the pipeline is created
        spec = vk.VkSpecializationInfo(
            mapEntryCount=len(constants),
            pMapEntries=[
                vk.VkSpecializationMapEntry(constantID=cid, offset=4 * i, size=4)
                for i, (cid, _) in enumerate(constants)
            ]
            or None,
            dataSize=len(data),
            pData=self._spec_data,
        )
        stage = vk.VkPipelineShaderStageCreateInfo(
            stage=vk.VK_SHADER_STAGE_COMPUTE_BIT, module=module, pName=entry, pSpecializationInfo=spec
        )
        try:
            self.pipeline = vk.vkCreateComputePipelines(
                dev,
                vk.VK_NULL_HANDLE,
                1,
                [vk.VkComputePipelineCreateInfo(flags=flags, stage=stage, layout=self.layout)],
                None,
            )[0]
        except Exception as exc:
            raise CandidateFailed(FailureKind.COMPILE.value, f"pipeline: {type(exc).__name__}: {exc}") from exc
        finally:
            vk.vkDestroyShaderModule(dev, module, None)
        self.pool = vk.vkCreateDescriptorPool(
            dev,
            vk.VkDescriptorPoolCreateInfo(
                maxSets=64,
                poolSizeCount=1,
                pPoolSizes=[
                    vk.VkDescriptorPoolSize(
                        type=vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, descriptorCount=64 * max(1, len(arrays))
                    )
                ],
            ),
            None,
        )
        # Descriptor sets by the buffers' handles, each with weak references to the arrays it was written for: a
        # freed buffer's handle can come back for a new one, and then the set is written again, not reused.
        self.sets: dict[tuple[int, ...], tuple[Any, list[weakref.ref[VulkanArray]]]] = {}
        weakref.finalize(
            self, _destroy_pipeline, dev, self.pipeline, self.layout, self.set_layout, self.pool
        ).atexit = False

    def _set(self, arrays: list[VulkanArray]) -> object:
        key = tuple(handle(a.buffer) for a in arrays)
        dev = self.backend.device
        if key in self.sets:
            found, refs = self.sets[key]
            if all(r() is a for r, a in zip(refs, arrays, strict=True)):
                return found
        else:
            if len(self.sets) >= 64:
                raise CandidateFailed(
                    FailureKind.ERROR.value, "more than 64 distinct buffer sets bound to one compiled config"
                )
            found = vk.vkAllocateDescriptorSets(
                dev,
                vk.VkDescriptorSetAllocateInfo(
                    descriptorPool=self.pool, descriptorSetCount=1, pSetLayouts=[self.set_layout]
                ),
            )[0]
        writes = [
            vk.VkWriteDescriptorSet(
                dstSet=found,
                dstBinding=i,
                descriptorCount=1,
                descriptorType=vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                pBufferInfo=[vk.VkDescriptorBufferInfo(buffer=a.buffer, offset=0, range=a.size)],
            )
            for i, a in enumerate(arrays)
        ]
        if writes:  # the set is not in use: every submit that bound it has been waited for
            vk.vkUpdateDescriptorSets(dev, len(writes), writes, 0, None)
        self.sets[key] = (found, [weakref.ref(a) for a in arrays])
        return found

    def record(self, cb: object, args: Mapping[str, object], groups: tuple[int, ...]) -> None:
        arrays = [a for a in args.values() if isinstance(a, VulkanArray)]
        scalars = [a for a in args.values() if not isinstance(a, VulkanArray)]
        vk.vkCmdBindPipeline(cb, vk.VK_PIPELINE_BIND_POINT_COMPUTE, self.pipeline)
        vk.vkCmdBindDescriptorSets(
            cb, vk.VK_PIPELINE_BIND_POINT_COMPUTE, self.layout, 0, 1, [self._set(arrays)], 0, None
        )
        if scalars:
            packed = pack(scalars)
            vk.vkCmdPushConstants(
                cb, self.layout, vk.VK_SHADER_STAGE_COMPUTE_BIT, 0, len(packed), vk.ffi.new("char[]", packed)
            )
        vk.vkCmdDispatch(cb, *[*groups, 1, 1, 1][:3])
