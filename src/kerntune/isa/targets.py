"""The targets kerntune cross-compiles for: Triton's (backend, arch, warp size) per name, and the NVIDIA
per-SM limits occupancy needs (AMD's are in ``occupancy.AMD_ARCHES``). Data only: the parent process reads it
without importing Triton."""

from __future__ import annotations

TARGETS: dict[str, tuple[str, int | str, int]] = {
    "sm_80": ("cuda", 80, 32),
    "sm_86": ("cuda", 86, 32),
    "sm_89": ("cuda", 89, 32),
    "sm_90": ("cuda", 90, 32),
    "sm_100": ("cuda", 100, 32),
    "gfx906": ("hip", "gfx906", 64),
    "gfx90a": ("hip", "gfx90a", 64),
    "gfx942": ("hip", "gfx942", 64),
    "gfx950": ("hip", "gfx950", 64),
    "gfx1100": ("hip", "gfx1100", 32),
    "gfx1201": ("hip", "gfx1201", 32),
}
NVIDIA_LIMITS: dict[str, dict[str, int]] = {
    # Per-SM and per-block limits from NVIDIA's CUDA C++ Programming Guide, compute capability table.
    "sm_80": {
        "registers_per_sm": 65536,
        "shared_bytes_per_sm": 167936,
        "shared_bytes_per_block": 166912,
        "threads_per_sm": 2048,
        "blocks_per_sm": 32,
        "threads_per_block": 1024,
    },
    "sm_86": {
        "registers_per_sm": 65536,
        "shared_bytes_per_sm": 102400,
        "shared_bytes_per_block": 101376,
        "threads_per_sm": 1536,
        "blocks_per_sm": 16,
        "threads_per_block": 1024,
    },
    "sm_89": {
        "registers_per_sm": 65536,
        "shared_bytes_per_sm": 102400,
        "shared_bytes_per_block": 101376,
        "threads_per_sm": 1536,
        "blocks_per_sm": 24,
        "threads_per_block": 1024,
    },
    "sm_90": {
        "registers_per_sm": 65536,
        "shared_bytes_per_sm": 233472,
        "shared_bytes_per_block": 232448,
        "threads_per_sm": 2048,
        "blocks_per_sm": 32,
        "threads_per_block": 1024,
    },
    "sm_100": {
        "registers_per_sm": 65536,
        "shared_bytes_per_sm": 233472,
        "shared_bytes_per_block": 232448,
        "threads_per_sm": 2048,
        "blocks_per_sm": 32,
        "threads_per_block": 1024,
    },
}

_SM80 = frozenset({"mma", "cp.async"})
FEATURES: dict[str, frozenset[str]] = {
    # What each target's ISA offers, for capability checks (never for performance choices). The arch-specific
    # "a" targets add the instructions that exist on that chip only: wgmma (sm_90a), tcgen05 (sm_100a).
    "sm_80": _SM80,
    "sm_86": _SM80,
    "sm_89": _SM80 | {"fp8"},
    "sm_90": _SM80 | {"fp8", "tma", "clusters"},
    "sm_90a": _SM80 | {"fp8", "tma", "clusters", "wgmma"},
    "sm_100": _SM80 | {"fp8", "tma", "clusters"},
    "sm_100a": _SM80 | {"fp8", "tma", "clusters", "tcgen05"},
    "gfx906": frozenset({"dot"}),
    "gfx908": frozenset({"dot", "mfma"}),
    "gfx90a": frozenset({"dot", "mfma"}),
    "gfx942": frozenset({"dot", "mfma", "fp8"}),
    "gfx950": frozenset({"dot", "mfma", "fp8"}),
    "gfx1100": frozenset({"dot", "wmma"}),
    "gfx1201": frozenset({"dot", "wmma", "fp8"}),
}


def missing_features(target: str, required: list[str] | tuple[str, ...]) -> str | None:
    """Why ``target`` cannot run code that needs ``required`` (None: it can). An unknown target is not
    refused here: the compiler decides."""
    have = FEATURES.get(target)
    if have is None:
        return None
    lacking = [f for f in required if f not in have]
    if not lacking:
        return None
    where = sorted(t for t, fs in FEATURES.items() if set(lacking) <= fs)
    return (
        f"capability: {target} lacks {', '.join(lacking)}"
        + (f" (found on {', '.join(where)})" if where else "")
        + "; a capability check, not a performance pick"
    )
