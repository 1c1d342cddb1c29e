"""bf16 matmul in Triton with grouped tile order (GROUP_M), split-K and a TMA (tensor-descriptor) variant,
tuned against torch (cuBLAS / hipBLASLt: ``torch.mm``, or ``torch.addmm`` with a bias, at the same layout), which
is timed and gated side by side in the same run.

C[M×N] = A[M×K] · B[K×N] (+ bias[N]), fp32 accumulation. The shape's ``layout`` names A then B: ``N`` read as
given (row-major), ``T`` the transpose of a row-major matrix; ``NT`` is what ``nn.Linear`` hands ``aten::mm``
(its weight, W.t()). ``bias`` = 1 adds a bias vector in the epilogue (``aten::addmm``). The spec serves those
operators (``serve``): ``kerntune run --table T.json -- python app.py`` runs a program's own GEMM calls on the
tuned kernel where the table has the call's key, on the library's elsewhere. SPLIT_K > 1 writes fp32 partial tiles
to a workspace, summed in a fixed order (deterministic) either by a second kernel or, with FUSED = 1, by the last
program of each tile to arrive (a per-tile counter: one launch, which decode shapes need). BLOCK_N 96, 160 or 192
is a wide tile, two power-of-two blocks sharing each A tile (``matmul_wide_kernel``, ``matmul_tma_wide_kernel``),
for tile counts that fill whole waves. TMA = 1 loads tiles through host-made tensor descriptors (Hopper and
newer), PERSISTENT = 1 walks the tiles with one program per multiprocessor, and GEMV = 1 (decode, M <= 8)
streams BLOCK_N rows of B's transpose (an ``nn.Linear`` weight's rows) BLOCK_K at a time on the vector units, a
reduction over K per output as Inductor writes a matrix-vector product.
On a CPU machine the interpreter checks correctness (use ``--dtype float16``: Triton's interpreter mishandles
bf16 loads) and no timing is claimed.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import torch
import triton
import triton.language as tl

import kerntune as kt


@triton.jit
def grouped_tile(tile_id, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr):
    """Grouped order: GROUP_M row-tiles share B's column tiles while those are in L2."""
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_in_group = GROUP_M * tl.cdiv(N, BLOCK_N)
    first_pid_m = (tile_id // num_pid_in_group) * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((tile_id % num_pid_in_group) % group_size_m)
    pid_n = (tile_id % num_pid_in_group) // group_size_m
    return pid_m, pid_n


@triton.jit
def batch_item(a_ptr, b_ptr, c_ptr, stride_ab, stride_bb, stride_cb):
    """The operands of the product this program's grid axis 2 names (strides 0 for one product)."""
    pid_b = tl.program_id(2)
    return a_ptr + pid_b * stride_ab, b_ptr + pid_b * stride_bb, c_ptr + pid_b * stride_cb


@triton.jit
def store_tile(c_ptr, bias_ptr, acc, offs_cm, offs_cn, M, N, stride_cm, stride_cn, HAS_BIAS: tl.constexpr):
    """acc (+ bias) to C at rows offs_cm and columns offs_cn, those past M or N left out."""
    if HAS_BIAS:
        acc += tl.load(bias_ptr + offs_cn, mask=offs_cn < N, other=0.0).to(tl.float32)[None, :]
    c_ptrs = c_ptr + offs_cm[:, None] * stride_cm + offs_cn[None, :] * stride_cn
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))


@triton.jit
def split_k_store(
    c_ptr,
    bias_ptr,
    ws_ptr,
    lock_ptr,
    acc,
    offs_cm,
    offs_cn,
    M,
    N,
    stride_cm,
    stride_cn,
    pid_k,
    SPLIT_K: tl.constexpr,
    FUSED: tl.constexpr,
    HAS_BIAS: tl.constexpr,
):
    """A split-K program's fp32 partial tile to the workspace's pid_k-th slice; with FUSED, the tile's last
    program to arrive sums the slices and writes C (this program's tile is grid axis 0's)."""
    mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    w_ptrs = ws_ptr + pid_k * M * N + offs_cm[:, None] * N + offs_cn[None, :]
    tl.store(w_ptrs, acc, mask=mask)
    if FUSED:
        # The last of a tile's SPLIT_K programs to finish sums the partials (in a fixed order: the result
        # is deterministic) and writes C: no second kernel launch. Every thread's partial is stored before
        # the barrier; the counter's acq_rel atomic publishes them to, and acquires them for, the last one.
        tl.debug_barrier()
        arrived = tl.atomic_add(lock_ptr + tl.program_id(0), 1, sem="acq_rel")
        if arrived == SPLIT_K - 1:
            total = tl.zeros_like(acc)
            for s in range(SPLIT_K):
                total += tl.load(
                    ws_ptr + s * M * N + offs_cm[:, None] * N + offs_cn[None, :], mask=mask, cache_modifier=".cg"
                )
            store_tile(c_ptr, bias_ptr, total, offs_cm, offs_cn, M, N, stride_cm, stride_cn, HAS_BIAS)
            tl.atomic_xchg(lock_ptr + tl.program_id(0), 0)  # ready for the next launch


@triton.jit
def matmul_kernel(
    a_ptr,
    b_ptr,
    c_ptr,
    bias_ptr,
    ws_ptr,
    lock_ptr,
    M,
    N,
    K,
    stride_am,
    stride_ak,
    stride_bk,
    stride_bn,
    stride_cm,
    stride_cn,
    stride_ab,
    stride_bb,
    stride_cb,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
    SPLIT_K: tl.constexpr,
    FUSED: tl.constexpr,
    HAS_BIAS: tl.constexpr,
):
    # Grid axis 2 walks a batch (examples/triton_bmm: stride_ab/bb/cb between its matrices; 0 for one product).
    pid_m, pid_n = grouped_tile(tl.program_id(0), M, N, BLOCK_M, BLOCK_N, GROUP_M)
    pid_k = tl.program_id(1)
    a_ptr, b_ptr, c_ptr = batch_item(a_ptr, b_ptr, c_ptr, stride_ab, stride_bb, stride_cb)
    offs_am = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    offs_bn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    k_span = K // SPLIT_K
    offs_k = pid_k * k_span + tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for _ in range(0, k_span // BLOCK_K):
        a = tl.load(a_ptrs)
        b = tl.load(b_ptrs)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    if SPLIT_K == 1:
        store_tile(c_ptr, bias_ptr, acc, offs_cm, offs_cn, M, N, stride_cm, stride_cn, HAS_BIAS)
    else:
        split_k_store(
            c_ptr,
            bias_ptr,
            ws_ptr,
            lock_ptr,
            acc,
            offs_cm,
            offs_cn,
            M,
            N,
            stride_cm,
            stride_cn,
            pid_k,
            SPLIT_K,
            FUSED,
            HAS_BIAS,
        )


@triton.jit
def matmul_tma_kernel(
    a_desc,
    b_desc,
    c_desc,
    M,
    N,
    K,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
    B_T: tl.constexpr,
):
    # B_T: b_desc describes the row-major [N, K] matrix whose transpose is B (an nn.Linear weight).
    pid_m, pid_n = grouped_tile(tl.program_id(0), M, N, BLOCK_M, BLOCK_N, GROUP_M)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = a_desc.load([pid_m * BLOCK_M, k * BLOCK_K])
        if B_T:
            acc = tl.dot(a, b_desc.load([pid_n * BLOCK_N, k * BLOCK_K]).T, acc)
        else:
            acc = tl.dot(a, b_desc.load([k * BLOCK_K, pid_n * BLOCK_N]), acc)
    c_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], acc.to(c_desc.dtype))


