"""Read an NVIDIA binary (a cubin): resources from ``cuobjdump -res-usage``, an instruction census from
``nvdisasm``, and the occupancy they allow on a target. Shared by the Triton cross-compiler and the CUDA C++
backend. The tools come from the triton wheel when it is installed, else from the CUDA toolkit (``CUDA_HOME``
or ``/usr/local/cuda``), else from PATH.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from kerntune.errors import BackendUnavailable
from kerntune.isa import sass
from kerntune.isa.occupancy import AmdOccupancy, Occupancy, occupancy
from kerntune.isa.targets import NVIDIA_LIMITS


@dataclass
class Inspection:
    """What a config becomes on one target."""

    target: str
    resources: dict[str, int]
    census: dict[str, int]
    """Instruction counts by category (see ``isa.sass.CATEGORIES`` / ``isa.amdgcn.CATEGORIES``)."""
    opcodes: dict[str, int] = field(default_factory=dict)
    occupancy: Occupancy | AmdOccupancy | None = None
    """NVIDIA: blocks and warps per SM; AMD: waves per SIMD and blocks per CU (each readout names its unit)."""
    next_boundary: str | None = None
    spills: int = 0
    """Spill instructions (NVIDIA LDL/STL) or scratch bytes (AMD)."""


RESERVED_SHARED = 1024
"""Shared memory the driver keeps per block (sm_80 and newer)."""


def _major(target: str) -> int:
    digits = "".join(ch for ch in target.removeprefix("sm_") if ch.isdigit())
    return int(digits[:-1] or 0) if digits else 0


def nvidia_tool(name: str) -> str:
    """The path of an NVIDIA binary tool (cuobjdump, nvdisasm, ptxas)."""
    places = []
    found = importlib.util.find_spec("triton")
    if found is not None and found.origin:
        places.append(Path(found.origin).parent / "backends" / "nvidia" / "bin" / name)
    for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if home:
            places.append(Path(home) / "bin" / name)
    for place in places:
        if place.exists():
            return str(place)
    on_path = shutil.which(name)
    if not on_path:
        raise BackendUnavailable(
            f"{name} not found (not in the triton wheel, CUDA_HOME or PATH): install the CUDA "
            "toolkit or pip install triton"
        )
    return on_path


def inspect_cubin(
    cubin: bytes, target: str, dynamic_shared: int, threads: int, kernel: str | None = None
) -> Inspection:
    """Resources, census and occupancy of ``kernel`` (default: the first) in ``cubin`` on ``target`` (an sm_*
    name), launched with ``threads`` per block and ``dynamic_shared`` bytes of dynamic shared memory."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "kernel.cubin"
        path.write_bytes(cubin)
        usage = subprocess.run(
            [nvidia_tool("cuobjdump"), "-res-usage", str(path)], capture_output=True, text=True, check=True
        ).stdout
        disassembly = subprocess.run(
            [nvidia_tool("nvdisasm"), str(path)], capture_output=True, text=True, check=True
        ).stdout
    res = sass.parse_res_usage(usage, kernel)
    counted = sass.census(disassembly)
    warps = -(-threads // 32)
    static = res.shared_bytes
    if static >= RESERVED_SHARED and _major(target) >= 9:
        # From sm_90 on, cuobjdump's SHARED includes the 1 KB the driver reserves per block (ptxas -v reports
        # 1 KB less for the same cubin); occupancy adds that reservation itself, so it is taken out here.
        static -= RESERVED_SHARED
    # Kept apart: the dynamic request is what the launch carries (Triton's metadata), the static part is what
    # cuobjdump reads from the cubin; occupancy adds both.
    resources = {
        "registers": res.registers,
        "shared_bytes": dynamic_shared,
        "static_shared_bytes": static,
        "stack_bytes": res.stack_bytes,
        "local_bytes": res.local_bytes,
        "num_warps": warps,
    }
    limits = NVIDIA_LIMITS.get(target) or NVIDIA_LIMITS.get(target.rstrip("a"))
    occ = (
        occupancy(resources, {**limits, "warp_size": 32, "shared_reserved_per_block": RESERVED_SHARED})
        if limits
        else None
    )
    return Inspection(
        target, resources, counted.summary(), dict(counted.opcodes), occ, None, sass.spill_instructions(counted)
    )
