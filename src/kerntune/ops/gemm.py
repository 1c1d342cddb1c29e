"""The GEMM operator as every GEMM spec states it: C[M×N] = A[M×K] · B[K×N] (+ bias[N]), fp32 accumulation.

A shape holds ``M``, ``N``, ``K``, ``layout`` (A's letter then B's: ``N`` row-major, ``T`` the transpose view of a
row-major matrix, so ``NT`` is ``nn.Linear``'s ``x @ W.T``) and ``bias`` (0 or 1: ``addmm``). The library
baseline is ``torch.mm`` / ``torch.addmm`` at the same layout; the reference is the float64 product. torch is
imported inside each function: stating a problem imports nothing heavy.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

from kerntune.model import Cost, Scalar
from kerntune.runtime.gemm_call import GemmKey, read_gemm_call

if TYPE_CHECKING:
    import torch

LAYOUTS = ("NN", "NT", "TN", "TT")
GEMM_FIELDS = ("M", "N", "K", "layout", "bias")
SERVED_OPS = ("aten::mm", "aten::mm.out", "aten::addmm", "aten::addmm.out")


def torch_dtype(name: str) -> torch.dtype:
    import torch

    found = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}.get(name)
    if found is None:
        raise ValueError(f"dtype {name!r}: one of bfloat16, float16, float32")
    return found


def input_generator(seed: int) -> torch.Generator:
    """The seeded generator inputs are drawn from, on the device kernels run on (drawing large operands on the
    host and copying them dominated the gate's time); the CPU where there is no GPU or under the interpreter."""
    import torch

    on_gpu = torch.cuda.is_available() and os.environ.get("TRITON_INTERPRET", "0") != "1"
    return torch.Generator(device="cuda" if on_gpu else "cpu").manual_seed(seed)


def operand(rows: int, cols: int, transposed: bool, gen: torch.Generator, dtype: torch.dtype) -> torch.Tensor:
    """A rows×cols operand, or the transpose view of a row-major cols×rows matrix (strides (1, rows))."""
    import torch

    if transposed:
        return torch.randn((cols, rows), generator=gen, device=gen.device).to(dtype).t()
    return torch.randn((rows, cols), generator=gen, device=gen.device).to(dtype)


def make_inputs(shape: Mapping[str, Scalar], dtype: str, seed: int) -> dict[str, object]:
    """Random operands at the shape's layout, an empty C, and a bias when the shape has one."""
    import torch

    gen = input_generator(seed)
    m, n, k = int(shape["M"]), int(shape["N"]), int(shape["K"])
    layout, t = str(shape.get("layout", "NN")), torch_dtype(dtype)
    if layout not in LAYOUTS:
        raise ValueError(f"layout {layout!r}: one of {', '.join(LAYOUTS)}")
    bias = torch.randn((n,), generator=gen, device=gen.device).to(t) if int(shape.get("bias", 0)) else None
    return {
        "a": operand(m, k, layout[0] == "T", gen, t),
        "b": operand(k, n, layout[1] == "T", gen, t),
        "c": torch.empty((m, n), dtype=t, device=gen.device),
        "bias": bias,
        "M": m,
        "N": n,
        "K": k,
    }


def reference(args: Mapping[str, object], shape: Mapping[str, Scalar]) -> torch.Tensor:
    """The float64 product (plus the bias)."""
    import torch

    a, b, bias = args["a"], args["b"], args.get("bias")
    assert isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)
    out = a.double() @ b.double()
    return out + bias.double() if isinstance(bias, torch.Tensor) else out


def library(args: Mapping[str, object], meta: Mapping[str, object]) -> object:
    """The library at the same layout: ``torch.mm`` (``aten::mm``), or ``torch.addmm`` with a bias."""
    import torch

    a, b, c, bias = args["a"], args["b"], args["c"], args.get("bias")
    assert isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and isinstance(c, torch.Tensor)
    if isinstance(bias, torch.Tensor):
        return torch.addmm(bias, a, b, out=c)
    return torch.mm(a, b, out=c)


def cost(shape: Mapping[str, Scalar], dtype: str) -> Cost:
    m, n, k = int(shape["M"]), int(shape["N"]), int(shape["K"])
    return Cost(flops=2.0 * m * n * k, matrix=dtype, bytes=2.0 * (m * k + k * n + m * n))


_SERVED_DTYPES: dict[object, str] = {}


def read_call(op: str, args: tuple[object, ...], kwargs: dict[str, object]) -> GemmKey | None:
    """A served spec's ``Serve.shape``: the call's key (dtype, M, N, K, layout, bias) for bf16/fp16 GEMMs."""
    if not _SERVED_DTYPES:
        import torch

        _SERVED_DTYPES.update({torch.bfloat16: "bfloat16", torch.float16: "float16"})
    return read_gemm_call(op, args, kwargs, _SERVED_DTYPES)


def tma_aligned(shape: Mapping[str, Scalar]) -> bool:
    """TMA descriptors need every operand's row pitch to be a multiple of 16 bytes (2-byte elements): A's
    contiguous dim (K, or M when A is a transpose view), B's (N, or K when B is one), and C's N."""
    m, n, k = int(shape["M"]), int(shape["N"]), int(shape["K"])
    layout = str(shape.get("layout", "NN"))
    a_pitch = m if layout[0] == "T" else k
    b_pitch = k if layout[1] == "T" else n
    return a_pitch % 8 == 0 and b_pitch % 8 == 0 and n % 8 == 0


_counters: dict[tuple[int, int], torch.Tensor] = {}
_kept_counters: list[torch.Tensor] = []


def arrival_counters(tiles: int, device: torch.device) -> torch.Tensor:
    """Per-tile arrival counters for a kernel whose last program to reach a tile reduces it (fused split-K, a
    K-split tail). Zeroing them on every call is a memset beside every GEMM (a node of its own in a CUDA graph),
    yet the last arrival leaves them at zero: one buffer per device and stream, zeroed once, serves every later
    call on that stream, whose launches run in order. It is made on a side stream, so torch.compile's CUDA-graph
    pool (which takes the current stream's allocations while it warms up or records) never holds it, and kept
    for the life of the process (a recorded graph holds its address). While a stream is being captured none is
    made: that call zeroes its own."""
    import torch

    if device.type != "cuda":  # the interpreter (CPU tests): nothing is kept
        return torch.zeros(tiles, dtype=torch.int32, device=device)
    stream = torch.cuda.current_stream(device)
    key = (stream.device_index, stream.cuda_stream)
    found = _counters.get(key)
    if found is not None and found.numel() >= tiles:
        return found
    if torch.cuda.is_current_stream_capturing():
        return torch.zeros(tiles, dtype=torch.int32, device=device)
    side = torch.cuda.Stream(device)  # type: ignore[no-untyped-call]
    side.wait_stream(stream)
    with torch.cuda.stream(side):
        made = torch.zeros(max(tiles, 4096), dtype=torch.int32, device=device)
    side.synchronize()
    _kept_counters.append(made)
    _counters[key] = made
    return made
