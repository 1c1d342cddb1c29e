"""How the product GEMM takes a program's ``aten::mm`` / ``aten::addmm`` calls (``kt.Serve``): which calls it
covers, and the launcher of one served key."""

from collections.abc import Callable
from typing import Any

import torch
import triton

from .kernels import gemv_kernel, matmul_kernel, matmul_wide_kernel
from .launch import WIDE_N, _gemv_args, _plain_args, _tma_call, _wide_args, _workspace, launch

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
