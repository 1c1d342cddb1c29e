"""A warp-specialized, persistent Hopper GEMM written in Gluon (``triton.experimental.gluon``), tuned and served
like any GEMM spec: C[M×N] = A[M×K] · B[K×N] (+ bias[N]) in bf16 or fp16 with fp32 accumulation, every layout
(``kerntune.ops.gemm``).

Each program owns one SM (grid = min(SMs, tiles)) and walks its tiles in a grouped raster. One TMA producer warp
fills a ring of ``STAGES`` shared-memory buffers, each guarded by a ``ready`` and an ``empty`` mbarrier; wgmma
consumers drain it. Two schedules:
- ``cooperative`` (SCHEDULE=0): one 128-row tile at a time, split in M across two consumer warp groups (8 warps);
- ``ping-pong`` (SCHEDULE=1): two 4-warp consumer groups take alternate tiles, so one group's epilogue overlaps
  the other's main loop.
A transposed operand is read through a TMA descriptor of its row-major storage and handed to wgmma as a permuted
shared-memory view (MN-major), so no layout costs a copy. The bias is added in fp32 before the one rounding.
Where the last wave of tiles would leave most SMs idle, two levers fill it. ``TAIL_SPLIT`` launches twice on
column slices: whole waves of tiles first, then the rest as one wave of half-width tiles. ``TAIL_K`` stays in one
launch: each tile of the last wave is cut along K into slices, one a program; each slice stores its fp32 partial and
counts itself in, and the last to arrive adds the slices in order and runs the epilogue.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (
    fence_async_shared,
    mbarrier,
    tma,
    warpgroup_mma,
    warpgroup_mma_wait,
)
from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

import kerntune as kt
from kerntune.ops import gemm as gemm_op

# Triton 3.6 names the TMA copies async_copy_global_to_shared / async_copy_shared_to_global; newer Triton
# async_load / async_store (the old names raise there). Same arguments either way.
tma_load = getattr(tma, "async_load", None) or tma.async_copy_global_to_shared
tma_store = getattr(tma, "async_store", None) or tma.async_copy_shared_to_global
# Triton 3.6's Gluon names the CTA barrier thread_barrier, newer Triton barrier. Inside a warp-specialized partition
# it syncs that partition's warps alone.
cta_barrier = getattr(gl, "barrier", None) or gl.thread_barrier

BLOCK_M = 128
BLOCK_K = 64
SMEM_LIMIT = 232448  # sm_90's opt-in shared memory per block


@gluon.jit
def tile_coords(tile, num_pid_m, num_pid_n, GROUP: gl.constexpr, RASTER_N: gl.constexpr):
    """Tile index -> (row tile, column tile): GROUP tiles along the minor axis share the major one, so a wave's
    operands stay in L2. RASTER_N walks columns within a group of column tiles instead of rows."""
    if RASTER_N:
        width = GROUP * num_pid_m
        first = (tile // width) * GROUP
        size = gl.minimum(num_pid_n - first, GROUP)
        pid_n = first + (tile % width) % size
        pid_m = (tile % width) // size
    else:
        width = GROUP * num_pid_n
        first = (tile // width) * GROUP
        size = gl.minimum(num_pid_m - first, GROUP)
        pid_m = first + (tile % width) % size
        pid_n = (tile % width) // size
    return pid_m, pid_n


@gluon.jit
def unit_work(unit, FULL, PARTS, k_tiles):
    """Unit index -> (tile, first K block, end K block). Units below FULL are whole tiles; from FULL on, each tile
    of the last wave is PARTS consecutive units, one K slice each. Branch-free: a unit past FULL has is_tail = 1."""
    is_tail = (unit >= FULL).to(gl.int32)
    tail = (unit - FULL) * is_tail
    part = tail % PARTS
    tile = unit + is_tail * (FULL + tail // PARTS - unit)
    k_lo = is_tail * (part * k_tiles // PARTS)
    k_hi = k_tiles + is_tail * ((part + 1) * k_tiles // PARTS - k_tiles)
    return tile, k_lo, k_hi


@gluon.jit
def finish_slice(
    acc, c_desc, c_smem, bias_ptr, ws_ptr, count_ptr, tail, PARTS, off_m, off_n, N,
    BM: gl.constexpr, BN: gl.constexpr, HAS_BIAS: gl.constexpr, EPI_SPLIT: gl.constexpr, layout: gl.constexpr,
):  # fmt: skip
    """A K slice of a last-wave tile: store its fp32 partial, then count it in (after every warp's stores, with
    release and acquire at GPU scope). The slice that arrives last adds the tile's partials in slice order, so the
    sum does not depend on which slice came last, sets the count back to zero for the next launch, and runs the
    epilogue. The slice's own accumulator is dead once stored: the sum is read back, which keeps one tile and
    one partial in registers, not two tiles and a partial."""
    group = tail // PARTS
    rows = gl.arange(0, BM, layout=gl.SliceLayout(1, layout))
    cols = gl.arange(0, BN, layout=gl.SliceLayout(0, layout))
    offs = gl.expand_dims(rows, 1) * BN + gl.expand_dims(cols, 0)
    gl.store(ws_ptr + tail * (BM * BN) + offs, acc)
    cta_barrier()  # every warp's partial is stored before the count says so
    arrived = gl.atomic_add(count_ptr + group, 1, sem="acq_rel", scope="gpu")
    if arrived == PARTS - 1:
        # .cg: the other slices' partials are read from L2, never from this SM's stale L1.
        first = ws_ptr + group * PARTS * (BM * BN)
        total = gl.load(first + offs, cache_modifier=".cg")
        for part in range(1, PARTS):
            total += gl.load(first + part * (BM * BN) + offs, cache_modifier=".cg")
        gl.atomic_xchg(count_ptr + group, 0, sem="relaxed", scope="gpu")
        epilogue(total, c_desc, c_smem, bias_ptr, off_m, off_n, N, BM, BN, HAS_BIAS, EPI_SPLIT, layout)


@gluon.jit
def load_partition(
    a_desc, b_desc, a_bufs, b_bufs, ready, empty, M, N, K, FULL, PARTS,
    BN: gl.constexpr, A_T: gl.constexpr, B_T: gl.constexpr, STAGES: gl.constexpr, GROUP: gl.constexpr,
    RASTER_N: gl.constexpr, TAIL_K: gl.constexpr,
):  # fmt: skip
    """The producer warp: for each of the program's units (a tile, or with TAIL_K a K slice of one), each K block:
    wait until the ring slot is free, then TMA-load A's and B's blocks into it, completing on the slot's ``ready``
    barrier."""
    BM: gl.constexpr = 128
    BK: gl.constexpr = 64
    num_pid_m = gl.cdiv(M, BM)
    num_pid_n = gl.cdiv(N, BN)
    k_tiles = gl.cdiv(K, BK)
    units = num_pid_m * num_pid_n
    if TAIL_K:
        units = FULL + (units - FULL) * PARTS
    it = 0
    for unit in range(gl.program_id(0), units, gl.num_programs(0)):
        tile = unit
        k_lo = 0
        k_hi = k_tiles
        if TAIL_K:
            tile, k_lo, k_hi = unit_work(unit, FULL, PARTS, k_tiles)
        pid_m, pid_n = tile_coords(tile, num_pid_m, num_pid_n, GROUP, RASTER_N)
        off_m = pid_m * BM
        off_n = pid_n * BN
        for kk in range(k_lo, k_hi):
            slot = it % STAGES
            # A fresh barrier counts as having completed the phase before phase 0: the first lap never waits.
            mbarrier.wait(empty.index(slot), ((it // STAGES) & 1) ^ 1)
            bar = ready.index(slot)
            mbarrier.expect(bar, a_desc.block_type.nbytes + b_desc.block_type.nbytes)
            k = kk * BK
            if A_T:
                tma_load(a_desc, [k, off_m], bar, a_bufs.index(slot))
            else:
                tma_load(a_desc, [off_m, k], bar, a_bufs.index(slot))
            if B_T:
                tma_load(b_desc, [off_n, k], bar, b_bufs.index(slot))
            else:
                tma_load(b_desc, [k, off_n], bar, b_bufs.index(slot))
            it += 1


@gluon.jit
def mma_partition(
    a_desc, b_desc, c_desc, bias_ptr, ws_ptr, count_ptr, a_bufs, b_bufs, c_bufs, ready, empty, turn, M, N, K,
    FULL, PARTS,
    BN: gl.constexpr, A_T: gl.constexpr, B_T: gl.constexpr, HAS_BIAS: gl.constexpr, STAGES: gl.constexpr,
    GROUP: gl.constexpr, RASTER_N: gl.constexpr, CONSUMER: gl.constexpr, CONSUMERS: gl.constexpr,
    WARPS: gl.constexpr, EPI_SPLIT: gl.constexpr, TAIL_K: gl.constexpr,
):  # fmt: skip
    """A consumer: its units are every CONSUMERS-th of the program's, from the CONSUMER-th. Per K block it waits
    for the slot, issues an async wgmma, keeps one in flight, and frees the slot of the one before. A K slice
    (TAIL_K) then goes through ``finish_slice``: only the slice that finishes its tile stores it. The epilogue adds
    the bias in fp32, rounds once, and stores the tile through shared memory with TMA stores: whole, or in two
    column halves through a half-size buffer (EPI_SPLIT=2), which leaves room for one more ring stage."""
    BM: gl.constexpr = 128
    BK: gl.constexpr = 64
    layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[WARPS, 1], instr_shape=[16, BN, 16])
    c_smem = c_bufs.index(CONSUMER)
    num_pid_m = gl.cdiv(M, BM)
    num_pid_n = gl.cdiv(N, BN)
    k_tiles = gl.cdiv(K, BK)
    start = gl.program_id(0)
    step = gl.num_programs(0)
    units = num_pid_m * num_pid_n
    if TAIL_K:
        units = FULL + (units - FULL) * PARTS
    local = 0  # this program's sequence number of the unit in hand (the producer's order)
    for unit in range(start + CONSUMER * step, units, CONSUMERS * step):
        tile = unit
        k_lo = 0
        k_hi = k_tiles
        if TAIL_K:
            tile, k_lo, k_hi = unit_work(unit, FULL, PARTS, k_tiles)
        pid_m, pid_n = tile_coords(tile, num_pid_m, num_pid_n, GROUP, RASTER_N)
        # Every unit before a slice is a whole tile (a slice is a program's last unit): the ring position holds.
        it = (local * CONSUMERS + CONSUMER) * k_tiles
        if CONSUMERS == 2:
            # Ping-pong turns: a consumer starts a main loop only once the other has finished the one before,
            # so neither runs a lap of the ring ahead (a barrier's parity names only the phase just before).
            if CONSUMER == 0:
                mbarrier.wait(turn.index(0), (local & 1) ^ 1)
            else:
                mbarrier.wait(turn.index(1), local & 1)
        acc = gl.zeros((BM, BN), gl.float32, layout)
        prev = 0
        for kk in range(k_lo, k_hi):
            slot = it % STAGES
            mbarrier.wait(ready.index(slot), (it // STAGES) & 1)
            a = a_bufs.index(slot)
            if A_T:
                a = a.permute((1, 0))
            b = b_bufs.index(slot)
            if B_T:
                b = b.permute((1, 0))
            acc = warpgroup_mma(a, b, acc, is_async=True)
            acc = warpgroup_mma_wait(1, deps=(acc,))
            # The wgmma before this one has completed: its slot goes back to the producer.
            mbarrier.arrive(empty.index(prev), count=1, pred=kk > k_lo)
            prev = slot
            it += 1
        acc = warpgroup_mma_wait(0, deps=(acc,))
        mbarrier.arrive(empty.index(prev), count=1)
        if CONSUMERS == 2:
            mbarrier.arrive(turn.index(1 - CONSUMER), count=1)  # the other consumer's main loop may start
        off_m = pid_m * BM
        off_n = pid_n * BN
        if TAIL_K:  # a constexpr test alone: without TAIL_K no slice code is compiled
            if unit >= FULL and PARTS > 1:
                finish_slice(acc, c_desc, c_smem, bias_ptr, ws_ptr, count_ptr, unit - FULL, PARTS, off_m, off_n, N,
                             BM, BN, HAS_BIAS, EPI_SPLIT, layout)  # fmt: skip
            else:
                epilogue(acc, c_desc, c_smem, bias_ptr, off_m, off_n, N, BM, BN, HAS_BIAS, EPI_SPLIT, layout)
        else:
            epilogue(acc, c_desc, c_smem, bias_ptr, off_m, off_n, N, BM, BN, HAS_BIAS, EPI_SPLIT, layout)
        local += 1  # noqa: SIM113 (Triton's AST has no enumerate over a strided range)
    tma.store_wait(0)


@gluon.jit
def epilogue(
    acc, c_desc, c_smem, bias_ptr, off_m, off_n, N,
    BM: gl.constexpr, BN: gl.constexpr, HAS_BIAS: gl.constexpr, EPI_SPLIT: gl.constexpr, layout: gl.constexpr,
):  # fmt: skip
    """Bias in fp32, one rounding, and the tile's TMA store through shared memory (whole, or in two halves)."""
    dtype: gl.constexpr = c_desc.dtype
    if HAS_BIAS:
        offs_n = off_n + gl.arange(0, BN, layout=gl.SliceLayout(0, layout))
        bias = gl.load(bias_ptr + offs_n, mask=offs_n < N, other=0.0)
        acc = acc + gl.expand_dims(bias.to(gl.float32), 0)
    if EPI_SPLIT == 2:
        # [BM, BN] -> [BM, 2, BN/2] -> [BM, BN/2, 2]: split's last axis gives the left and right halves.
        left, right = gl.split(gl.permute(gl.reshape(acc, [BM, 2, BN // 2]), (0, 2, 1)))
        tma.store_wait(0)  # the previous store must leave c_smem before it is overwritten
        c_smem.store(left.to(dtype))
        fence_async_shared()
        tma_store(c_desc, [off_m, off_n], c_smem)
        tma.store_wait(0)
        c_smem.store(right.to(dtype))
        fence_async_shared()
        tma_store(c_desc, [off_m, off_n + BN // 2], c_smem)
    else:
        tma.store_wait(0)  # the previous tile's store must leave c_smem before it is overwritten
        c_smem.store(acc.to(dtype))
        fence_async_shared()
        tma_store(c_desc, [off_m, off_n], c_smem)


# FULL and PARTS vary by shape, yet the binary does not depend on them: no JIT variant for their values.
@gluon.jit(do_not_specialize=["FULL", "PARTS"])
def gemm_ws_kernel(
    a_desc, b_desc, c_desc, bias_ptr, ws_ptr, count_ptr, M, N, K, FULL, PARTS,
    A_T: gl.constexpr, B_T: gl.constexpr, HAS_BIAS: gl.constexpr, STAGES: gl.constexpr, GROUP: gl.constexpr,
    RASTER_N: gl.constexpr, SCHEDULE: gl.constexpr, LOAD_REGS: gl.constexpr, MMA_REGS: gl.constexpr,
    EPI_SPLIT: gl.constexpr, TAIL_K: gl.constexpr,
):  # fmt: skip
    BN: gl.constexpr = c_desc.block_type.shape[1] * EPI_SPLIT
    dtype: gl.constexpr = a_desc.dtype
    # Triton's AST has no starred lists: the shapes are concatenated.
    a_bufs = gl.allocate_shared_memory(dtype, [STAGES] + a_desc.block_type.shape, a_desc.layout)  # noqa: RUF005
    b_bufs = gl.allocate_shared_memory(dtype, [STAGES] + b_desc.block_type.shape, b_desc.layout)  # noqa: RUF005
    # One C tile a consumer, allocated beside the ring.
    c_bufs = gl.allocate_shared_memory(dtype, [SCHEDULE + 1] + c_desc.block_type.shape, c_desc.layout)  # noqa: RUF005
    ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    turn = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(STAGES):
        mbarrier.init(ready.index(i), count=1)
        mbarrier.init(empty.index(i), count=1)
    for i in gl.static_range(2):
        mbarrier.init(turn.index(i), count=1)
    if SCHEDULE == 0:
        gl.warp_specialize(
            [
                (mma_partition, (a_desc, b_desc, c_desc, bias_ptr, ws_ptr, count_ptr, a_bufs, b_bufs, c_bufs, ready,
                                 empty, turn, M, N, K, FULL, PARTS, BN, A_T, B_T,
                                 HAS_BIAS, STAGES, GROUP, RASTER_N, 0, 1, 8, EPI_SPLIT, TAIL_K)),
                (load_partition, (a_desc, b_desc, a_bufs, b_bufs, ready, empty, M, N, K, FULL, PARTS, BN, A_T, B_T,
                                  STAGES, GROUP, RASTER_N, TAIL_K)),
            ],
            [1],
            [LOAD_REGS],
        )  # fmt: skip
    else:
        # The second consumer comes first among the workers so that it starts on a warp-group boundary (wgmma).
        gl.warp_specialize(
            [
                (mma_partition, (a_desc, b_desc, c_desc, bias_ptr, ws_ptr, count_ptr, a_bufs, b_bufs, c_bufs, ready,
                                 empty, turn, M, N, K, FULL, PARTS, BN, A_T, B_T,
                                 HAS_BIAS, STAGES, GROUP, RASTER_N, 0, 2, 4, EPI_SPLIT, TAIL_K)),
                (mma_partition, (a_desc, b_desc, c_desc, bias_ptr, ws_ptr, count_ptr, a_bufs, b_bufs, c_bufs, ready,
                                 empty, turn, M, N, K, FULL, PARTS, BN, A_T, B_T,
                                 HAS_BIAS, STAGES, GROUP, RASTER_N, 1, 2, 4, EPI_SPLIT, TAIL_K)),
                (load_partition, (a_desc, b_desc, a_bufs, b_bufs, ready, empty, M, N, K, FULL, PARTS, BN, A_T, B_T,
                                  STAGES, GROUP, RASTER_N, TAIL_K)),
            ],
            [4, 1],
            [MMA_REGS, LOAD_REGS],
        )  # fmt: skip


def _gl_dtype(t: torch.dtype) -> Any:
    return gl.bfloat16 if t == torch.bfloat16 else gl.float16


def _descriptors(
    a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, bn: int, split: int
) -> tuple[TensorDescriptor, TensorDescriptor, TensorDescriptor, bool, bool]:
    """TMA descriptors of A, B and C over their row-major storage; a transpose view is described as its
    row-major original, and the kernel permutes the shared-memory tile. C's block is 1/split of a tile."""
    dt = _gl_dtype(a.dtype)
    a_t, b_t = a.stride(0) == 1 and a.stride(1) != 1, b.stride(0) == 1 and b.stride(1) != 1
    a_store, a_block = (a.t(), [BLOCK_K, BLOCK_M]) if a_t else (a, [BLOCK_M, BLOCK_K])
    b_store, b_block = (b.t(), [bn, BLOCK_K]) if b_t else (b, [BLOCK_K, bn])
    c_block = [BLOCK_M, bn // split]
    return (
        TensorDescriptor.from_tensor(a_store, a_block, gl.NVMMASharedLayout.get_default_for(a_block, dt)),
        TensorDescriptor.from_tensor(b_store, b_block, gl.NVMMASharedLayout.get_default_for(b_block, dt)),
        TensorDescriptor.from_tensor(c, c_block, gl.NVMMASharedLayout.get_default_for(c_block, dt)),
        a_t,
        b_t,
    )


_SMS: dict[int, int] = {}


def _sm_count(device: torch.device) -> int | None:
    """The GPU's SM count, or None where there is no GPU (a cross-compile's capture)."""
    if device.type != "cuda":
        return None
    index = device.index if device.index is not None else torch.cuda.current_device()
    if index not in _SMS:
        _SMS[index] = torch.cuda.get_device_properties(index).multi_processor_count
    return _SMS[index]


def _programs(device: torch.device, tiles: int) -> int:
    """One program an SM (persistent), or one a tile where there is no GPU (a cross-compile's capture: the grid
    does not change the binary)."""
    sms = _sm_count(device)
    return tiles if sms is None else min(sms, tiles)


def tail_columns(m: int, n: int, bn: int, sms: int) -> int | None:
    """Where the last wave of 128×bn tiles is partial: the columns a first launch takes (whole tiles filling at
    most the full waves) so that the rest, as 128×(bn/2) tiles, fits one wave. None where that does not hold:
    the tiles fill their waves, there is under one wave, or the rest would outlast one wave of half tiles. Only
    bn = 256 splits: its half, 128, is a tile width of the space (tested); 64 is not."""
    m_tiles, tiles = triton.cdiv(m, BLOCK_M), triton.cdiv(m, BLOCK_M) * triton.cdiv(n, bn)
    waves = tiles // sms
    if waves == 0 or tiles % sms == 0 or bn != 256:
        return None
    first = waves * sms // m_tiles * bn
    if not 0 < first < n or m_tiles * triton.cdiv(n - first, bn // 2) > sms:
        return None
    return first


MAX_TAIL_PARTS = 8


def tail_parts(m: int, n: int, k: int, bn: int, sms: int) -> tuple[int, int, int]:
    """(FULL, REST, PARTS) of TAIL_K at 128×bn tiles on ``sms`` SMs: the FULL tiles of whole waves, then the REST
    of the last wave, each cut into PARTS K slices. PARTS is as many as keep each slice on its own SM, at most
    MAX_TAIL_PARTS and at most one a K block; 1 where the waves are whole or the rest too many to cut."""
    tiles = triton.cdiv(m, BLOCK_M) * triton.cdiv(n, bn)
    rest = tiles % sms
    if rest == 0:
        return tiles, 0, 1
    return tiles - rest, rest, max(1, min(sms // rest, MAX_TAIL_PARTS, triton.cdiv(k, BLOCK_K)))


def _launch(
    a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, bias: torch.Tensor | None, bn: int, meta: Mapping[str, Any]
) -> Any:
    m, k = a.shape
    n = b.shape[1]
    a_desc, b_desc, c_desc, a_t, b_t = _descriptors(a, b, c, bn, int(meta.get("EPI_SPLIT", 1)))
    units = tiles = triton.cdiv(m, BLOCK_M) * triton.cdiv(n, bn)
    full, parts, workspace, counters = 0, 1, c, c  # unread without TAIL_K
    if int(meta.get("TAIL_K", 0)):
        sms = _sm_count(a.device)
        # No GPU (a cross-compile's capture): any cut builds the same binary.
        full, rest, parts = tail_parts(m, n, k, bn, sms) if sms else (0, tiles, 2)
        units = full + rest * parts
        # The partials are the call's own scratch (freed after it, as any operator's); the counters are kept.
        workspace = torch.empty((max(rest * parts, 1), BLOCK_M, bn), dtype=torch.float32, device=a.device)
        counters = gemm_op.arrival_counters(max(rest, 1), a.device)
    pingpong = int(meta["SCHEDULE"]) == 1
    return gemm_ws_kernel[(_programs(a.device, units),)](
        a_desc, b_desc, c_desc, c if bias is None else bias, workspace, counters, m, n, k, full, parts,
        a_t, b_t, bias is not None, int(meta["STAGES"]), int(meta["GROUP"]), int(meta["RASTER_N"]),
        int(meta["SCHEDULE"]), int(meta["LOAD_REGS"]), int(meta["MMA_REGS"]), int(meta.get("EPI_SPLIT", 1)),
        int(meta.get("TAIL_K", 0)),
        num_warps=4 if pingpong else 8,
    )  # fmt: skip


def run_gemm(
    a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, bias: torch.Tensor | None, meta: Mapping[str, Any]
) -> Any:
    """C = A·B (+ bias) at config ``meta``; returns the compiled kernel (the first launch's). With TAIL_SPLIT=1,
    where ``tail_columns`` finds a split, two launches on column slices of B, C and the bias: the first fills whole
    waves of 128×BLOCK_N tiles, the second runs the rest as one wave of half-width tiles (the same kernel at
    BLOCK_N/2), instead of a last wave that leaves most SMs idle."""
    bn, sms = int(meta["BLOCK_N"]), _sm_count(a.device)
    first = tail_columns(a.shape[0], b.shape[1], bn, sms) if int(meta.get("TAIL_SPLIT", 0)) and sms else None
    if first is None:
        return _launch(a, b, c, bias, bn, meta)
    # Column slices keep TMA's alignment: ``first`` is a whole number of tiles (a multiple of 64 elements).
    kernel = _launch(a, b[:, :first], c[:, :first], None if bias is None else bias[:first], bn, meta)
    _launch(a, b[:, first:], c[:, first:], None if bias is None else bias[first:], bn // 2, meta)
    return kernel


def launch(fn: Any, args: dict[str, Any], meta: dict[str, Any]) -> Any:
    return run_gemm(args["a"], args["b"], args["c"], args.get("bias"), meta)


def compile_signature(
    layout: str, bias: int, config: Mapping[str, Any], dtype: str = "bfloat16"
) -> tuple[dict[str, str], dict[str, Any], dict[str, Any]]:
    """The signature, constexprs and options a launch at ``layout`` and ``config`` compiles with: what a
    cross-compile (``kerntune.backends.triton_cross``) needs to build this kernel with no GPU."""
    dt, short = _gl_dtype(getattr(torch, dtype)), {"bfloat16": "bf16", "float16": "fp16"}[dtype]
    bn, split = int(config["BLOCK_N"]), int(config.get("EPI_SPLIT", 1))
    blocks = {
        "a_desc": [BLOCK_K, BLOCK_M] if layout[0] == "T" else [BLOCK_M, BLOCK_K],
        "b_desc": [bn, BLOCK_K] if layout[1] == "T" else [BLOCK_K, bn],
        "c_desc": [BLOCK_M, bn // split],
    }
    signature = {
        name: f"tensordesc<{short}[{b[0]}, {b[1]}],{gl.NVMMASharedLayout.get_default_for(b, dt)!r}>"
        for name, b in blocks.items()
    }
    constexprs = {
        "A_T": layout[0] == "T", "B_T": layout[1] == "T", "HAS_BIAS": bool(bias), "STAGES": int(config["STAGES"]),
        "GROUP": int(config["GROUP"]), "RASTER_N": int(config["RASTER_N"]), "SCHEDULE": int(config["SCHEDULE"]),
        "LOAD_REGS": int(config["LOAD_REGS"]), "MMA_REGS": int(config["MMA_REGS"]),
        "EPI_SPLIT": int(config.get("EPI_SPLIT", 1)), "TAIL_K": int(config.get("TAIL_K", 0)),
    }  # fmt: skip
    tail_k = bool(constexprs["TAIL_K"])
    signature |= {"bias_ptr": f"*{short}", "ws_ptr": "*fp32" if tail_k else f"*{short}"}
    signature |= {"count_ptr": "*i32" if tail_k else f"*{short}", "M": "i32", "N": "i32", "K": "i32"}
    signature |= {"FULL": "i32", "PARTS": "i32"}
    signature |= dict.fromkeys(constexprs, "constexpr")
    return signature, constexprs, {"num_warps": 4 if int(config["SCHEDULE"]) == 1 else 8}


def smem_bytes(c: Mapping[str, Any]) -> int:
    """The ring, one C buffer per consumer (a tile, or half of one), and the barriers."""
    bn, consumers = int(c["BLOCK_N"]), 2 if int(c["SCHEDULE"]) == 1 else 1
    stages, split = int(c["STAGES"]), int(c.get("EPI_SPLIT", 1))
    return stages * (BLOCK_M + bn) * BLOCK_K * 2 + consumers * BLOCK_M * bn // split * 2 + (2 * stages + 2) * 8


def hopper(c: Mapping[str, Any], s: Mapping[str, Any], t: kt.Target | None) -> bool:
    """Capability: wgmma, TMA and warp specialization are sm_90 (Hopper) instructions."""
    return t is None or t.arch in ("sm_90", "sm_90a")


def tail_split_applies(c: Mapping[str, Any], s: Mapping[str, Any], t: kt.Target | None) -> bool:
    """TAIL_SPLIT=1 only where ``tail_columns`` splits at this shape on this device's SM count: elsewhere it would
    be the TAIL_SPLIT=0 config timed twice."""
    if not int(c.get("TAIL_SPLIT", 0)):
        return True
    return t is not None and tail_columns(int(s["M"]), int(s["N"]), int(c["BLOCK_N"]), t.compute_units) is not None


def tail_k_applies(c: Mapping[str, Any], s: Mapping[str, Any], t: kt.Target | None) -> bool:
    """TAIL_K=1 only where ``tail_parts`` cuts the last wave at this shape on this device's SM count: elsewhere it
    would be the TAIL_K=0 config with a workspace allocated for nothing."""
    if not int(c.get("TAIL_K", 0)):
        return True
    if t is None:
        return False
    return tail_parts(int(s["M"]), int(s["N"]), int(s["K"]), int(c["BLOCK_N"]), t.compute_units)[2] > 1


def served_run(
    op: str, shape: Mapping[str, Any], config: Mapping[str, Any], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> torch.Tensor:
    """Launch at ``config`` through the JIT; returns the output (the ``out`` given to a ``.out`` call)."""
    bias, a, b = args if op.startswith("aten::addmm") else (None, *args)
    c = kwargs.get("out") if kwargs else None
    if c is None:
        c = torch.empty((int(shape["M"]), int(shape["N"])), dtype=a.dtype, device=a.device)
    run_gemm(a, b, c, bias, config)
    return c


# (BLOCK_N, SCHEDULE, STAGES, EPI_SPLIT): whole tiles at 128x256 (3 stages) and 128x128 (4-6), a split epilogue
# buying 128x256 a fourth stage, and ping-pong at 4 stages or 5 with a split epilogue. The tail levers are in the
# space but not seeded: each applies at some shapes only, one parameter away from a seed.
SEEDS = ((256, 0, 3, 1), (256, 0, 4, 2), (128, 0, 4, 1), (128, 0, 5, 1), (128, 0, 6, 1), (128, 1, 4, 1), (128, 1, 5, 2))

problem = kt.Problem(
    name="gluon_gemm",
    kernel=kt.TritonKernel(fn=gemm_ws_kernel, grid=lambda meta: (1,), launch=launch),
    space=kt.Space(
        params={
            "BLOCK_N": [128, 256],
            "SCHEDULE": [0, 1],
            "STAGES": [2, 3, 4, 5, 6],
            "GROUP": [1, 4, 8, 16],
            "RASTER_N": [0, 1],
            "LOAD_REGS": [24, 40],
            "MMA_REGS": [232, 240],
            "EPI_SPLIT": [1, 2],
            "TAIL_SPLIT": [0, 1],
            "TAIL_K": [0, 1],
        },
        constraints=[
            kt.Constraint(lambda c: smem_bytes(c) <= SMEM_LIMIT, "ring and C tiles fit shared memory"),
            kt.Constraint(
                lambda c: int(c["SCHEDULE"]) == 0 or int(c["BLOCK_N"]) <= 128,
                "ping-pong's 4-warp consumer holds at most 128 accumulator registers a thread",
            ),
            kt.Constraint(lambda c: int(c["SCHEDULE"]) == 1 or int(c["MMA_REGS"]) == 232, "MMA_REGS only ping-pong"),
            kt.Constraint(lambda c, s: gemm_op.tma_aligned(s), "TMA: every row pitch a multiple of 16 bytes"),
            kt.Constraint(hopper, "warp-specialized wgmma needs sm_90"),
            kt.Constraint(tail_split_applies, "TAIL_SPLIT only where the last wave of tiles is split"),
            kt.Constraint(tail_k_applies, "TAIL_K only where the last wave of tiles is cut along K"),
            kt.Constraint(
                lambda c: not (int(c.get("TAIL_SPLIT", 0)) and int(c.get("TAIL_K", 0))), "one tail lever at a time"
            ),
        ],
        default={
            "BLOCK_N": 256,
            "SCHEDULE": 0,
            "STAGES": 3,
            "GROUP": 8,
            "RASTER_N": 0,
            "LOAD_REGS": 40,
            "MMA_REGS": 232,
            "EPI_SPLIT": 1,
            "TAIL_SPLIT": 0,
            "TAIL_K": 0,
        },
        seeds=[
            {"BLOCK_N": n, "SCHEDULE": sc, "STAGES": st, "GROUP": 8, "RASTER_N": 0, "LOAD_REGS": 40, "MMA_REGS": 232}
            | {"EPI_SPLIT": split, "TAIL_SPLIT": 0, "TAIL_K": 0}
            for n, sc, st, split in SEEDS
        ],
    ),
    shapes=[{"M": 4096, "N": 4096, "K": 4096, "layout": "NT", "bias": 0}],
    dtypes=("bfloat16", "float16"),
    make_inputs=gemm_op.make_inputs,
    reference=gemm_op.reference,
    outputs=("c",),
    cost=gemm_op.cost,
    baselines=[kt.Baseline("torch.matmul", kernel=kt.TorchCallable(gemm_op.library, "torch.matmul"))],
    serve=kt.Serve(ops=gemm_op.SERVED_OPS, shape=gemm_op.read_call, run=served_run, kernel="gemm_ws"),
)
