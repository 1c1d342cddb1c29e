"""NVIDIA: resources from ``cuobjdump -res-usage`` and an instruction census from ``nvdisasm`` text.

Pure parsing: the tools are run elsewhere (``backends.triton_cross``); this module only reads their output.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

_RES = re.compile(r"Function\s+(\S+?):?\s*\n\s*REG:(\d+)\s+STACK:(\d+)\s+SHARED:(\d+)\s+LOCAL:(\d+)")
_INSTR = re.compile(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P[0-9T]+\s+)?([A-Z][A-Z0-9_]*)((?:\.[A-Za-z0-9_]+)*)")

CATEGORIES = {
    "tensor core (HGMMA/HMMA/IMMA/QGMMA)": ("HGMMA", "HMMA", "IMMA", "QGMMA", "UTCHMMA", "UTCQMMA"),
    "FFMA": ("FFMA",),
    "global loads (LDG)": ("LDG",),
    "global stores (STG)": ("STG",),
    "shared loads (LDS, LDSM)": ("LDS", "LDSM"),
    "shared stores (STS, STSM)": ("STS", "STSM"),
    "TMA (UTMALDG/UTMASTG)": ("UTMALDG", "UTMASTG"),
    "barriers (BAR)": ("BAR",),
    "local memory (LDL/STL: spills)": ("LDL", "STL"),
    "branches (BRA)": ("BRA", "BRX", "JMP"),
}


@dataclass(frozen=True)
class SassResources:
    registers: int
    stack_bytes: int
    shared_bytes: int
    local_bytes: int


@dataclass
class Census:
    opcodes: Counter[str] = field(default_factory=Counter)
    widths: Counter[str] = field(default_factory=Counter)
    """Global memory instructions by access width (``LDG.128``: 16 bytes per thread)."""

    def category(self, name: str) -> int:
        return sum(self.opcodes[op] for op in CATEGORIES[name])

    def summary(self) -> dict[str, int]:
        return {name: self.category(name) for name in CATEGORIES}


def parse_res_usage(text: str, function: str | None = None) -> SassResources:
    """The resources of ``function`` (default: the first function listed) in ``cuobjdump -res-usage`` output."""
    for match in _RES.finditer(text):
        if function is None or match.group(1) == function:
            regs, stack, shared, local = (int(match.group(i)) for i in range(2, 6))
            return SassResources(regs, stack, shared, local)
    found = ", ".join(m.group(1) for m in _RES.finditer(text)) or "none"
    raise ValueError(f"no resource usage for {function or 'any function'} in cuobjdump output (functions: {found})")


def census(disassembly: str) -> Census:
    """Count instructions by base opcode, and global loads/stores by width."""
    result = Census()
    for match in _INSTR.finditer(disassembly):
        op, suffix = match.group(1), match.group(2)
        result.opcodes[op] += 1
        if op in ("LDG", "STG"):
            bits = next((p for p in suffix.split(".") if p in ("8", "16", "32", "64", "128", "U8", "S8", "U16")), "32")
            result.widths[f"{op}.{bits}"] += 1
    return result


def spill_instructions(c: Census) -> int:
    """Local-memory loads and stores: register spills (or a stack the compiler could not keep in registers)."""
    return c.opcodes["LDL"] + c.opcodes["STL"]
