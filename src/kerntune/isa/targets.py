"""The targets kerntune cross-compiles for: Triton's (backend, arch, warp size) per name, and the NVIDIA
per-SM limits occupancy needs (AMD's are in ``occupancy.AMD_ARCHES``). Data only: the parent process reads it
without importing Triton."""

from __future__ import annotations

TARGETS: dict[str, tuple[str, int | str, int]] = {
    "sm_80": ("cuda", 80, 32), "sm_86": ("cuda", 86, 32), "sm_89": ("cuda", 89, 32), "sm_90": ("cuda", 90, 32),
    "sm_100": ("cuda", 100, 32),
    "gfx906": ("hip", "gfx906", 64), "gfx90a": ("hip", "gfx90a", 64), "gfx942": ("hip", "gfx942", 64),
    "gfx950": ("hip", "gfx950", 64), "gfx1100": ("hip", "gfx1100", 32), "gfx1201": ("hip", "gfx1201", 32),
}
NVIDIA_LIMITS: dict[str, dict[str, int]] = {
    # Per-SM and per-block limits from NVIDIA's CUDA C++ Programming Guide, compute capability table.
    "sm_80": {"registers_per_sm": 65536, "shared_bytes_per_sm": 167936, "shared_bytes_per_block": 166912,
              "threads_per_sm": 2048, "blocks_per_sm": 32},
    "sm_86": {"registers_per_sm": 65536, "shared_bytes_per_sm": 102400, "shared_bytes_per_block": 101376,
              "threads_per_sm": 1536, "blocks_per_sm": 16},
    "sm_89": {"registers_per_sm": 65536, "shared_bytes_per_sm": 102400, "shared_bytes_per_block": 101376,
              "threads_per_sm": 1536, "blocks_per_sm": 24},
    "sm_90": {"registers_per_sm": 65536, "shared_bytes_per_sm": 233472, "shared_bytes_per_block": 232448,
              "threads_per_sm": 2048, "blocks_per_sm": 32},
    "sm_100": {"registers_per_sm": 65536, "shared_bytes_per_sm": 233472, "shared_bytes_per_block": 232448,
               "threads_per_sm": 2048, "blocks_per_sm": 32},
}
