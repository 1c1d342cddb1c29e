"""The optional first-call check of a served key (``KERNTUNE_FIRST_CALL_CHECK=1``): its first served call's output
against the library's own on the same inputs, to the spec's gate threshold. The outputs are read through their own
tensor methods: this module imports no torch."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kerntune.model.tolerance import threshold_for


def wants_check(check: int, mode: str, entry: Mapping[str, Any] | None) -> bool:
    """Whether a key's first served call is checked: the setting is on, and not an admitted entry in production."""
    if not check or entry is None:
        return False
    return not (mode == "production" and entry.get("status") == "admitted")


def library_output(original: Any, keyset: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """The library kernel's output for the call, into a copy of ``out`` for an ``.out`` overload (the served
    kernel's ``out`` is kept)."""
    if "out" in kwargs:
        kwargs = {**kwargs, "out": kwargs["out"].clone()}
    return original.call_boxed(keyset, *args, **kwargs)


def mismatch(got: Any, want: Any, dtype: str, tolerance: Mapping[str, float]) -> str | None:
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