@triton.jit
def matmul_wide_kernel(
    a_ptr,
    b_ptr,
    c_ptr,
    bias_ptr,
    M,
    N,
    K,
    stride_am,
    stride_ak,
    stride_bk,
    stride_bn,
    stride_cm,
    stride_cn,
    stride_ab,
    stride_bb,
    stride_cb,
    BLOCK_M: tl.constexpr,
    HEAD_N: tl.constexpr,
    TAIL_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
    HAS_BIAS: tl.constexpr,
):
    # A tile HEAD_N + TAIL_N columns wide (96 = 64 + 32, 160 = 128 + 32, 192 = 128 + 64): a Triton block's sides
    # are powers of two, so the tile is two blocks, each with its own accumulator and B strip, sharing the A tile
    # of each K step. Why such widths: at the medium shapes the power-of-two tiles' count leaves a partial last
    # wave (e.g. 320 tiles of 64x128 at 256x10240x8192: three to some SMs, two to the rest), and these counts fill
    # the waves (64x160: 256 tiles, 0.97 of two full waves).
    pid_m, pid_n = grouped_tile(tl.program_id(0), M, N, BLOCK_M, HEAD_N + TAIL_N, GROUP_M)
    a_ptr, b_ptr, c_ptr = batch_item(a_ptr, b_ptr, c_ptr, stride_ab, stride_bb, stride_cb)
    n0 = pid_n * (HEAD_N + TAIL_N)
    offs_am = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    offs_head = (n0 + tl.arange(0, HEAD_N)) % N
    offs_tail = (n0 + HEAD_N + tl.arange(0, TAIL_N)) % N
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak
    head_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_head[None, :] * stride_bn
    tail_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_tail[None, :] * stride_bn
    head = tl.zeros((BLOCK_M, HEAD_N), dtype=tl.float32)
    tail = tl.zeros((BLOCK_M, TAIL_N), dtype=tl.float32)
    for _ in range(0, K // BLOCK_K):
        a = tl.load(a_ptrs)
        head = tl.dot(a, tl.load(head_ptrs), head)
        tail = tl.dot(a, tl.load(tail_ptrs), tail)
        a_ptrs += BLOCK_K * stride_ak
        head_ptrs += BLOCK_K * stride_bk
        tail_ptrs += BLOCK_K * stride_bk
    offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    store_tile(c_ptr, bias_ptr, head, offs_cm, n0 + tl.arange(0, HEAD_N), M, N, stride_cm, stride_cn, HAS_BIAS)
    store_tile(c_ptr, bias_ptr, tail, offs_cm, n0 + HEAD_N + tl.arange(0, TAIL_N), M, N, stride_cm, stride_cn, HAS_BIAS)


@triton.jit
def matmul_tma_wide_kernel(
    a_desc,
    b_desc,
    tail_b_desc,
    c_desc,
    tail_c_desc,
    M,
    N,
    K,
    BLOCK_M: tl.constexpr,
    HEAD_N: tl.constexpr,
    TAIL_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
    B_T: tl.constexpr,
):
    # matmul_wide_kernel's two-block tile on TMA loads: a descriptor per block width for B and for C. Loads past
    # N (a last tile's tail, or part of it) are zero-filled by the copy engine and stores past N clipped by it.
    pid_m, pid_n = grouped_tile(tl.program_id(0), M, N, BLOCK_M, HEAD_N + TAIL_N, GROUP_M)
    n0 = pid_n * (HEAD_N + TAIL_N)
    head = tl.zeros((BLOCK_M, HEAD_N), dtype=tl.float32)
    tail = tl.zeros((BLOCK_M, TAIL_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = a_desc.load([pid_m * BLOCK_M, k * BLOCK_K])
        if B_T:
            head = tl.dot(a, b_desc.load([n0, k * BLOCK_K]).T, head)
            tail = tl.dot(a, tail_b_desc.load([n0 + HEAD_N, k * BLOCK_K]).T, tail)
        else:
            head = tl.dot(a, b_desc.load([k * BLOCK_K, n0]), head)
            tail = tl.dot(a, tail_b_desc.load([k * BLOCK_K, n0 + HEAD_N]), tail)
    c_desc.store([pid_m * BLOCK_M, n0], head.to(c_desc.dtype))
    tail_c_desc.store([pid_m * BLOCK_M, n0 + HEAD_N], tail.to(tail_c_desc.dtype))


@triton.jit
def matmul_tma_split_kernel(
    a_desc,
    b_desc,
    c_ptr,
    ws_ptr,
    lock_ptr,
    M,
    N,
    K,
    stride_cm,
    stride_cn,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
    SPLIT_K: tl.constexpr,
    B_T: tl.constexpr,
):
    # Fused split-K on TMA loads: program (tile, pid_k) runs the pid_k-th of SPLIT_K equal spans of the tile's K
    # steps through the descriptors, and split_k_store sums the partials as the plain kernel's fused split-K does
    # (one launch, a fixed order). Why: the TMA tiles lead at the skinny shapes, where the tiles alone leave SMs
    # idle, and split-K, the cure there, ran on pointer loads only.
    pid_m, pid_n = grouped_tile(tl.program_id(0), M, N, BLOCK_M, BLOCK_N, GROUP_M)
    pid_k = tl.program_id(1)
    span = K // (BLOCK_K * SPLIT_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(pid_k * span, (pid_k + 1) * span):
        a = a_desc.load([pid_m * BLOCK_M, k * BLOCK_K])
        if B_T:
            acc = tl.dot(a, b_desc.load([pid_n * BLOCK_N, k * BLOCK_K]).T, acc)
        else:
            acc = tl.dot(a, b_desc.load([k * BLOCK_K, pid_n * BLOCK_N]), acc)
    offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    split_k_store(
        c_ptr, c_ptr, ws_ptr, lock_ptr, acc, offs_cm, offs_cn, M, N, stride_cm, stride_cn, pid_k, SPLIT_K, 1, False
    )


@triton.jit
def matmul_tma_persistent_kernel(
    a_desc,
    b_desc,
    c_desc,
    M,
    N,
    K,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
    NUM_SMS: tl.constexpr,
    B_T: tl.constexpr,
):
    # One program per multiprocessor walks the output tiles; flatten lets the pipeliner overlap the next
    # tile's loads with this tile's epilogue.
    k_tiles = tl.cdiv(K, BLOCK_K)
    num_tiles = tl.cdiv(M, BLOCK_M) * tl.cdiv(N, BLOCK_N)
    for tile_id in tl.range(tl.program_id(0), num_tiles, NUM_SMS, flatten=True):
        pid_m, pid_n = grouped_tile(tile_id, M, N, BLOCK_M, BLOCK_N, GROUP_M)
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k in range(k_tiles):
            a = a_desc.load([pid_m * BLOCK_M, k * BLOCK_K])
            if B_T:
                acc = tl.dot(a, b_desc.load([pid_n * BLOCK_N, k * BLOCK_K]).T, acc)
            else:
                acc = tl.dot(a, b_desc.load([k * BLOCK_K, pid_n * BLOCK_N]), acc)
        c_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], acc.to(c_desc.dtype))


@triton.jit
def splitk_reduce_kernel(
    ws_ptr, c_ptr, bias_ptr, MN, N, SPLIT_K: tl.constexpr, BLOCK: tl.constexpr, HAS_BIAS: tl.constexpr
):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < MN
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for s in range(SPLIT_K):
        acc += tl.load(ws_ptr + s * MN + offs, mask=mask, other=0.0)
    if HAS_BIAS:
        acc += tl.load(bias_ptr + offs % N, mask=mask, other=0.0).to(tl.float32)
    tl.store(c_ptr + offs, acc.to(c_ptr.dtype.element_ty), mask=mask)


_workspaces: dict[tuple[Any, ...], tuple[torch.Tensor, torch.Tensor]] = {}
_sms: dict[Any, int] = {}
_counters: dict[tuple[int, int], torch.Tensor] = {}
_kept_counters: list[torch.Tensor] = []


@triton.jit
def gemv_kernel(
    a_ptr,
    b_ptr,
    c_ptr,
    bias_ptr,
    M: tl.constexpr,
    N: tl.constexpr,
    K: tl.constexpr,
    stride_am: tl.constexpr,
    stride_ak: tl.constexpr,
    stride_bk: tl.constexpr,
    stride_bn: tl.constexpr,
    stride_cm: tl.constexpr,
    stride_cn: tl.constexpr,
    ROWS: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    HAS_BIAS: tl.constexpr,
):
    # GEMV = 1, decode (M <= 8): bandwidth-bound, and an MMA tile would idle 15 of its 16 rows. Each program
    # owns BLOCK_N outputs per row and streams their BLOCK_N columns of B (for NT, contiguous rows of the weight)
    # in BLOCK_K-long strips, multiplying in fp32 and summing per thread across the K loop; one reduction across
    # threads at the end (one per step would cost a shared-memory round trip and a barrier each time). Long
    # strips and few columns per program give many programs, each with many bytes in flight: what keeps HBM busy.
    # The pointers are built in three dimensions (rows, outputs, K) so that both loads land in the layout of the
    # product: a product of 2-D loads broadcast to 3-D made the compiler convert layouts through shared memory,
    # four barriers per step (seen in the PTX for sm_90), where Inductor's one-row reduction has none.
    # The shape and strides are constexprs, as Inductor writes them into its kernel: a binary per shape (a served
    # key is one shape), whose K loop the compiler unrolls whole (sm_90 SASS at 1x6144x4096, 1 x 1024 on 8 warps:
    # 160 instructions and no loop, against 304 with one; benchmarks/gemm/k_loop_sass.py). Timed on the H200 at
    # 1x6144x4096 (2026-12-05, benchmarks/gemm/gemm_forms.py, both kernels in one run): the tuned winner 0.802 -> 0.725x
    # cuBLAS's time. K alone as a constexpr in the MMA kernel shortened its loop 15-23% in SASS but did not pay:
    # of the two winners that run that kernel, 32x10240x8192 stayed within noise (0.869 -> 0.871) and
    # 128x4096x4096 got slower (1.184 -> 1.210), so K stays a run-time argument there.
    offs_n = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    n3 = offs_n[None, :, None]
    m3 = tl.arange(0, ROWS)[:, None, None]
    partial = tl.zeros((ROWS, BLOCK_N, BLOCK_K), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k3 = (k0 + tl.arange(0, BLOCK_K))[None, None, :]
        # the weight is read once: evict it first, keep the activations (read by every program) in L2
        b = tl.load(b_ptr + k3 * stride_bk + n3 * stride_bn, mask=n3 < N, other=0.0, eviction_policy="evict_first").to(
            tl.float32
        )
        # the activations' pointers span all three dimensions too (each thread loads the K strip its outputs
        # need; repeats hit L1): broadcast from (rows, 1, K), they were loaded once and moved through shared memory
        a = tl.load(
            a_ptr + m3 * stride_am + k3 * stride_ak + n3 * 0,
            mask=(m3 < M) & (n3 < N),
            other=0.0,
            eviction_policy="evict_last",
        ).to(tl.float32)
        partial += a * b
    acc = tl.sum(partial, axis=2)
    if HAS_BIAS:
        acc += tl.load(bias_ptr + offs_n, mask=offs_n < N, other=0.0).to(tl.float32)[None, :]
    offs_m = tl.arange(0, ROWS)
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


def _workspace(
    split_k: int, m: int, n: int, tiles: int, device: torch.device, per_call: bool
) -> tuple[torch.Tensor, torch.Tensor]:
    # Tuning: allocated at the first (compile) launch and reused, since an allocation inside the timed region
    # would be host work the kernel does not do in a program that keeps its workspace. The per-tile arrival
    # counters start at zero and the fused reduction leaves them at zero. ``per_call`` (serving a program): the
    # partials from the caching allocator on every call and freed after it, as any operator's scratch is. A
    # workspace kept across calls would outlive the call inside torch.compile's CUDA-graph memory pool, which then
    # refuses to record ("live storage ... not accounted for"); a freed one is the graph pool's to keep.
    if per_call:
        return (torch.empty((split_k, m, n), dtype=torch.float32, device=device), _arrival_counters(tiles, device))
    key = (split_k, m, n, tiles, str(device))
    if key not in _workspaces:
        _workspaces.clear()
        _workspaces[key] = (
            torch.empty((split_k, m, n), dtype=torch.float32, device=device),
            torch.zeros(tiles, dtype=torch.int32, device=device),
        )
    return _workspaces[key]


def _arrival_counters(tiles: int, device: torch.device) -> torch.Tensor:
    """Fused split-K's per-tile arrival counters for a served call. Zeroing them on every call is a memset
    launched beside every GEMM (a node of its own in a CUDA graph), yet the fused reduction leaves them at zero:
    one buffer per device and stream, zeroed once, serves every later call on that stream, whose launches run in
    order. It is made on a side stream, so torch.compile's CUDA-graph pool (which takes the current stream's
    allocations while it warms up or records) never holds it, and kept for the life of the process (a recorded
    graph holds its address). While a stream is being captured none is made: that call zeroes its own."""
    if device.type != "cuda":  # the interpreter (CPU tests): nothing is kept
        return torch.zeros(tiles, dtype=torch.int32, device=device)
    stream = torch.cuda.current_stream(device)
    key = (stream.device_index, stream.cuda_stream)
    found = _counters.get(key)
    if found is not None and found.numel() >= tiles:
        return found
    if torch.cuda.is_current_stream_capturing():
        return torch.zeros(tiles, dtype=torch.int32, device=device)
    side = torch.cuda.Stream(device)
    side.wait_stream(stream)
    with torch.cuda.stream(side):
        made = torch.zeros(max(tiles, 4096), dtype=torch.int32, device=device)
    side.synchronize()
    _kept_counters.append(made)
    _counters[key] = made
    return made


def _multiprocessors(device: torch.device) -> int:
    """The device's multiprocessor count (a persistent grid's size). Off a GPU (the interpreter, ``kerntune
    inspect``'s cross-compile) a count of 4 stands in: it sizes the grid and constexpr only, not what a program
    compiles to, and a small count makes the interpreter cut tiles across programs."""
    if device.type != "cuda":
        return 4
    if device not in _sms:  # a property query per launch is host time the kernel does not need
        _sms[device] = torch.cuda.get_device_properties(device).multi_processor_count
    return _sms[device]


def _tma_call(
    a: torch.Tensor,
    b: torch.Tensor,
    c: torch.Tensor,
    m: int,
    n: int,
    k: int,
    meta: dict[str, Any],
    per_call: bool = False,
) -> tuple[Any, tuple[Any, ...], tuple[int, ...]]:
    """The TMA kernel for ``meta``, its arguments in signature order (descriptors made for these tensors) and
    its grid. A row-major, no bias (the constraints keep TMA to those); B row-major or transposed. A split-K
    config's workspace is ``_workspace``'s (``per_call``: a served call's)."""
    from triton.tools.tensor_descriptor import TensorDescriptor

    bm, bn, bk = meta["BLOCK_M"], meta["BLOCK_N"], meta["BLOCK_K"]
    tiles = triton.cdiv(m, bm) * triton.cdiv(n, bn)
    b_t = b.stride(0) == 1 and b.stride(1) != 1

    def b_and_c(width: int) -> tuple[Any, Any]:
        return (
            TensorDescriptor.from_tensor(b.t(), [width, bk]) if b_t else TensorDescriptor.from_tensor(b, [bk, width]),
            TensorDescriptor.from_tensor(c, [bm, width]),
        )

    a_desc = TensorDescriptor.from_tensor(a, [bm, bk])
    if bn in WIDE_N:
        head, tail = wide_blocks(bn)
        (b_head, c_head), (b_tail, c_tail) = b_and_c(head), b_and_c(tail)
        return (
            matmul_tma_wide_kernel,
            (a_desc, b_head, b_tail, c_head, c_tail, m, n, k, bm, head, tail, bk, meta["GROUP_M"], b_t),
            (tiles,),
        )
    b_desc, c_desc = b_and_c(bn)
    if meta["SPLIT_K"] > 1:
        split_k = meta["SPLIT_K"]
        ws, locks = _workspace(split_k, m, n, tiles, a.device, per_call)
        return (
            matmul_tma_split_kernel,
            (
                a_desc,
                b_desc,
                c,
                ws,
                locks,
                m,
                n,
                k,
                c.stride(0),
                c.stride(1),
                bm,
                bn,
                bk,
                meta["GROUP_M"],
                split_k,
                b_t,
            ),
            (tiles, split_k),
        )
    descriptors = (a_desc, b_desc, c_desc)
    if meta["PERSISTENT"]:
        sms = _multiprocessors(a.device)
        return (
            matmul_tma_persistent_kernel,
            (*descriptors, m, n, k, bm, bn, bk, meta["GROUP_M"], sms, b_t),
            (min(sms, tiles),),
        )
    return matmul_tma_kernel, (*descriptors, m, n, k, bm, bn, bk, meta["GROUP_M"], b_t), (tiles,)


def _batch_view(
    a: torch.Tensor, b: torch.Tensor, c: torch.Tensor
) -> tuple[tuple[int, int, int], torch.Tensor, torch.Tensor, torch.Tensor]:
    """The strides between a batch's matrices (0, 0, 0 for one product) and its first matrices (one product: the
    operands themselves), whose strides the kernels take. A batch runs one product per grid row of axis 2 (split-K
    is for single products only)."""
    if a.dim() == 3:
        return (a.stride(0), b.stride(0), c.stride(0)), a[0], b[0], c[0]
    return (0, 0, 0), a, b, c


def _plain_args(
    a: torch.Tensor,
    b: torch.Tensor,
    c: torch.Tensor,
    bias: torch.Tensor | None,
    ws: torch.Tensor,
    locks: torch.Tensor,
    m: int,
    n: int,
    k: int,
    meta: dict[str, Any],
) -> tuple[Any, ...]:
    """matmul_kernel's arguments in signature order, constexprs included."""
    strides, a_2d, b_2d, c_2d = _batch_view(a, b, c)
    return (
        a,
        b,
        c,
        c if bias is None else bias,
        ws,
        locks,
        m,
        n,
        k,
        a_2d.stride(0),
        a_2d.stride(1),
        b_2d.stride(0),
        b_2d.stride(1),
        c_2d.stride(0),
        c_2d.stride(1),
        *strides,
        meta["BLOCK_M"],
        meta["BLOCK_N"],
        meta["BLOCK_K"],
        meta["GROUP_M"],
        meta["SPLIT_K"],
        meta["FUSED"],
        bias is not None,
    )


WIDE_N = (96, 160, 192)
"""The BLOCK_N values that are not powers of two: tiles of two blocks (``wide_blocks``), for the counts of tiles
that fill whole waves at the medium shapes."""


def wide_blocks(width: int) -> tuple[int, int]:
    """A wide tile's two power-of-two blocks, the larger first: 96 -> (64, 32), 160 -> (128, 32), 192 -> (128, 64)."""
    head = 1 << (width.bit_length() - 1)
    return head, width - head


def _wide_args(
    a: torch.Tensor,
    b: torch.Tensor,
    c: torch.Tensor,
    bias: torch.Tensor | None,
    m: int,
    n: int,
    k: int,
    meta: dict[str, Any],
) -> tuple[Any, ...]:
    """matmul_wide_kernel's arguments in signature order, constexprs included."""
    strides, a_2d, b_2d, c_2d = _batch_view(a, b, c)
    return (
        a,
        b,
        c,
        c if bias is None else bias,
        m,
        n,
        k,
        a_2d.stride(0),
        a_2d.stride(1),
        b_2d.stride(0),
        b_2d.stride(1),
        c_2d.stride(0),
        c_2d.stride(1),
        *strides,
        meta["BLOCK_M"],
        *wide_blocks(meta["BLOCK_N"]),
        meta["BLOCK_K"],
        meta["GROUP_M"],
        bias is not None,
    )


def _gemv_args(
    a: torch.Tensor,
    b: torch.Tensor,
    c: torch.Tensor,
    bias: torch.Tensor | None,
    m: int,
    n: int,
    k: int,
    meta: dict[str, Any],
) -> tuple[Any, ...]:
    """gemv_kernel's arguments in signature order, constexprs included."""
    return (
        a,
        b,
        c,
        c if bias is None else bias,
        m,
        n,
        k,
        a.stride(0),
        a.stride(1),
        b.stride(0),
        b.stride(1),
        c.stride(0),
        c.stride(1),
        triton.next_power_of_2(m),
        meta["BLOCK_N"],
        meta["BLOCK_K"],
        bias is not None,
    )


def launch(fn: Any, args: dict[str, Any], meta: dict[str, Any]) -> Any:
    a, b, c, bias = args["a"], args["b"], args["c"], args.get("bias")
    m, n, k = args["M"], args["N"], args["K"]
    bm, bn, split_k = meta["BLOCK_M"], meta["BLOCK_N"], meta["SPLIT_K"]
    options = {"num_warps": meta["num_warps"], "num_stages": meta["num_stages"]}
    if meta.get("GEMV"):  # (tables written before GEMV existed have no such key)
        return gemv_kernel[(triton.cdiv(n, bn),)](*_gemv_args(a, b, c, bias, m, n, k, meta), **options)
    if meta["TMA"]:
        kernel, call, grid = _tma_call(a, b, c, m, n, k, meta, bool(args.get("per_call")))
        return kernel[grid](*call, **options)
    tiles = triton.cdiv(m, bm) * triton.cdiv(n, bn)
    batch = a.shape[0] if a.dim() == 3 else 1
    if bn in WIDE_N:
        return matmul_wide_kernel[(tiles, 1, batch)](*_wide_args(a, b, c, bias, m, n, k, meta), **options)
    ws, locks = _workspace(split_k, m, n, tiles, a.device, bool(args.get("per_call"))) if split_k > 1 else (c, c)
    compiled = fn[(tiles, split_k, batch)](*_plain_args(a, b, c, bias, ws, locks, m, n, k, meta), **options)
    if split_k > 1 and not meta["FUSED"]:
        splitk_reduce_kernel[(triton.cdiv(m * n, 1024),)](
            ws,
            c,
            c if bias is None else bias,
            m * n,
            n,
            SPLIT_K=split_k,
            BLOCK=1024,
            HAS_BIAS=bias is not None,
            num_warps=4,
        )
    return compiled


DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16}


LAYOUTS = ("NN", "NT", "TN", "TT")


def input_generator(seed: int) -> torch.Generator:
    """The seeded generator inputs are drawn from, on the device the kernel runs on. Drawing a large shape's
    operands on the host was the gate's main cost on the H200 (4096×28672×8192: 2.4 s of gate for its two seeds,
    most of it the CPU's normal sampler and the host-to-device copy); on the GPU it takes milliseconds. The
    interpreter (CPU machines, ``TRITON_INTERPRET=1``) takes host tensors."""
    on_gpu = torch.cuda.is_available() and os.environ.get("TRITON_INTERPRET", "0") != "1"
    return torch.Generator(device="cuda" if on_gpu else "cpu").manual_seed(seed)


def _randn(size: tuple[int, ...], gen: torch.Generator) -> torch.Tensor:
    return torch.randn(size, generator=gen, device=gen.device)


def _operand(rows: int, cols: int, transposed: bool, gen: torch.Generator, t: torch.dtype) -> torch.Tensor:
    """A rows×cols operand, or the transpose view of a row-major cols×rows matrix (strides (1, rows))."""
    if transposed:
        return _randn((cols, rows), gen).to(t).t()
    return _randn((rows, cols), gen).to(t)


def make_inputs(shape: dict[str, Any], dtype: str, seed: int) -> dict[str, Any]:
    gen = input_generator(seed)
    m, n, k = int(shape["M"]), int(shape["N"]), int(shape["K"])
    layout, t = str(shape.get("layout", "NN")), DTYPES[dtype]
    if layout not in LAYOUTS:
        raise ValueError(f"layout {layout!r}: one of {', '.join(LAYOUTS)}")
    return {
        "a": _operand(m, k, layout[0] == "T", gen, t),
        "b": _operand(k, n, layout[1] == "T", gen, t),
        "c": torch.empty((m, n), dtype=t, device=gen.device),
        "bias": _randn((n,), gen).to(t) if int(shape.get("bias", 0)) else None,
        "M": m,
        "N": n,
        "K": k,
    }


def reference(args: dict[str, Any], shape: dict[str, Any]) -> torch.Tensor:
    out = args["a"].double() @ args["b"].double()
    return out + args["bias"].double() if args.get("bias") is not None else out


def torch_matmul(args: dict[str, Any], meta: dict[str, Any]) -> Any:
    """The library at the same layout: ``torch.mm`` (``aten::mm``), or ``torch.addmm`` with a bias."""
    if args.get("bias") is not None:
        return torch.addmm(args["bias"], args["a"], args["b"], out=args["c"])
    return torch.mm(args["a"], args["b"], out=args["c"])


SMEM_BYTES = {"sm_80": 166912, "sm_86": 101376, "sm_89": 101376, "sm_90": 232448, "sm_100": 232448}


def smem_fits(c: dict[str, Any], s: dict[str, Any], t: kt.Target | None) -> bool:
    """Capability: the pipelined A and B tiles (and a persistent epilogue's C tile) must fit shared memory (the
    GEMV kernel keeps its strips in registers)."""
    if c.get("GEMV"):  # (configs written before GEMV existed have no such key)
        return True
    need = (c["BLOCK_M"] * c["BLOCK_K"] + c["BLOCK_K"] * c["BLOCK_N"]) * 2 * c["num_stages"]
    if c["PERSISTENT"]:
        need += c["BLOCK_M"] * c["BLOCK_N"] * 2  # the epilogue stages C in shared memory for the TMA store
    return t is None or need <= SMEM_BYTES.get(t.arch, 232448)


def splitk_when_underfilled(c: dict[str, Any], s: dict[str, Any], t: kt.Target | None) -> bool:
    """Split K only when the output tiles alone cannot fill the device."""
    if c["SPLIT_K"] == 1:
        return True
    tiles = triton.cdiv(s["M"], c["BLOCK_M"]) * triton.cdiv(s["N"], c["BLOCK_N"])
    return tiles < (t.compute_units if t else 132)


def group_matters(c: dict[str, Any], s: dict[str, Any], t: kt.Target | None) -> bool:
    """GROUP_M orders row tiles: with a single row of tiles every value runs the same schedule."""
    return c["GROUP_M"] == 8 or triton.cdiv(s["M"], c["BLOCK_M"]) > 1


def tma_supported(c: dict[str, Any], s: dict[str, Any], t: kt.Target | None) -> bool:
    """Capability: TMA descriptors exist on sm_90 and newer only, and take here no bias and A row-major (B may be
    either: a transposed B is described as the row-major matrix it transposes); split-K only fused and not
    persistent (matmul_tma_split_kernel)."""
    if not c["TMA"]:
        return True
    plain = str(s.get("layout", "NN"))[0] == "N" and not int(s.get("bias", 0))
    split = c["SPLIT_K"] == 1 or (c["FUSED"] and not c["PERSISTENT"])  # split-K only as one fused launch
    return plain and split and t is not None and t.arch.startswith(("sm_9", "sm_10", "sm_12"))


def wide_tile(c: dict[str, Any], s: dict[str, Any], t: kt.Target | None) -> bool:
    """A BLOCK_N of WIDE_N runs matmul_wide_kernel or matmul_tma_wide_kernel: one launch of data-parallel tiles
    (no split-K, not persistent), BLOCK_M 64 or more and BLOCK_K 64 or 128 (the medium shapes' tiles), and only
    where the wide tiles' count fills the waves better than the power-of-two width below it: elsewhere it is
    the same work in a second accumulator."""
    if c["BLOCK_N"] not in WIDE_N:
        return True
    if c["SPLIT_K"] != 1 or c["PERSISTENT"] or c.get("GEMV") or c["BLOCK_M"] < 64 or c["BLOCK_K"] not in (64, 128):
        return False
    slots = t.compute_units if t else 132
    narrow = wide_blocks(c["BLOCK_N"])[0]
    return wave_fill(s, c["BLOCK_M"], c["BLOCK_N"], slots) > wave_fill(s, c["BLOCK_M"], narrow, slots)


def wave_fill(s: dict[str, Any], block_m: int, block_n: int, slots: int) -> float:
    """The share of the waves' program slots that tiles of block_m × block_n fill at shape s, with ``slots``
    programs a wave (a count of 1.2 waves fills 0.6); a batch (examples/triton_bmm's ``B``) multiplies the tiles."""
    tiles = triton.cdiv(s["M"], block_m) * triton.cdiv(s["N"], block_n) * int(s.get("B", 1))
    return tiles / (slots * triton.cdiv(tiles, slots))


def gemv_form(c: dict[str, Any], s: dict[str, Any]) -> bool:
    """GEMV = 1 is the decode kernel (M <= 8, B's rows along K contiguous: layout NT) and the only form with
    BLOCK_N < 32 or BLOCK_K > 256; its fp32 partial sums (rows × BLOCK_N × BLOCK_K) stay within 64 registers a
    thread; the MMA tile's other parameters mean nothing to it and are held at one value, so each GEMV config is
    proposed once. Past one row, each thread loads at least GEMV_WEIGHT_PER_THREAD weight elements a step."""
    if not c.get("GEMV"):  # (configs written before GEMV existed have no such key)
        return c["BLOCK_N"] >= 32 and c["BLOCK_K"] <= 256
    if s["M"] > 8 or str(s.get("layout", "NN"))[1] != "T":
        return False
    rows, threads = triton.next_power_of_2(s["M"]), 32 * c["num_warps"]
    if rows > 1 and c["BLOCK_N"] * c["BLOCK_K"] < GEMV_WEIGHT_PER_THREAD * threads:
        return False
    return rows * c["BLOCK_N"] * c["BLOCK_K"] // threads <= 64 and (
        c["BLOCK_M"],
        c["GROUP_M"],
        c["SPLIT_K"],
        c["FUSED"],
        c["TMA"],
        c["PERSISTENT"],
    ) == (16, 8, 1, 0, 0, 0)


