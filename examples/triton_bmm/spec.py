"""Batched bf16 matmul (``torch.bmm``): kernels/triton_gemm's kernel walking a batch on its third grid axis,
tuned against torch.bmm (cuBLAS strided-batched / hipBLASLt) at the same layout, and served to programs whose
``aten::bmm`` calls it takes (``kerntune run``).

C[b] = A[b] · B[b] for b < B, each [M×K]·[K×N]; ``layout`` names A then B by their last two dims as in
kernels/triton_gemm (``NT``: B is the transpose view of row-major [N×K] matrices, as ``q @ k.transpose(-1, -2)``
hands it). One product per grid row of axis 2, so no split-K and no TMA here.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import torch

import kerntune as kt


def _matmul_spec() -> Any:
    path = Path(__file__).resolve().parents[2] / "kernels" / "triton_gemm" / "spec.py"
    loaded = importlib.util.spec_from_file_location("kerntune_kernels_triton_gemm", path)
    assert loaded is not None and loaded.loader is not None
    module = importlib.util.module_from_spec(loaded)
    loaded.loader.exec_module(module)
    return module


MM = _matmul_spec()
matmul_kernel = MM.matmul_kernel


def launch(fn: Any, args: dict[str, Any], meta: dict[str, Any]) -> Any:
    return MM.launch(fn, args, meta)


def make_inputs(shape: dict[str, Any], dtype: str, seed: int) -> dict[str, Any]:
    gen = MM.input_generator(seed)
    batch, m, n, k = (int(shape[f]) for f in ("B", "M", "N", "K"))
    layout, t = str(shape.get("layout", "NN")), MM.DTYPES[dtype]
    if layout not in MM.LAYOUTS:
        raise ValueError(f"layout {layout!r}: one of {', '.join(MM.LAYOUTS)}")

    def operand(rows: int, cols: int, transposed: bool) -> torch.Tensor:
        if transposed:
            return torch.randn((batch, cols, rows), generator=gen, device=gen.device).to(t).transpose(1, 2)
        return torch.randn((batch, rows, cols), generator=gen, device=gen.device).to(t)

    return {
        "a": operand(m, k, layout[0] == "T"),
        "b": operand(k, n, layout[1] == "T"),
        "c": torch.empty((batch, m, n), dtype=t, device=gen.device),
        "M": m,
        "N": n,
        "K": k,
    }


def reference(args: dict[str, Any], shape: dict[str, Any]) -> torch.Tensor:
    return torch.bmm(args["a"].double(), args["b"].double())


def torch_bmm(args: dict[str, Any], meta: dict[str, Any]) -> Any:
    return torch.bmm(args["a"], args["b"], out=args["c"])


def served_shape(op: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...] | None:
    """The shape of an ``aten::bmm`` call (``.out`` too) this kernel takes, or None: 3-D bf16/fp16 operands of one
    dtype and device, each batch item row-major or a transpose view, 16-byte aligned; a contiguous ``out``."""
    if len(args) != 2:
        return None
    a, b = args
    dtype = MM.SERVED_DTYPES.get(a.dtype)
    if dtype is None or a.dim() != 3 or b.dim() != 3 or b.dtype != a.dtype or b.device != a.device:
        return None
    (batch, m, k), (batch_b, k2, n) = a.shape, b.shape
    la, lb = MM._letter(a.shape, a.stride()), MM._letter(b.shape, b.stride())
    if batch_b != batch or k2 != k or la is None or lb is None or (a.data_ptr() | b.data_ptr()) % 16:
        return None
    out = kwargs.get("out")
    if out is not None and (out.shape != (batch, m, n) or out.dtype != a.dtype or not out.is_contiguous()):
        return None
    return dtype, batch, m, n, k, la + lb  # the key: dtype, then the shape fields in order


def served_run(
    op: str, shape: dict[str, Any], config: dict[str, Any], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> torch.Tensor:
    a, b = args
    c = kwargs.get("out")
    if c is None:
        c = torch.empty((shape["B"], shape["M"], shape["N"]), dtype=a.dtype, device=a.device)
    launch(matmul_kernel, {"a": a, "b": b, "c": c, "M": shape["M"], "N": shape["N"], "K": shape["K"]}, config)
    return c


base = MM.problem.space
problem = kt.Problem(
    name="triton_bmm",
    kernel=kt.TritonKernel(fn=matmul_kernel, grid=lambda meta: (1,), launch=launch),
    space=kt.Space(
        # the batch walks grid axis 2 of the plain kernel: the split-K, TMA and GEMV forms are products of one
        # matrix pair (the GEMV kernel reads a 2-D operand's strides)
        params={**base.params, "SPLIT_K": [1], "FUSED": [0], "TMA": [0], "PERSISTENT": [0], "GEMV": [0]},
        constraints=list(base.constraints),
        default=base.default,
        seeds=[c for c in base.seeds if not (c.get("TMA") or c.get("GEMV")) and c.get("SPLIT_K", 1) == 1],
    ),
    shapes=[{"B": 32, "M": 16, "N": 128, "K": 512, "layout": "NT"}],
    dtypes=("bfloat16", "float16"),
    make_inputs=make_inputs,
    reference=reference,
    outputs=("c",),
    cost=lambda s, d: kt.Cost(
        flops=2.0 * s["B"] * s["M"] * s["N"] * s["K"],
        matrix=d,
        bytes=2.0 * s["B"] * (s["M"] * s["K"] + s["K"] * s["N"] + s["M"] * s["N"]),
    ),
    baselines=[kt.Baseline("torch.bmm", kernel=kt.TorchCallable(torch_bmm, "torch.bmm"))],
    serve=kt.Serve(ops=("aten::bmm", "aten::bmm.out"), shape=served_shape, run=served_run, kernel="matmul"),
)
