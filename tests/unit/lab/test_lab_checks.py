"""The lab's validation and mode checks, no kernel needed: bitwise means the elements' bits, and a replay result
whose mode is not the requested one is refused."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("safetensors")

from kerntune.errors import UsageError  # noqa: E402
from kerntune.lab.replay import check_mode, validate  # noqa: E402


def test_bitwise_sees_signed_zeros_and_names_the_first_difference() -> None:
    want = {"out": torch.tensor([[1.0, 0.0], [float("nan"), 2.0]])}
    assert validate(want, {"out": want["out"].clone()})["passed"]  # NaN equals its own bits
    flipped = want["out"].clone()
    flipped[0, 1] = -0.0
    found = validate(want, {"out": flipped})
    assert not found["passed"] and found["first_index"] == [0, 1] and found["mismatches"] == 1
    assert validate(want, {"out": flipped}, rtol=1e-6)["passed"]  # by value, -0.0 == 0.0
    off = want["out"].clone()
    off[1, 1] = 2.001
    assert not validate(want, {"out": off}, rtol=1e-6)["passed"] and validate(want, {"out": off}, rtol=1e-3)["passed"]


def test_a_result_from_another_mode_is_refused() -> None:
    check_mode({"mode": "sustained"}, "sustained")
    with pytest.raises(UsageError, match="ran mode 'isolated', not the requested 'sustained'"):
        check_mode({"mode": "isolated"}, "sustained")


def test_a_native_kernel_s_signature_is_read_and_a_variant_must_keep_it(tmp_path: Path) -> None:
    from kerntune.lab.native import arguments, load_source, parameters

    source = (
        'extern "C" __global__ void __launch_bounds__(256) scale(const float* __restrict__ x, float *out,\n'
        "    long long n, float alpha) { }\n"
    )
    assert parameters(source, "scale") == ["x", "out", "n", "alpha"]
    assert parameters("#define K(name) __global__ void name(float* a)\nK(scale)", "scale") is None
    manifest = {"kernel": {"name": "scale", "source": source, "arg_names": ["x", "out", "n", "alpha"]}}
    assert load_source(manifest, None) == source
    same = tmp_path / "same.cu"
    same.write_text(source.replace("{ }", "{ out[0] = x[0]; }"))
    assert "out[0]" in load_source(manifest, same)
    renamed = tmp_path / "renamed.cu"
    renamed.write_text(source.replace("long long n", "long long count"))
    with pytest.raises(UsageError, match=r"scale\(x, out, count, alpha\) has another signature"):
        load_source(manifest, renamed)
    other = tmp_path / "other.cu"
    other.write_text(source.replace("scale", "shift"))
    with pytest.raises(UsageError, match="defines no __global__ void scale"):
        load_source(manifest, other)
    with pytest.raises(UsageError, match="cannot be read"):
        load_source(manifest, tmp_path / "missing.cu")
    plain, typed = arguments({"x": torch.ones(2), "n": np.int64(5), "alpha": 0.5})
    assert set(plain) == {"x", "alpha"} and typed == {"n": {"kind": "scalar", "value": 5, "dtype": "int64"}}


def test_a_served_kernel_must_clear_both_timers() -> None:
    from kerntune.lab.save_config import slower_by_either_timer

    tie = {"ratio": 1.002, "ci": [0.995, 1.011]}
    assert slower_by_either_timer(tie) is None
    # The H200's decode GEMM: a tie by the events, slower by the profiler's kernel durations.
    said = slower_by_either_timer({**tie, "second_timer": {"ratio": 1.008, "ci": [1.003, 1.014]}})
    assert said == "profiler-timed ratio 1.008, 95% CI 1.003-1.014"
    assert slower_by_either_timer({"ratio": 1.02, "ci": [1.01, 1.03]}) == "time ratio 1.020, 95% CI 1.010-1.030"
    assert slower_by_either_timer({**tie, "second_timer": {"error": "CUPTI refused"}}) is None
    assert (
        slower_by_either_timer({"ratio": 0.97, "ci": [0.96, 0.98], "second_timer": {"ratio": 0.98, "ci": [0.97, 0.99]}})
        is None
    )
