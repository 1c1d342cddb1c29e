"""Occupancy of a compiled kernel: how many of its blocks fit on one multiprocessor, and what limits that.

Arithmetic only, from the resources a backend read off the compiled kernel (registers per thread, shared
memory per block, threads per block) and the device limits it reported (``Backend.limits``). A kernel that
does not fit at all can never launch; one below a minimum occupancy is not worth timing. Every verdict comes
with its reason, which the tuner logs for each pruned config.

Limit names: ``shared_bytes_per_block``, ``shared_bytes_per_sm``, ``shared_reserved_per_block`` (the driver's
own share per block, 1 KiB on NVIDIA sm_80+), ``registers_per_sm``, ``threads_per_sm``, ``threads_per_block``,
``blocks_per_sm``, ``warp_size``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

REGISTER_UNIT = 256
"""NVIDIA allocates registers per warp in units of 256 (8 per thread): 65 registers cost as much as 72."""


@dataclass(frozen=True)
class Occupancy:
    blocks_per_sm: int
    warps_per_sm: int
    fraction: float
    """Resident warps over the most the multiprocessor holds."""
    limiter: str
    """What stops one more block from fitting: registers, shared memory, threads, or the block limit."""


def threads_per_block(resources: Mapping[str, object], limits: Mapping[str, int]) -> int | None:
    warps = resources.get("num_warps")
    if isinstance(warps, int):
        return warps * int(limits.get("warp_size", 32))
    local = resources.get("local_size")
    if isinstance(local, (list, tuple)) and local:
        return math.prod(int(x) for x in local)
    return None


def shared_bytes(resources: Mapping[str, object]) -> int | None:
    """Shared memory / LDS one block holds: the launch's dynamic request plus the binary's static part."""
    static = resources.get("static_shared_bytes")
    for key in ("shared_bytes", "local_mem_bytes"):
        found = resources.get(key)
        if isinstance(found, int):
            return found + (static if isinstance(static, int) else 0)
    return None


def unlaunchable(resources: Mapping[str, object], limits: Mapping[str, int]) -> str | None:
    """Why a block of this kernel cannot launch on the device at all, or None if it can (or is unknown)."""
    shared, threads = shared_bytes(resources), threads_per_block(resources, limits)
    regs = resources.get("registers")
    if shared is not None and "shared_bytes_per_block" in limits and shared > limits["shared_bytes_per_block"]:
        return f"needs {shared} B of shared memory per block; the device allows {limits['shared_bytes_per_block']} B"
    if threads is not None and "threads_per_block" in limits and threads > limits["threads_per_block"]:
        return f"needs {threads} threads per block; the device allows {limits['threads_per_block']}"
    if (
        isinstance(regs, int)
        and threads
        and "registers_per_sm" in limits
        and _register_cost(regs, threads, limits) > limits["registers_per_sm"]
    ):
        return (
            f"{regs} registers × {threads} threads exceed the {limits['registers_per_sm']} registers of a "
            "multiprocessor"
        )
    return None


def _register_cost(regs: int, threads: int, limits: Mapping[str, int]) -> int:
    warp = int(limits.get("warp_size", 32))
    per_warp = math.ceil(regs * warp / REGISTER_UNIT) * REGISTER_UNIT
    return per_warp * math.ceil(threads / warp)


def occupancy(resources: Mapping[str, object], limits: Mapping[str, int]) -> Occupancy | None:
    """Blocks and warps resident per multiprocessor, or None when resources or limits are not known."""
    threads = threads_per_block(resources, limits)
    if not threads or "threads_per_sm" not in limits:
        return None
    warp = int(limits.get("warp_size", 32))
    bounds = {"threads": limits["threads_per_sm"] // threads, "the block limit": int(limits.get("blocks_per_sm", 32))}
    if threads > limits.get("threads_per_block", threads):
        bounds["threads per block"] = 0  # over the per-block limit: the launch itself fails
    regs = resources.get("registers")
    if isinstance(regs, int) and regs > 0 and "registers_per_sm" in limits:
        bounds["registers"] = limits["registers_per_sm"] // _register_cost(regs, threads, limits)
    shared = shared_bytes(resources)
    if shared and "shared_bytes_per_sm" in limits:
        per_block = shared + int(limits.get("shared_reserved_per_block", 0))
        bounds["shared memory"] = limits["shared_bytes_per_sm"] // per_block
    limiter = min(bounds, key=lambda k: bounds[k])
    blocks = max(0, bounds[limiter])
    warps = blocks * math.ceil(threads / warp)
    return Occupancy(blocks, warps, warps / (limits["threads_per_sm"] // warp), limiter)


def registers_to_next_block(resources: Mapping[str, object], limits: Mapping[str, int]) -> int | None:
    """When registers limit occupancy: how many fewer registers per thread would let one more block reside
    (other limits permitting); None when something else limits it or nothing is known."""
    occ = occupancy(resources, limits)
    threads = threads_per_block(resources, limits)
    regs = resources.get("registers")
    if occ is None or occ.limiter != "registers" or not threads or not isinstance(regs, int):
        return None
    target = occ.blocks_per_sm + 1
    fewer = 1
    while regs - fewer > 0:
        if limits["registers_per_sm"] // _register_cost(regs - fewer, threads, limits) >= target:
            return fewer
        fewer += 1
    return None


def prune_reason(resources: Mapping[str, object], limits: Mapping[str, int], min_occupancy: float) -> str | None:
    """Why this compiled kernel is not worth timing, or None: it cannot launch, or its occupancy (resident
    warps over the maximum) is under ``min_occupancy``."""
    reason = unlaunchable(resources, limits)
    if reason is not None:
        return f"cannot launch: {reason}"
    occ = occupancy(resources, limits)
    if occ is not None and occ.blocks_per_sm == 0:
        return f"cannot launch: no block fits a multiprocessor ({occ.limiter})"
    if occ is not None and min_occupancy > 0 and occ.fraction < min_occupancy:
        return (
            f"occupancy {occ.fraction:.0%} ({occ.warps_per_sm} warps/SM, limited by {occ.limiter}) is under "
            f"the minimum {min_occupancy:.0%}"
        )
    return None


@dataclass(frozen=True)
class AmdArch:
    vgprs_per_lane: int
    """Vector registers one SIMD lane has (VGPRs, plus AGPRs where the file is unified)."""
    granule: int
    """Allocation granule of a wave's registers."""
    max_waves: int
    """Waves a SIMD holds at most."""
    unified_agprs: bool
    """CDNA2 and newer: AGPRs come out of the same file, after the VGPRs (rounded to 4)."""
    lds_per_cu: int = 65536
    simds_per_cu: int = 4


