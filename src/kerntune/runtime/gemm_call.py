"""Read a library GEMM call (``aten::mm``, ``aten::addmm`` and their ``.out`` forms) as a served key's shape.

Standard library only: tensors are read by duck typing (``shape``, ``stride()``, ``dtype``, ``data_ptr()``,
``get_device()``), so a spec that serves GEMMs imports this without pulling torch into ``kerntune.runtime``.
Every GEMM spec that serves these operators reads calls the same way, so one table key means one call shape.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol, TypeGuard


class TensorLike(Protocol):
    """What a GEMM call's reader asks of a tensor (torch's ``Tensor`` has it)."""

    @property
    def shape(self) -> Sequence[int]: ...

    @property
    def dtype(self) -> object: ...

    def stride(self) -> Sequence[int]: ...

    def data_ptr(self) -> int: ...

    def get_device(self) -> int: ...

    def is_contiguous(self) -> bool: ...


GemmKey = tuple[str, int, int, int, str, int]
"""A served GEMM call's key: dtype name, M, N, K, layout (A's letter then B's), bias (0 or 1)."""


def layout_letter(shape: Sequence[int], stride: Sequence[int]) -> str | None:
    """``N`` for a row-major operand (its last two dims), ``T`` for the transpose view of one, None for any other
    strides (a slice with gaps along the contiguous dim, a broadcast)."""
    rows, cols = shape[-2:]
    row_stride, col_stride = stride[-2:]
    if col_stride == 1 and (row_stride >= cols or rows == 1):
        return "N"
    if row_stride == 1 and (col_stride >= rows or cols == 1):
        return "T"
    return None


def read_gemm_call(
    op: str, args: tuple[object, ...], kwargs: Mapping[str, object], dtypes: Mapping[object, str]
) -> GemmKey | None:
    """The key of an ``aten::mm`` / ``aten::addmm`` call (``.out`` forms too), or None when it is not one a tuned
    GEMM takes: 2-D operands of one dtype named in ``dtypes`` on one device, each row-major or a transpose view,
    16-byte aligned; for addmm a contiguous, aligned bias vector of length N and alpha = beta = 1; for ``.out`` a
    contiguous, aligned output of the call's dtype.

    It runs on every call of those operators, covered or not: each tensor attribute is read once (host time)."""
    if op.startswith("aten::addmm"):
        if len(args) != 3 or (kwargs and (kwargs.get("beta", 1) != 1 or kwargs.get("alpha", 1) != 1)):
            return None
        bias, a, b = args
    elif len(args) == 2:
        bias, (a, b) = None, args
    else:
        return None
    return _key(a, b, bias, kwargs.get("out") if kwargs else None, dtypes)


def _key(a: object, b: object, bias: object, out: object, dtypes: Mapping[object, str]) -> GemmKey | None:
    if not (_tensor(a) and _tensor(b)):
        return None
    dtype = dtypes.get(a.dtype)
    a_shape, b_shape = a.shape, b.shape
    if dtype is None or len(a_shape) != 2 or len(b_shape) != 2 or b.dtype is not a.dtype:
        return None
    (m, k), (k2, n) = a_shape, b_shape
    la, lb = layout_letter(a_shape, a.stride()), layout_letter(b_shape, b.stride())
    if k2 != k or la is None or lb is None or (a.data_ptr() | b.data_ptr()) % 16 or a.get_device() != b.get_device():
        return None
    if bias is not None and not (
        _tensor(bias)
        and tuple(bias.shape) == (n,)
        and tuple(bias.stride()) == (1,)
        and bias.dtype is a.dtype
        and bias.data_ptr() % 16 == 0
    ):
        return None
    if out is not None and not (
        _tensor(out)
        and tuple(out.shape) == (m, n)
        and out.dtype is a.dtype
        and out.is_contiguous()
        and out.data_ptr() % 16 == 0
    ):
        return None
    return dtype, m, n, k, la + lb, int(bias is not None)


def _tensor(x: object) -> TypeGuard[TensorLike]:
    """A tensor-like (a scalar bias or a list is not one: the library takes such calls)."""
    return hasattr(x, "stride") and hasattr(x, "data_ptr") and hasattr(x, "shape")
