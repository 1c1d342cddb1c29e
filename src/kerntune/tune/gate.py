"""Correctness gate, first version: relative error against a higher-precision reference.

``‖out − ref‖ / ‖ref‖`` with a threshold per dtype. Relative, because absolute error grows with K and
dtype (a bf16 GEMM at K = 4096 is ~1.0 off in absolute terms with nothing wrong). Outputs are poisoned
with NaN before each checked run, so an element the kernel never wrote fails as NaN; NaN and Inf never pass.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from kerntune.backends.base import Comparison, compare_arrays
from kerntune.model import Verdict
from kerntune.model.tolerance import DEFAULT_TOLERANCE, threshold_for

__all__ = ["DEFAULT_TOLERANCE", "check_outputs", "combine", "judge", "relative_error", "threshold_for"]


def relative_error(out: np.ndarray, ref: np.ndarray) -> float:
    """‖out − ref‖₂ / ‖ref‖₂ in float64 (absolute error where the reference is all zeros)."""
    return compare_arrays(out, ref).relative_error


def check_outputs(
    outputs: Sequence[tuple[str, np.ndarray, np.ndarray]], dtype: str, threshold: float, seed: int
) -> Verdict:
    """Gate one run of host arrays: every (name, out, ref) must be finite everywhere and within ``threshold``."""
    return judge([(name, compare_arrays(out, ref)) for name, out, ref in outputs], dtype, threshold, seed)


def judge(comparisons: Sequence[tuple[str, Comparison]], dtype: str, threshold: float, seed: int) -> Verdict:
    """Gate one run from its outputs' comparisons (made where the data lives: on the device for torch)."""
    worst = 0.0
    for name, c in comparisons:
        if c.shape != c.ref_shape:
            return Verdict(
                "gate",
                "fail",
                "rel_l2",
                None,
                threshold,
                f"output {name!r} has shape {c.shape}, the reference {c.ref_shape}",
                {"seed": seed},
            )
        if c.non_finite:
            return Verdict(
                "gate",
                "fail",
                "rel_l2",
                None,
                threshold,
                f"output {name!r}: {c.non_finite} of {c.size} elements are NaN/Inf (unwritten or non-finite), "
                f"seed {seed}",
                {"seed": seed, "non_finite": c.non_finite},
            )
        err = c.relative_error
        worst = max(worst, err)
        if not err <= threshold:
            return Verdict(
                "gate",
                "fail",
                "rel_l2",
                err,
                threshold,
                f"output {name!r}: relative error {err:.3g} > {threshold:.3g} ({dtype}), seed {seed}",
                {"seed": seed},
            )
    return Verdict(
        "gate", "pass", "rel_l2", worst, threshold, f"relative error {worst:.3g} <= {threshold:.3g}", {"seed": seed}
    )


def combine(verdicts: Sequence[Verdict]) -> Verdict:
    """One verdict over several seeds: the first failure, else a pass carrying the worst error."""
    for verdict in verdicts:
        if not verdict.passed:
            return verdict
    worst = max(verdicts, key=lambda v: v.value or 0.0)
    seeds = [v.details.get("seed") for v in verdicts]
    return Verdict(
        "gate",
        "pass",
        worst.metric,
        worst.value,
        worst.threshold,
        f"{worst.reason} over seeds {seeds}",
        {"seeds": seeds},
    )
