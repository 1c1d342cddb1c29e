"""What a Vulkan driver says a compiled pipeline became, through ``VK_KHR_pipeline_executable_properties``: per
executable (a compute pipeline has one), the driver's statistics — register counts, shared memory, spills, as
each driver names them — and, where it gives them, its internal representations (ISA text on RADV; NVIDIA's
driver gives statistics). A driver without the extension (lavapipe of Mesa 22) exposes none of this, and the
reading says so rather than fill the gap with a guess.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from kerntune.backends.vulkan_pipeline import vk

EXTENSION = "VK_KHR_pipeline_executable_properties"
TEXT_LIMIT = 64 << 10
"""Internal representations are kept up to this many bytes each (a whole shader's ISA is rarely more)."""


def supported(physical: object) -> bool:
    """Whether the device's driver offers the extension."""
    names = {str(e.extensionName) for e in vk.vkEnumerateDeviceExtensionProperties(physical, None)}
    return EXTENSION in names


def feature_chain() -> object:
    """The ``pNext`` of ``VkDeviceCreateInfo`` that turns the extension's feature on."""
    return vk.VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR(pipelineExecutableInfo=vk.VK_TRUE)


def capture_flags(internal: bool) -> int:
    """Pipeline creation flags that ask the driver to keep statistics (and internal representations)."""
    flags = int(vk.VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR)
    if internal:
        flags |= int(vk.VK_PIPELINE_CREATE_CAPTURE_INTERNAL_REPRESENTATIONS_BIT_KHR)
    return flags


@dataclass
class Executable:
    """One executable of a pipeline as the driver describes it."""

    name: str
    description: str
    subgroup_size: int
    statistics: dict[str, float | int | bool] = field(default_factory=dict)
    units: dict[str, str] = field(default_factory=dict)
    """Each statistic's description, as the driver words it (its unit lives there)."""
    internal: list[dict[str, object]] = field(default_factory=list)
    """``{"name", "description", "text" or "bytes"}`` per internal representation."""
    internal_error: str = ""
    """Why the internal representations could not be read (the statistics are kept)."""
    internal_note: str = ""
    """Where the query worked but the driver gave none: a sentence saying so (NVIDIA's driver lists none)."""


class NoneGiven(Exception):
    """The driver answered the query for internal representations with none (not a failure: a fact of it)."""


def _value(stat: Any) -> float | int | bool:
    fmt = int(stat.format)
    if fmt == vk.VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_BOOL32_KHR:
        return bool(stat.value.b32)
    if fmt == vk.VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_INT64_KHR:
        return int(stat.value.i64)
    if fmt == vk.VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_UINT64_KHR:
        return int(stat.value.u64)
    return float(stat.value.f64)


def _text(cdata: object) -> str:
    return vk.ffi.string(cdata).decode(errors="replace") if not isinstance(cdata, str) else cdata


def _internal(device: object, info: object) -> list[dict[str, object]]:
    """The three-call query of internal representations (the bindings' wrapper stops before the data). Raises
    ``NoneGiven`` where the driver lists none, RuntimeError where a call fails (its VkResult named)."""
    name = "vkGetPipelineExecutableInternalRepresentationsKHR"
    raw = vk.ffi.cast(f"PFN_{name}", vk.lib.vkGetDeviceProcAddr(device, name.encode()))
    if raw == vk.ffi.NULL:
        raise NoneGiven(f"the driver has no {name}")
    # The bindings' constructors give a struct; the raw entry point takes a pointer to it.
    info = info if vk.ffi.typeof(info).kind == "pointer" else vk.ffi.addressof(info)
    count = vk.ffi.new("uint32_t*")

    def call(out: object) -> None:
        result = raw(device, info, count, out)
        if result not in (vk.VK_SUCCESS, vk.VK_INCOMPLETE):
            raise RuntimeError(f"{name} returned VkResult {result}")

    call(vk.ffi.NULL)
    if count[0] == 0:
        raise NoneGiven("the driver lists none for this pipeline (no ISA text); its statistics are its reading")
    reps = vk.ffi.new("VkPipelineExecutableInternalRepresentationKHR[]", count[0])
    for i in range(count[0]):
        reps[i].sType = vk.VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INTERNAL_REPRESENTATION_KHR
    call(reps)
    buffers = [vk.ffi.new("char[]", max(1, int(reps[i].dataSize))) for i in range(count[0])]
    for i, buffer in enumerate(buffers):
        reps[i].pData = buffer
    call(reps)
    out: list[dict[str, object]] = []
    for i in range(count[0]):
        size = int(reps[i].dataSize)
        data = bytes(vk.ffi.buffer(buffers[i], size))
        entry: dict[str, object] = {"name": _text(reps[i].name), "description": _text(reps[i].description)}
        if reps[i].isText:
            entry["text"] = data[:TEXT_LIMIT].split(b"\0", 1)[0].decode(errors="replace")
            entry["truncated"] = size > TEXT_LIMIT
        else:
            entry["bytes"] = size
        out.append(entry)
    return out


def read_pipeline(device: object, pipeline: object, internal: bool) -> list[Executable]:
    """The pipeline's executables with their statistics (and internal representations when ``internal``; the
    pipeline must have been created with ``capture_flags(internal)``)."""
    properties = vk.vkGetDeviceProcAddr(device, "vkGetPipelineExecutablePropertiesKHR")
    statistics = vk.vkGetDeviceProcAddr(device, "vkGetPipelineExecutableStatisticsKHR")
    found: list[Executable] = []
    for index, prop in enumerate(list(properties(device, vk.VkPipelineInfoKHR(pipeline=pipeline)))):
        info = vk.VkPipelineExecutableInfoKHR(pipeline=pipeline, executableIndex=index)
        executable = Executable(
            name=str(prop.name), description=str(prop.description), subgroup_size=int(prop.subgroupSize)
        )
        for stat in statistics(device, info):
            executable.statistics[str(stat.name)] = _value(stat)
            executable.units[str(stat.name)] = str(stat.description)
        if internal:
            try:
                executable.internal = _internal(device, info)
            except NoneGiven as exc:
                executable.internal_note = str(exc)
            except Exception as exc:  # the statistics stand without it
                executable.internal_error = f"internal representations: {type(exc).__name__}: {exc}"
        found.append(executable)
    return found


REGISTERS = re.compile(r"^(register count|registers|vgprs|gprs)$", re.IGNORECASE)
SPILLS = re.compile(r"spill", re.IGNORECASE)


def summary(executables: list[Executable]) -> dict[str, object]:
    """The statistics of a compute pipeline's executable, flat, with ``registers`` and ``spills`` named where the
    driver's own names say which statistic they are (its names are kept beside them as given)."""
    if not executables:
        return {}
    stats = dict(executables[0].statistics)
    # A subgroup size of 0 is the driver not saying (NVIDIA's, on a pipeline's first build): left out, not shown.
    size = executables[0].subgroup_size
    out: dict[str, object] = {**({"subgroup_size": size} if size else {}), **stats}
    registers = [v for k, v in stats.items() if REGISTERS.match(k.strip())]
    if registers:
        out["registers"] = registers[0]
    spills = [v for k, v in stats.items() if SPILLS.search(k) and isinstance(v, int) and not isinstance(v, bool)]
    if spills:
        out["spills"] = sum(spills)
    return out
