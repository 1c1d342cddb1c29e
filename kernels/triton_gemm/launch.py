"""The product GEMM's host side: split-K workspaces and arrival counters, TMA descriptors, each kernel form's
arguments and the ``launch`` that picks the form a config names."""

from typing import Any

import torch
import triton

from kerntune.ops.gemm import arrival_counters

from .kernels import (
    gemv_kernel,
    matmul_tma_kernel,
    matmul_tma_persistent_kernel,
    matmul_tma_split_kernel,
    matmul_tma_wide_kernel,
    matmul_wide_kernel,
    splitk_reduce_kernel,
)

_workspaces: dict[tuple[Any, ...], tuple[torch.Tensor, torch.Tensor]] = {}
_sms: dict[Any, int] = {}


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
        return (torch.empty((split_k, m, n), dtype=torch.float32, device=device), arrival_counters(tiles, device))
    key = (split_k, m, n, tiles, str(device))
    if key not in _workspaces:
        _workspaces.clear()
        _workspaces[key] = (
            torch.empty((split_k, m, n), dtype=torch.float32, device=device),
            torch.zeros(tiles, dtype=torch.int32, device=device),
        )
    return _workspaces[key]


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
