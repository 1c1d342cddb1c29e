"""The product GEMM's Triton kernels (``spec.py`` describes the forms and their parameters): the plain, wide, TMA,
TMA split-K and persistent MMA kernels, the split-K reduction and the matrix-vector (GEMV) kernel, with the tile
helpers they share. Host code that picks a kernel and launches it is ``launch.py``."""

import triton
import triton.language as tl


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
    # key is one shape), whose K loop the compiler unrolls whole (benchmarks/gemm/k_loop_sass.py shows the SASS).
    # K alone as a constexpr in the MMA kernel did not pay, so K stays a run-time argument there (the timings:
    # benchmarks/gemm/history.md, "The seeds and rules of kernels/triton_gemm").
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
