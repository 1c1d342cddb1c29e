"""How the product GEMM takes a program's ``aten::mm`` / ``aten::addmm`` calls (``kt.Serve``): which calls it
covers, and the launcher of one served key."""

from collections.abc import Callable
from typing import Any

import torch
import triton

from kerntune.runtime.gemm_call import layout_letter, read_gemm_call

from .kernels import gemv_kernel, matmul_kernel, matmul_wide_kernel
from .launch import WIDE_N, _gemv_args, _plain_args, _tma_call, _wide_args, _workspace, launch

SERVED_DTYPES = {torch.bfloat16: "bfloat16", torch.float16: "float16"}


_letter = layout_letter


def served_shape(op: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...] | None:
    """The key of an ``aten::mm`` / ``aten::addmm`` call (``.out`` forms too) this kernel takes, or None, read as
    every GEMM spec reads it (``kerntune.ops.gemm``): 2-D bf16/fp16 operands, each row-major or a transpose view,
    16-byte aligned (what every served launch is specialized on: ``served_prepare``); for addmm an aligned bias
    vector and alpha = beta = 1; for ``.out`` a contiguous, aligned output of the call's dtype."""
    return read_gemm_call(op, args, kwargs, SERVED_DTYPES)


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
