"""Read what an AMD compiler made of a kernel: resources (VGPRs, AGPRs, SGPRs, LDS, scratch) and an instruction
census from its AMDGCN assembly text (``isa.amdgcn``), and the occupancy they allow on a CDNA target. Shared by
the Triton cross-compiler (``asm["amdgcn"]``) and the HIP backend (``hipcc -S``)."""

from __future__ import annotations

from kerntune.backends.cubin import Inspection
from kerntune.isa import amdgcn
from kerntune.isa.occupancy import AMD_ARCHES, amd_next_boundary, amd_occupancy


def inspect_amdgcn(
    text: str,
    target: str,
    *,
    dynamic_lds: int = 0,
    total_lds: int | None = None,
    threads: int | None = None,
    waves: int | None = None,
) -> Inspection:
    """Resources, census and occupancy of the kernel in ``text`` on ``target`` (a gfx name). LDS per block: the
    code object's static size plus the launch's ``dynamic_lds`` (HIP), or ``total_lds`` where the compiler's
    own figure already counts both (Triton's metadata). The block: ``threads`` (a HIP launch) or ``waves``
    wavefronts (Triton's num_warps); the wavefront width (64 on CDNA, 32 on RDNA) is the code object's."""
    amd = amdgcn.parse_resources(text)
    counts = amdgcn.census(text)
    waves = waves if waves is not None else -(-(threads or amd.wavefront) // amd.wavefront)
    lds = max(amd.lds_bytes, total_lds) if total_lds is not None else amd.lds_bytes + dynamic_lds
    resources = {
        "vgprs": amd.vgprs,
        "agprs": amd.agprs,
        "sgprs": amd.sgprs,
        "lds_bytes": lds,
        "scratch_bytes": amd.scratch_bytes,
        "wavefront": amd.wavefront,
        "num_warps": waves,
    }
    occ, boundary = None, None
    arch = target.split(":")[0]
    if arch in AMD_ARCHES:
        occ = amd_occupancy(arch, amd.vgprs, amd.agprs, resources["lds_bytes"], waves * amd.wavefront, amd.wavefront)
        boundary = amd_next_boundary(
            arch, amd.vgprs, amd.agprs, resources["lds_bytes"], waves * amd.wavefront, amd.wavefront
        )
    if amd.compiler_occupancy is not None:
        resources["compiler_occupancy"] = amd.compiler_occupancy
    return Inspection(target, resources, amdgcn.categories(counts), dict(counts), occ, boundary, amd.scratch_bytes)
