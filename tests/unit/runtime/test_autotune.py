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


def test_with_a_table_each_call_dispatches_on_its_key_fields(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import json

    from kerntune.runtime.keys import kernel_hash

    launched = []

    class FakeJit:  # a JITFunction's surface: its argument names, its source and the [grid] launch
        arg_names = ("x", "out", "N")
        src = "def add(x, out, N, BLOCK): ..."

        def __getitem__(self, grid):  # type: ignore[no-untyped-def]
            return lambda *args, **kwargs: launched.append(kwargs)

    class Tensor:
        dtype = "torch.float16"

    key = {"op": "add", "source": kernel_hash(FakeJit()), "dtype": "float16", "N": 4096, "arch": "sm_90"}
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"schema": 1, "entries": [{"key": key, "config": {"BLOCK": 256, "num_warps": 8}}]}))
    configs = [triton.Config({"BLOCK": 128}, num_warps=4), triton.Config({"BLOCK": 256}, num_warps=8)]
    kernel = kt.autotune(configs=configs, key=["N"], table=path, op="add", dtype_arg="x", device={"arch": "sm_90"})(
        FakeJit()
    )
    kernel[(1,)](Tensor(), Tensor(), 4096)
    kernel[(1,)](Tensor(), Tensor(), N=1024)
    assert launched[0]["BLOCK"] == 256 and launched[1]["BLOCK"] == 128  # a miss runs the first config
    assert kernel.dispatcher is not None and kernel.dispatcher.stats()["exact"] == 1
    with pytest.raises(ValueError, match="'M' is not an argument"):
        kt.autotune(configs=configs, key=["M"], table=path, op="add")(FakeJit())
    with pytest.raises(ValueError, match="give table= and op= together"):
        kt.autotune(configs=configs, table=path)
