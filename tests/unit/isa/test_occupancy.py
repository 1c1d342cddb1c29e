"""Occupancy arithmetic against hand-computed cases (H100/H200 limits: 64K registers, 228 KiB shared memory,
2048 threads, 32 blocks per multiprocessor; 227 KiB per block opt-in)."""

from __future__ import annotations

from kerntune.isa.occupancy import occupancy, prune_reason, unlaunchable

SM90 = {
    "shared_bytes_per_block": 232448,
    "shared_bytes_per_sm": 233472,
    "shared_reserved_per_block": 1024,
    "registers_per_sm": 65536,
    "threads_per_sm": 2048,
    "threads_per_block": 1024,
    "blocks_per_sm": 32,
    "warp_size": 32,
}


def test_registers_limit_a_heavy_kernel() -> None:
    # 128 registers × 256 threads = 32768 per block: two blocks, 16 of 64 warps.
    occ = occupancy({"registers": 128, "num_warps": 8, "shared_bytes": 0}, SM90)
    assert occ is not None and (occ.blocks_per_sm, occ.warps_per_sm, occ.limiter) == (2, 16, "registers")
    assert occ.fraction == 0.25


def test_register_allocation_rounds_up_per_warp() -> None:
    # 33 registers × 32 lanes = 1056, allocated as 1280 per warp: 65536 // (1280 × 8) = 6 blocks, not the 7
    # that 1056 × 8 would allow.
    occ = occupancy({"registers": 33, "num_warps": 8}, SM90)
    assert occ is not None and (occ.blocks_per_sm, occ.limiter) == (6, "registers")


def test_shared_memory_limits_with_the_drivers_reserve() -> None:
    occ = occupancy({"registers": 32, "num_warps": 4, "shared_bytes": 115 * 1024}, SM90)
    assert occ is not None and (occ.blocks_per_sm, occ.limiter) == (1, "shared memory")  # 2 × (115 + 1) KiB > 228


def test_what_cannot_launch_says_why() -> None:
    assert "shared memory" in (unlaunchable({"shared_bytes": 240000, "num_warps": 4}, SM90) or "")
    assert "threads per block" in (unlaunchable({"local_size": [64, 32]}, SM90) or "")
    assert "registers" in (unlaunchable({"registers": 255, "num_warps": 32}, SM90) or "")
    assert unlaunchable({"registers": 128, "num_warps": 8, "shared_bytes": 100000}, SM90) is None
    assert unlaunchable({}, SM90) is None and unlaunchable({"shared_bytes": 10**9}, {}) is None  # unknown: kept


def test_prune_reason_applies_the_minimum_occupancy_only_when_asked() -> None:
    heavy = {"registers": 168, "num_warps": 8, "shared_bytes": 200000}  # one block: 8 of 64 warps
    assert prune_reason(heavy, SM90, 0.0) is None
    reason = prune_reason(heavy, SM90, 0.2)
    assert reason is not None and reason.startswith("occupancy 12%") and "under the minimum 20%" in reason
    assert (prune_reason({"shared_bytes": 300000, "num_warps": 4}, SM90, 0.0) or "").startswith("cannot launch")


def test_the_gfx906_occupancy_ladder() -> None:
    from kerntune.isa.occupancy import amd_occupancy

    # The seeds' ladder: 1-64 VGPRs -> 4 waves (more below 64: up to 10), 65-84 -> 3, 85-128 -> 2, 129-256 -> 1.
    ladder = {64: 4, 65: 3, 84: 3, 85: 2, 128: 2, 129: 1, 256: 1, 24: 10}
    assert {v: amd_occupancy("gfx906", v).waves_per_simd for v in ladder} == ladder


def test_cdna_agprs_share_the_register_file_and_lds_can_limit() -> None:
    from kerntune.isa.occupancy import amd_next_boundary, amd_occupancy

    assert amd_occupancy("gfx942", 217).waves_per_simd == 2  # 220 (rounded to 4) -> 224 of 512 per lane
    assert amd_occupancy("gfx942", 128, agprs=128).waves_per_simd == 2  # 256 of 512
    assert amd_occupancy("gfx942", 64).waves_per_simd == 8  # the wave limit
    lds = amd_occupancy("gfx942", 64, lds_bytes=32768, threads_per_block=256)
    assert (lds.waves_per_simd, lds.blocks_per_cu, lds.limiter) == (2, 2, "LDS")  # 2 blocks of 4 waves, 4 SIMDs
    assert amd_next_boundary("gfx906", 65) == "1 fewer VGPRs per lane would allow 4 waves per SIMD"
    # The readout names the limit that binds: here LDS (registers would allow 8 waves), so the lever is LDS bytes:
    # 3 waves per SIMD need 3 blocks of 4 waves, 65536 // 3 = 21845 bytes each.
    assert (
        amd_next_boundary("gfx942", 64, lds_bytes=32768, threads_per_block=256)
        == "LDS limits it: 10923 fewer bytes of LDS per block would allow 3 waves per SIMD"
    )
    assert amd_next_boundary("gfx942", 64) is None  # at the wave limit nothing is next


def test_registers_to_the_next_block_when_registers_limit() -> None:
    from kerntune.isa.occupancy import registers_to_next_block

    # 8 warps × ceil(130·32/256)·256 = 34,816 registers: one block; 128 per thread (32,768) would fit two.
    assert registers_to_next_block({"registers": 130, "num_warps": 8}, SM90) == 2
    # 100 per thread: two blocks (26,624 each); a third needs ≤ 21,845, i.e. 80 per thread.
    assert registers_to_next_block({"registers": 100, "num_warps": 8}, SM90) == 20
    # Shared memory limits this one (two blocks of 100 KB), so registers are not the lever.
    assert registers_to_next_block({"registers": 64, "num_warps": 4, "shared_bytes": 100_000}, SM90) is None
