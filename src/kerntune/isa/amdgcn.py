"""AMD: resources and an instruction census from the AMDGCN assembly text a compiler emits (Triton's
``asm["amdgcn"]``; hipcc ``--save-temps``): the kernel descriptor's ``.amdhsa_*`` directives and the
``; NumVgprs``-style comments, then every instruction's mnemonic. Pure parsing."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

_DIRECTIVES = {
    "vgprs": (r";\s*NumVgprs:\s*(\d+)", r"\.amdhsa_next_free_vgpr\s+(\d+)"),
    "agprs": (r";\s*NumAgprs:\s*(\d+)",),
    "sgprs": (r";\s*TotalNumSgprs:\s*(\d+)", r";\s*NumSgprs:\s*(\d+)", r"\.amdhsa_next_free_sgpr\s+(\d+)"),
    "lds_bytes": (r"\.amdhsa_group_segment_fixed_size\s+(\d+)",),
    "scratch_bytes": (r"\.amdhsa_private_segment_fixed_size\s+(\d+)", r";\s*ScratchSize:\s*(\d+)"),
    "compiler_occupancy": (r";\s*Occupancy:\s*(\d+)",),
}
_MNEMONIC = re.compile(r"^\s+([a-z][a-z0-9_]*)\b", re.MULTILINE)

CATEGORIES = {
    "matrix (v_mfma/v_wmma/v_smfmac)": ("v_mfma", "v_wmma", "v_smfmac"),
    "dot products (v_dot*)": ("v_dot",),
    "LDS 128-bit (ds_read_b128/ds_write_b128)": ("ds_read_b128", "ds_write_b128", "ds_load_b128", "ds_store_b128"),
    "global 128-bit loads (global_load_dwordx4)": ("global_load_dwordx4", "global_load_b128"),
    "buffer loads (buffer_load*)": ("buffer_load",),
    "barriers (s_barrier)": ("s_barrier",),
    "waits (s_waitcnt)": ("s_waitcnt",),
    "s_nop": ("s_nop",),
    "branches (s_cbranch*)": ("s_cbranch",),
    "calls (s_swappc)": ("s_swappc",),
    "scratch (scratch_*: spills)": ("scratch_",),
}


@dataclass(frozen=True)
class AmdResources:
    vgprs: int
    agprs: int
    sgprs: int
    lds_bytes: int
    scratch_bytes: int
    wavefront: int
    compiler_occupancy: int | None
    """Waves per SIMD as the compiler itself estimated (``; Occupancy:``), for comparison."""


def parse_resources(text: str) -> AmdResources:
    found: dict[str, int] = {}
    for name, patterns in _DIRECTIVES.items():
        for pattern in patterns:
            match = re.search(pattern, text)
            if match:
                found[name] = int(match.group(1))
                break
    if "vgprs" not in found:
        raise ValueError("no VGPR count in the AMDGCN text: is this a compiled kernel's assembly?")
    wave32 = re.search(r"\.amdhsa_wavefront_size32\s+1", text) is not None
    return AmdResources(
        found["vgprs"],
        found.get("agprs", 0),
        found.get("sgprs", 0),
        found.get("lds_bytes", 0),
        found.get("scratch_bytes", 0),
        32 if wave32 else 64,
        found.get("compiler_occupancy"),
    )


def census(text: str) -> Counter[str]:
    """Instructions by mnemonic (directives and labels excluded)."""
    body = text.split(".amdgpu_metadata")[0]
    return Counter(m.group(1) for m in _MNEMONIC.finditer(body) if not m.group(1).startswith("."))


def categories(counts: Counter[str]) -> dict[str, int]:
    """Counts per category (a mnemonic belongs to a category when it starts with one of its prefixes)."""
    return {
        name: sum(n for op, n in counts.items() if op.startswith(prefixes)) for name, prefixes in CATEGORIES.items()
    }