GEMV_WEIGHT_PER_THREAD = 8
"""Past one row, a GEMV config whose threads load fewer weight elements a step than this (one 16-byte load of
bf16) gets a weight layout other than the activations' (which have rows times as many elements a thread), and the
compiler converts the weight through shared memory, two barriers in every step of the K loop: so the sm_90 PTX of
every such config at 2, 4 and 8 rows shows (Triton 3.9, 2026-12-04; 108 of the 198-306 GEMV configs there), and
of none that loads 8 or more, nor of any at one row. Those are left out where the rows exceed one: the one-row
form lost a fifth of its speed to such conversions before its loads were reshaped (0.913 -> 0.795x torch.matmul
at 1x6144x4096, H200)."""


def _tutorial(bm: int, bn: int, bk: int, stages: int, warps: int, **extra: int) -> dict[str, int]:
    return {
        "BLOCK_M": bm,
        "BLOCK_N": bn,
        "BLOCK_K": bk,
        "GROUP_M": 8,
        "num_stages": stages,
        "num_warps": warps,
        **extra,
    }


# Known good configs tried first where valid: the 16 of the Triton matmul tutorial's autotune list (what a user
# coming from triton.autotune carries over), TMA / persistent variants of its large tiles, and split-K over its
# large tiles (fused), the usual cure where a skinny product's output tiles alone leave SMs idle (valid only there).
SEEDS = (
    [
        _tutorial(*c)
        for c in (
            (128, 256, 64, 3, 8),
            (64, 256, 32, 4, 4),
            (128, 128, 32, 4, 4),
            (128, 64, 32, 4, 4),
            (64, 128, 32, 4, 4),
            (128, 32, 32, 4, 4),
            (64, 32, 32, 5, 2),
            (32, 64, 32, 5, 2),
            (128, 256, 128, 3, 8),
            (256, 128, 128, 3, 8),
            (256, 64, 128, 4, 4),
            (64, 256, 128, 4, 4),
            (128, 128, 128, 4, 4),
            (128, 64, 64, 4, 4),
            (64, 128, 64, 4, 4),
            (128, 32, 64, 4, 4),
        )
    ]
    + [
        _tutorial(128, 256, 64, 3, 8, TMA=1),
        _tutorial(128, 256, 64, 3, 8, TMA=1, PERSISTENT=1),
        _tutorial(128, 128, 64, 4, 4, TMA=1),
        _tutorial(128, 128, 64, 4, 4, TMA=1, PERSISTENT=1),
    ]
    + [
        _tutorial(*tile, SPLIT_K=split, FUSED=1)
        for split in (2, 4, 8)
        for tile in ((128, 128, 64, 4, 4), (128, 64, 128, 4, 4), (64, 128, 128, 4, 4), (128, 256, 64, 3, 8))
    ]
    + [
        # Decode (M <= 16, where BLOCK_M is 16 and no tile above applies): the fastest configs of the H200's
        # interleaved CUPTI oracle and claims checks at 16×4096×4096, 16×4096×14336 and 16×14336×4096 (bf16,
        # 2026-12-03, benchmarks/RESULTS.md "Tuning reproducibility"), which a 12 s search found in 2 of 5 runs.
        _tutorial(16, 32, 256, 5, 4, TMA=1, PERSISTENT=1),
        _tutorial(16, 128, 128, 5, 4),
        _tutorial(16, 64, 256, 4, 4),
        _tutorial(16, 32, 256, 4, 4, TMA=1, PERSISTENT=1),
    ]
    + [
        # max-autotune's own choices at the suite's 16- and 32-row shapes (its mm template's configs cut to M; the
        # `against_max_autotune.py` logs of 2026-12-04; at the two 32-row shapes its choice led the tuned table by 0.4%
        # and 1.3%): tried first, so a search times what max-autotune would pick (the 12 s/shape run of 2026-12-05
        # never reached 32x64x128 at 5 stages at 32x8192x28672).
        _tutorial(16, 64, 128, 5, 4),
        _tutorial(32, 128, 128, 4, 4),
        _tutorial(32, 64, 128, 5, 4),
    ]
    + [
        # Matrix-vector (GEMV, M <= 8, NT): Inductor's reduction configs for a one-row product (max-autotune's choice
        # at 1x6144x4096 on the H200, 2026-12-04): one output row per program in a 2048-long strip at 16 warps (its
        # "contiguous" config), 8 rows x 512 (its make_config(8, 512), 16 warps); and the same with fewer warps, which
        # put more programs on each SM. One stage, as Inductor compiles every reduction (its coordinate descent settled
        # on one row x 2048 at 8 warps, 1 stage: 0.76-0.78x torch.matmul there). Whether the stage count matters is
        # not shown: the one tile timed both ways (1 x 1024, 4 warps) ran 0.795x at 1 and at 2 stages, so three
        # 2-stage configs stay beside them.
        _tutorial(16, bn, bk, 1, warps, GEMV=1)
        for bn, bk, warps in (
            (1, 2048, 8),
            (1, 2048, 16),
            (1, 1024, 8),
            (1, 512, 4),
            (1, 512, 2),
            (1, 1024, 4),
            (2, 1024, 16),
            (2, 512, 2),
            (4, 256, 2),
            (8, 512, 16),
            (8, 512, 4),
            (16, 256, 4),
        )
    ]
    + [_tutorial(16, bn, bk, 2, warps, GEMV=1) for bn, bk, warps in ((8, 512, 4), (1, 1024, 4), (4, 256, 2))]
    + [
        # Wide tiles (BLOCK_N 96, 160, 192; valid where their count fills the waves better, wide_tile): the medium
        # shapes' winners (64x128x64 at 3 stages on 4 warps, plain and TMA) made wider, and the large TMA tile of
        # 128 rows at 160 and 192 columns (cuBLAS runs 168x128 tiles at 256x10240x8192).
        _tutorial(128, 160, 64, 3, 8, TMA=1),
        _tutorial(128, 160, 64, 4, 8, TMA=1),
        _tutorial(64, 160, 64, 3, 4, TMA=1),
        _tutorial(64, 96, 64, 3, 4, TMA=1),
        _tutorial(128, 192, 64, 3, 8, TMA=1),
        _tutorial(64, 160, 64, 3, 4),
        _tutorial(64, 96, 64, 3, 4),
        _tutorial(128, 160, 64, 3, 8),
        # The 12 s/shape search's pick at 128x18944x3584, 256x10240x8192 and 512x4608x3584 (H200, 2026-12-05): 64x160 on
        # TMA loads at 4 stages, the most that keep two programs on an SM, 15% faster than at 3 at 256x10240x8192.
        _tutorial(64, 160, 64, 4, 4, TMA=1),
    ]
    + [
        # Fused split-K on TMA loads: the 16-row TMA winners (16x32x256 at 5 stages: one program per SM at
        # 16x4096x14336) with twice or four times the programs, and the medium shapes' 64x128 tiles.
        _tutorial(*tile, TMA=1, SPLIT_K=split, FUSED=1)
        for split in (2, 4)
        for tile in ((16, 32, 256, 5, 4), (16, 64, 256, 4, 4), (64, 128, 128, 4, 4), (64, 128, 64, 3, 4))
    ]
)


