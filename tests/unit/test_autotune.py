"""The decorator form accepts triton.Config objects and turns them into a Space."""

from __future__ import annotations

import pytest

import kerntune as kt
from kerntune.runtime.autotune import config_point

triton = pytest.importorskip("triton")


def test_triton_configs_become_points() -> None:
    configs = [triton.Config({"BLOCK": 128}, num_warps=4, num_stages=2), triton.Config({"BLOCK": 256}, num_warps=8)]
    launched = []

    class FakeJit:  # stands in for a JITFunction's launch: records what the live call would pass
        def __getitem__(self, grid):  # type: ignore[no-untyped-def]
            return lambda *args, **kwargs: launched.append((grid, args, kwargs))

    kernel = kt.autotune(configs=configs, key=["N"])(FakeJit())
    space = kernel.space()
    assert space.size == 2
    first = config_point(configs[0])
    assert first["BLOCK"] == 128 and first["num_warps"] == 4 and first["num_stages"] == 2
    assert space.default_config() == kt.Config.of(first)
    kernel[(4,)](1, 2)
    kernel.select(config_point(configs[1]))
    kernel[(2,)](3)
    assert launched[0] == ((4,), (1, 2), first)
    assert launched[1][2]["BLOCK"] == 256 and launched[1][2]["num_warps"] == 8
