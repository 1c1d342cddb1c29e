"""The optional first-call check of a served key (``KERNTUNE_FIRST_CALL_CHECK=1``): its first served call's output
against the library's own on the same inputs, to the spec's gate threshold. The outputs are read through their own
tensor methods: this module imports no torch."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, cast

from kerntune.model.tolerance import threshold_for


class Tensor(Protocol):
    """What the check reads of an operator's output (a torch tensor, duck-typed: the runtime imports no torch)."""

    @property
    def shape(self) -> Sequence[int]: ...
    def double(self) -> Tensor: ...
    def isfinite(self) -> Tensor: ...
    def all(self) -> Tensor: ...
    def norm(self) -> Tensor: ...
    def clone(self) -> Tensor: ...
    def copy_(self, src: Tensor) -> Tensor: ...
    def __sub__(self, other: Tensor) -> Tensor: ...
    def __float__(self) -> float: ...


class LibraryKernel(Protocol):
    """The library's kernel of an operator (torch's ``OperatorHandle``): ``call_boxed`` runs it on a dispatch
    key set (torch's ``DispatchKeySet``, which the runtime cannot name without importing torch)."""

    def call_boxed(self, keyset: Any, *args: object, **kwargs: object) -> object: ...


def wants_check(check: int, mode: str, entry: Mapping[str, object] | None) -> bool:
    """Whether a key's first served call is checked: the setting is on, and not an admitted entry in production."""
    if not check or entry is None:
        return False
    return not (mode == "production" and entry.get("status") == "admitted")


def library_output(
    original: LibraryKernel, keyset: object, args: tuple[object, ...], kwargs: dict[str, object]
) -> object:
    """The library kernel's output for the call, into a copy of ``out`` for an ``.out`` overload (the served
    kernel's ``out`` is kept)."""
    if "out" in kwargs:
        kwargs = {**kwargs, "out": cast(Tensor, kwargs["out"]).clone()}  # an .out overload's out: a tensor
    return original.call_boxed(keyset, *args, **kwargs)


def mismatch(got: Tensor, want: Tensor, dtype: str, tolerance: Mapping[str, float]) -> str | None:
    """Why the served output is not the library's to the gate's threshold (relative L2 error, NaN and Inf never
    pass), or None."""
    try:
        threshold = threshold_for(dtype, tolerance)
    except KeyError:
        return None  # a dtype without a gate threshold: the tuner's gate could not judge it either
    g, w = got.double(), want.double()
    if tuple(g.shape) != tuple(w.shape):
        return f"its output has shape {tuple(g.shape)}, the library's {tuple(w.shape)}"
    if not bool(g.isfinite().all()) and bool(w.isfinite().all()):
        return "its output holds NaN or Inf where the library's does not"
    scale = float(w.norm())
    error = float((g - w).norm()) / (scale if scale > 0 else 1.0)
    return (
        None
        if error <= threshold
        else f"relative error {error:.3g} against the library's, over the gate's {threshold:g}"
    )