SERVED_DTYPES = {torch.bfloat16: "bfloat16", torch.float16: "float16"}


def _letter(shape: Any, stride: Any) -> str | None:
    """``N`` for a row-major operand (its last two dims), ``T`` for the transpose view of one, None for any other
    strides."""
    rows, cols = shape[-2:]
    row_stride, col_stride = stride[-2:]
    if col_stride == 1 and (row_stride >= cols or rows == 1):
        return "N"
    if row_stride == 1 and (col_stride >= rows or cols == 1):
        return "T"
    return None


def served_shape(op: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...] | None:
    """The shape of an ``aten::mm`` / ``aten::addmm`` call (``.out`` forms too) this kernel takes, or None: 2-D
    bf16/fp16 operands of one dtype on one device, each row-major or a transpose view, 16-byte aligned; for addmm
    a contiguous, aligned bias vector and alpha = beta = 1; for ``.out`` a contiguous, aligned output of the
    call's dtype (aligned pointers are what every served launch is specialized on: ``served_prepare``).

    It runs on every call of those operators, covered or not: each tensor attribute read is host time, so each is
    read once (the served call's host cost is measured by benchmarks/served-model/serve_cost.py)."""
    if op[6] == "a":  # aten::addmm, aten::addmm.out
        if len(args) != 3 or (kwargs and (kwargs.get("beta", 1) != 1 or kwargs.get("alpha", 1) != 1)):
            return None
        bias, a, b = args
    elif len(args) == 2:
        bias, (a, b) = None, args
    else:
        return None
    dtype = SERVED_DTYPES.get(a.dtype)
    a_shape, b_shape = a.shape, b.shape
    if dtype is None or len(a_shape) != 2 or len(b_shape) != 2 or b.dtype is not a.dtype:
        return None
    (m, k), (k2, n) = a_shape, b_shape
    la, lb = _letter(a_shape, a.stride()), _letter(b_shape, b.stride())
    if k2 != k or la is None or lb is None or (a.data_ptr() | b.data_ptr()) % 16 or a.get_device() != b.get_device():
        return None
    if bias is not None and (
        bias.shape != (n,) or bias.stride() != (1,) or bias.dtype is not a.dtype or bias.data_ptr() % 16
    ):
        return None
    out = kwargs.get("out") if kwargs else None
    if out is not None and (
        out.shape != (m, n) or out.dtype is not a.dtype or not out.is_contiguous() or out.data_ptr() % 16
    ):
        return None
    return dtype, m, n, k, la + lb, int(bias is not None)  # the key: dtype, then the shape fields in order


