from __future__ import annotations

import numpy as np
import pytest

from kerntune.tune import gate


def _check(out: np.ndarray, ref: np.ndarray, dtype: str = "float32") -> gate.Verdict:
    return gate.check_outputs([("c", out, ref)], dtype, gate.threshold_for(dtype), seed=1)


def test_relative_error_is_scale_free() -> None:
    rng = np.random.default_rng(0)
    ref = rng.standard_normal(1000)
    noisy = ref * (1 + 1e-3 * rng.standard_normal(1000))
    assert gate.relative_error(noisy, ref) == pytest.approx(gate.relative_error(noisy * 1e6, ref * 1e6))


def test_pass_within_threshold_and_fail_beyond() -> None:
    ref = np.linspace(1, 2, 100)
    assert _check(ref + 1e-7, ref).outcome == "pass"
    verdict = _check(ref + 0.1, ref)
    assert verdict.outcome == "fail" and "relative error" in verdict.reason


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_never_passes(bad: float) -> None:
    ref = np.ones(10)
    out = ref.copy()
    out[3] = bad
    verdict = _check(out, ref, "bfloat16")
    assert verdict.outcome == "fail" and "NaN/Inf" in verdict.reason


def test_shape_mismatch_fails() -> None:
    assert _check(np.ones(4), np.ones(5)).outcome == "fail"


def test_thresholds_per_dtype_and_overrides() -> None:
    assert gate.threshold_for("float32") == 1e-5
    assert gate.threshold_for("bfloat16") == 1e-2
    assert gate.threshold_for("float8_e4m3fn") == 5e-2
    assert gate.threshold_for("bfloat16", {"bfloat16": 3e-2}) == 3e-2
    with pytest.raises(KeyError):
        gate.threshold_for("complex32")


def test_combine_reports_first_failure() -> None:
    ok = _check(np.ones(3), np.ones(3))
    bad = _check(np.ones(3) * 2, np.ones(3))
    assert gate.combine([ok, bad]).outcome == "fail"
    assert gate.combine([ok, ok]).outcome == "pass"