AMD_ARCHES = {
    "gfx906": AmdArch(256, 4, 10, False),
    "gfx908": AmdArch(256, 8, 10, False),
    "gfx90a": AmdArch(512, 8, 8, True),
    "gfx942": AmdArch(512, 8, 8, True),
    "gfx950": AmdArch(512, 8, 8, True, lds_per_cu=163840),
}


def _amd_used(vgprs: int, agprs: int, arch: AmdArch) -> int:
    return (math.ceil(vgprs / 4) * 4 + agprs) if arch.unified_agprs else max(vgprs, agprs)


def _amd_registers(vgprs: int, agprs: int, arch: AmdArch) -> int:
    """Registers a wave is allocated per lane: what it uses, rounded up to the granule."""
    return math.ceil(max(_amd_used(vgprs, agprs, arch), 1) / arch.granule) * arch.granule


@dataclass(frozen=True)
class AmdOccupancy:
    """Occupancy on a CDNA/GCN compute unit, in the units AMD counts: waves per SIMD (what the register file and
    the SIMD's wave slots bound) and, when the block size is known, blocks per CU."""

    waves_per_simd: int
    blocks_per_cu: int | None
    fraction: float
    """Resident waves per SIMD over the most a SIMD holds."""
    limiter: str
    """What stops one more wave: VGPRs, LDS, or the wave limit."""


def _waves_per_block(threads_per_block: int, wavefront: int) -> int:
    return max(1, math.ceil(threads_per_block / wavefront))


def amd_occupancy(
    arch_name: str,
    vgprs: int,
    agprs: int = 0,
    lds_bytes: int = 0,
    threads_per_block: int | None = None,
    wavefront: int = 64,
) -> AmdOccupancy:
    """Waves per SIMD for a CDNA/GCN kernel: floor(register file / registers per wave, rounded to the
    granule), capped by the SIMD's wave slots and, when the block size is known, by LDS per CU."""
    if arch_name not in AMD_ARCHES:
        raise KeyError(f"no occupancy rules for {arch_name}: known AMD architectures are {', '.join(AMD_ARCHES)}")
    arch = AMD_ARCHES[arch_name]
    bounds = {"the wave limit": arch.max_waves, "VGPRs": arch.vgprs_per_lane // _amd_registers(vgprs, agprs, arch)}
    blocks = None
    if threads_per_block:
        per_block = _waves_per_block(threads_per_block, wavefront)
        if lds_bytes:
            # Waves of the blocks that fit, spread over the CU's SIMDs: the fullest SIMD holds the ceiling.
            bounds["LDS"] = math.ceil(arch.lds_per_cu // lds_bytes * per_block / arch.simds_per_cu)
    limiter = min(bounds, key=lambda k: bounds[k])
    waves = bounds[limiter]
    if threads_per_block:
        blocks = waves * arch.simds_per_cu // _waves_per_block(threads_per_block, wavefront)
        if lds_bytes:
            blocks = min(blocks, arch.lds_per_cu // lds_bytes)
    return AmdOccupancy(waves, blocks, waves / arch.max_waves, limiter)


def amd_next_boundary(
    arch_name: str,
    vgprs: int,
    agprs: int = 0,
    lds_bytes: int = 0,
    threads_per_block: int | None = None,
    wavefront: int = 64,
) -> str | None:
    """What one more wave per SIMD would take, named by the resource that binds ("12 fewer VGPRs per lane would
    allow 3 waves per SIMD", or the LDS bytes per block when LDS is the limiter), or None at the wave limit."""
    arch = AMD_ARCHES[arch_name]
    occ = amd_occupancy(arch_name, vgprs, agprs, lds_bytes, threads_per_block, wavefront)
    waves = occ.waves_per_simd
    if occ.limiter == "the wave limit" or waves >= arch.max_waves:
        return None
    if occ.limiter == "LDS" and threads_per_block:
        per_block = _waves_per_block(threads_per_block, wavefront)
        needed = waves * arch.simds_per_cu // per_block + 1  # blocks per CU whose waves fill one more slot
        fewer = lds_bytes - arch.lds_per_cu // needed
        return f"LDS limits it: {fewer} fewer bytes of LDS per block would allow {waves + 1} waves per SIMD"
    allowed = arch.vgprs_per_lane // (waves + 1) // arch.granule * arch.granule
    fewer = _amd_used(vgprs, agprs, arch) - allowed
    kind = "VGPRs + AGPRs" if arch.unified_agprs and agprs else "VGPRs"
    return f"{fewer} fewer {kind} per lane would allow {waves + 1} waves per SIMD"