def served_run(
    op: str, shape: dict[str, Any], config: dict[str, Any], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> torch.Tensor:
    """Launch at ``config`` through Triton's JIT; returns the output (the ``out`` given to a ``.out`` call)."""
    bias, a, b = args if op.startswith("aten::addmm") else (None, *args)
    m, n, k = shape["M"], shape["N"], shape["K"]
    c = kwargs.get("out")
    if c is None:
        c = torch.empty((m, n), dtype=a.dtype, device=a.device)
    launch(matmul_kernel, {"a": a, "b": b, "c": c, "bias": bias, "M": m, "N": n, "K": k, "per_call": True}, config)
    return c


def served_prepare(
    op: str, shape: dict[str, Any], config: dict[str, Any]
) -> Callable[[tuple[Any, ...], dict[str, Any]], torch.Tensor]:
    """The launcher of one served key: its first call of each stride pattern launches through the JIT (compiling
    the kernel), later ones launch that compiled kernel directly (``kerntune.backends.triton_launch``), with the
    grid, integers and constexprs the key fixes. Its operands' strides are checked on every call (they decide
    the binary's specialization: a stride of 1, or one divisible by 16) and so is the device (a compiled kernel is
    loaded per device); ``served_shape`` checked alignment.
    A split-K that is not fused runs two kernels and stays on the JIT path. The GEMV kernel launches directly too:
    a decode step's matrix-vector products run for 15-20 µs each, where the JIT's host path would cost as much."""
    from kerntune.backends.triton_launch import direct_launcher

    m, n, k = int(shape["M"]), int(shape["N"]), int(shape["K"])
    addmm = op.startswith("aten::addmm")
    split_k, tma = config["SPLIT_K"], bool(config["TMA"])
    tiles = triton.cdiv(m, config["BLOCK_M"]) * triton.cdiv(n, config["BLOCK_N"])
    gemv = bool(config.get("GEMV"))  # (tables written before GEMV existed have no such key)
    wide = not tma and config["BLOCK_N"] in WIDE_N
    direct = gemv or tma or split_k == 1 or bool(config["FUSED"])
    options = {"num_warps": config["num_warps"], "num_stages": config["num_stages"]}
    launchers: dict[tuple[Any, ...], Callable[..., None] | None] = {}

    def launcher(args: tuple[Any, ...], kwargs: dict[str, Any]) -> torch.Tensor:
        bias, a, b = args if addmm else (None, *args)
        c = kwargs.get("out") if kwargs else None
        if c is None:
            c = torch.empty((m, n), dtype=a.dtype, device=a.device)
        strides = (a.stride(), b.stride(), c.stride())
        # A compiled kernel's function handle belongs to one device's context: two like GPUs share the key.
        seen = (a.get_device(), strides)
        fast = launchers.get(seen)
        if fast is None:
            if seen in launchers or not direct:  # no direct path here: the JIT's
                return served_run(op, shape, config, args, {"out": c})
            if gemv:
                grid = (triton.cdiv(n, config["BLOCK_N"]),)
                launchers[seen] = direct_launcher(
                    gemv_kernel[grid](*_gemv_args(a, b, c, bias, m, n, k, config), **options), grid
                )
                return c
            if tma:
                kernel, call, grid = _tma_call(a, b, c, m, n, k, config, per_call=True)
                launchers[seen] = direct_launcher(kernel[grid](*call, **options), grid)
                return c
            if wide:
                grid = (tiles, 1, 1)
                launchers[seen] = direct_launcher(
                    matmul_wide_kernel[grid](*_wide_args(a, b, c, bias, m, n, k, config), **options), grid
                )
                return c
            ws, locks = _workspace(split_k, m, n, tiles, a.device, True) if split_k > 1 else (c, c)
            grid = (tiles, split_k, 1)
            compiled = matmul_kernel[grid](*_plain_args(a, b, c, bias, ws, locks, m, n, k, config), **options)
            launchers[seen] = direct_launcher(compiled, grid)
            return c
        if gemv:
            fast(*_gemv_args(a, b, c, bias, m, n, k, config))
            return c
        if tma:
            fast(*_tma_call(a, b, c, m, n, k, config, per_call=True)[1])
            return c
        if wide:
            fast(*_wide_args(a, b, c, bias, m, n, k, config))
            return c
        ws, locks = _workspace(split_k, m, n, tiles, a.device, True) if split_k > 1 else (c, c)
        (sam, sak), (sbk, sbn), (scm, scn) = strides
        fast(
            a,
            b,
            c,
            c if bias is None else bias,
            ws,
            locks,
            m,
            n,
            k,
            sam,
            sak,
            sbk,
            sbn,
            scm,
            scn,
            0,
            0,
            0,
            config["BLOCK_M"],
            config["BLOCK_N"],
            config["BLOCK_K"],
            config["GROUP_M"],
            split_k,
            config["FUSED"],
            bias is not None,
        )
        return c

    return launcher


problem = kt.Problem(
    name="triton_matmul",
    kernel=kt.TritonKernel(fn=matmul_kernel, grid=lambda meta: (1,), launch=launch),
    space=kt.Space(
        params={
            "BLOCK_M": [16, 32, 64, 128, 256],
            "BLOCK_N": [1, 2, 4, 8, 16, 32, 64, 96, 128, 160, 192, 256],
            "BLOCK_K": [32, 64, 128, 256, 512, 1024, 2048],
            "GROUP_M": [1, 4, 8, 16],
            "SPLIT_K": [1, 2, 4, 8, 16],
            "FUSED": [0, 1],
            "TMA": [0, 1],
            "PERSISTENT": [0, 1],
            "GEMV": [0, 1],
            "num_warps": [2, 4, 8, 16],
            "num_stages": [1, 2, 3, 4, 5],
        },
        constraints=[
            kt.Constraint(lambda c, s: c["BLOCK_M"] <= max(16, s["M"]), "BLOCK_M <= M"),
            kt.Constraint(lambda c, s: s["K"] % (c["SPLIT_K"] * c["BLOCK_K"]) == 0, "K divisible by SPLIT_K*BLOCK_K"),
            kt.Constraint(
                lambda c: c["BLOCK_M"] * c["BLOCK_N"] // (32 * c["num_warps"]) <= 128,
                "accumulator <= 128 registers/thread",
            ),
            kt.Constraint(gemv_form, "GEMV only for M <= 8 and NT, the only form with BLOCK_N < 32 or BLOCK_K > 256"),
            kt.Constraint(
                lambda c: c.get("GEMV") or c["BLOCK_M"] >= 64 or c["num_warps"] <= 4,
                "small BLOCK_M with at most 4 warps",
            ),
            kt.Constraint(
                lambda c: c.get("GEMV") or c["BLOCK_M"] * c["BLOCK_N"] >= 64 * 64 or c["num_warps"] <= 4,
                "8 warps only for tiles of 64x64 or more",
            ),
            kt.Constraint(
                lambda c: c["num_warps"] >= 4 or c["BLOCK_M"] * c["BLOCK_N"] <= 64 * 64, "2 warps only for small tiles"
            ),
            kt.Constraint(lambda c: c.get("GEMV") or c["num_warps"] <= 8, "16 warps only for GEMV"),
            kt.Constraint(
                lambda c: c["num_stages"] <= 2 if c.get("GEMV") else c["num_stages"] >= 2,
                "GEMV with 1 or 2 stages, the MMA forms with 2 or more",
            ),
            kt.Constraint(lambda c: c["BLOCK_K"] <= 128 or c["BLOCK_M"] <= 64, "BLOCK_K 256 only for BLOCK_M <= 64"),
            kt.Constraint(group_matters, "GROUP_M varies only with several row tiles"),
            kt.Constraint(lambda c, s: c["BLOCK_M"] >= min(64, s["M"]), "BLOCK_M >= min(64, M)"),
            kt.Constraint(
                lambda c: c["BLOCK_K"] >= 64 or c["BLOCK_M"] * c["BLOCK_N"] <= 128 * 128,
                "BLOCK_K 32 only for small tiles",
            ),
            kt.Constraint(smem_fits, "shared memory fits"),
            kt.Constraint(splitk_when_underfilled, "split-K only when tiles underfill the device"),
            kt.Constraint(tma_supported, "TMA needs sm_90+"),
            kt.Constraint(lambda c: c["TMA"] or not c["PERSISTENT"], "PERSISTENT only with TMA"),
            kt.Constraint(lambda c: c["SPLIT_K"] > 1 or not c["FUSED"], "FUSED only with split-K"),
            kt.Constraint(wide_tile, "BLOCK_N 96, 160 or 192 only as a wide tile"),
        ],
        default={
            "BLOCK_M": 128,
            "BLOCK_N": 128,
            "BLOCK_K": 32,
            "GROUP_M": 8,
            "SPLIT_K": 1,
            "FUSED": 0,
            "TMA": 0,
            "PERSISTENT": 0,
            "GEMV": 0,
            "num_warps": 4,
            "num_stages": 3,
        },
        seeds=SEEDS,
    ),
    shapes=[{"M": 4096, "N": 4096, "K": 4096, "layout": "NN", "bias": 0}],
    dtypes=("bfloat16", "float16"),
    make_inputs=make_inputs,
    reference=reference,
    outputs=("c",),
    cost=lambda s, d: kt.Cost(
        flops=2.0 * s["M"] * s["N"] * s["K"],
        matrix=d,
        bytes=2.0 * (s["M"] * s["K"] + s["K"] * s["N"] + s["M"] * s["N"]),
    ),
    baselines=[kt.Baseline("torch.matmul", kernel=kt.TorchCallable(torch_matmul, "torch.matmul"))],
    serve=kt.Serve(
        ops=("aten::mm", "aten::mm.out", "aten::addmm", "aten::addmm.out"),
        shape=served_shape,
        run=served_run,
        prepare=served_prepare,
        kernel="matmul",
    ),
)
