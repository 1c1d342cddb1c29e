"""The lab's validation and mode checks, no kernel needed: bitwise means the elements' bits, and a replay result
whose mode is not the requested one is refused."""

from __future__ import annotations

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
