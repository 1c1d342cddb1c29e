"""Triton and torch backends on a real GPU (run on the H200; skipped without a GPU)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import KERNELS, SPECS, CliResult, failures_by_config, has_gpu

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not has_gpu(), reason="needs a CUDA or ROCm GPU")]


def right_and_repeatable(
    spec: Any, args: dict[str, Any], ref: Any, shape: dict[str, Any], config: dict[str, Any], relaunches: int = 10
) -> None:
    """One config of the matmul example launched at ``args``: its output (C filled with NaN first, so an unwritten
    element fails) within 1e-2 of the float64 reference, and the same bits on each of ``relaunches`` more
    launches."""
    import torch

    args["c"].fill_(float("nan"))
    spec.launch(spec.matmul_kernel, args, config)
    first = args["c"].clone()
    error = float((first.double() - ref).norm() / ref.norm())
    assert error < 1e-2, (shape, config, error)
    for launch in range(relaunches):
        args["c"].fill_(float("nan"))
        spec.launch(spec.matmul_kernel, args, config)
        assert torch.equal(first, args["c"]), (shape, config, f"relaunch {launch} wrote another result")


def test_all_four_faults_are_isolated_and_named(kerntune: Callable[..., CliResult]) -> None:
    result = kerntune("tune", str(SPECS / "faults_triton"), "--json", env={"KERNTUNE_CANDIDATE_TIMEOUT_S": "30"})
    assert result.code == 0, result.stderr
    report = result.json()
    failed = failures_by_config(report)
    assert failed == {
        "VARIANT=1,BLOCK=1024": "compile",
        "VARIANT=2,BLOCK=1024": "crash",
        "VARIANT=3,BLOCK=1024": "hang",
        "VARIANT=4,BLOCK=1024": "wrong-result",
        "oom": "oom",
    }
    winner = report["shapes"][0]["winner"]
    assert winner["config"]["VARIANT"] in (0, 5)
    assert winner["gate"]["outcome"] == "pass"
    assert winner["measurement"]["conditions"]["timer"] == "cuda-events"


def test_matmul_tunes_gates_and_times_torch_side_by_side(kerntune: Callable[..., CliResult]) -> None:
    result = kerntune(
        "tune",
        str(KERNELS / "triton_gemm"),
        "--shape",
        "M=512,N=512,K=512",
        "--strategy",
        "random",
        "--budget",
        "6",
        "--json",
    )
    assert result.code == 0, result.stderr
    shape = result.json()["shapes"][0]
    assert shape["winner"]["gate"]["outcome"] == "pass"
    assert shape["winner"]["resources"].get("registers", 0) > 0
    torch_row = next(b for b in shape["baselines"] if b["label"] == "torch.matmul")
    assert torch_row["measurement"]["median_ms"] > 0
    assert torch_row["measurement"]["conditions"]["regime"] == "cold"


def test_split_k_and_decode_shape_pass_the_gate(kerntune: Callable[..., CliResult]) -> None:
    result = kerntune(
        "tune",
        str(KERNELS / "triton_gemm"),
        "--shape",
        "M=16,N=1024,K=4096",
        "--strategy",
        "random",
        "--budget",
        "12",
        "--json",
    )
    assert result.code == 0, result.stderr
    shape = result.json()["shapes"][0]
    timed = [shape["winner"], *shape["baselines"]]
    assert all(c["gate"]["outcome"] == "pass" for c in timed if c.get("gate"))
    assert shape["counts"].get("ok", 0) >= 6


def test_rmsnorm_tunes_against_torch(kerntune: Callable[..., CliResult]) -> None:
    result = kerntune("tune", str(KERNELS / "triton_rmsnorm"), "--shape", "M=4096,N=4096", "--budget", "6", "--json")
    assert result.code == 0, result.stderr
    shape = result.json()["shapes"][0]
    assert shape["winner"]["gate"]["outcome"] == "pass"
    assert any(b["label"] == "torch rms_norm" and b["status"] == "ok" for b in shape["baselines"])


def test_race_with_compile_ahead_and_occupancy_pruning(kerntune: Callable[..., CliResult], tmp_path: Path) -> None:
    # Compile workers build ahead, configs under 20% occupancy are pruned from their compiled resources, and
    # the race screens briefly, then gives the survivors the full protocol.
    result = kerntune(
        "tune",
        str(KERNELS / "triton_gemm"),
        "--shape",
        "M=16,N=1024,K=4096",
        "--strategy",
        "race",
        "--budget",
        "40",
        "--json",
        env={
            "KERNTUNE_COMPILE_WORKERS": "4",
            "KERNTUNE_MIN_OCCUPANCY": "0.2",
            # Triton caches by divisibility, not value: another shape's binaries would be hits.
            "TRITON_CACHE_DIR": str(tmp_path / "triton-cache"),
        },
    )
    assert result.code == 0, result.stderr
    shape = result.json()["shapes"][0]
    outcomes, seconds = shape["outcomes"], shape["seconds"]
    assert outcomes.get("pruned", 0) >= 1 and outcomes.get("timed", 0) >= 4, outcomes
    assert seconds["screened"] >= outcomes["timed"] - 1 and seconds["timed"] >= 2, seconds
    assert seconds["compile"] > 0 and seconds["measure"] > 0
    winner = shape["winner"]
    assert winner["role"] == "search" and winner["gate"]["outcome"] == "pass"
    assert winner["compile_s"] > 0.05  # the compile-ahead worker's real compile, not the timing worker's cache hit


def test_the_gemv_form_is_right_and_repeatable_under_real_concurrency() -> None:
    # GEMV = 1 (decode with an nn.Linear weight): every seed valid at the shape computes the product (against
    # float64, with and without a bias, rows masked below the power of two) and writes the same bits on every
    # relaunch, with thousands of programs in flight on the GPU where the interpreter ran them one at a time.
    import sys

    import torch

    from kerntune.model import Config, Shape, Target
    from kerntune.tune.spec import load_spec

    problem = load_spec(str(KERNELS / "triton_gemm")).problem
    spec = sys.modules[problem.make_inputs.__module__]
    props = torch.cuda.get_device_properties(0)
    target = Target("triton", "nvidia", f"sm_{props.major}{props.minor}", props.name, props.multi_processor_count)
    default = problem.space.default_config().as_dict()
    checked = 0
    for fields in (
        {"M": 1, "N": 6144, "K": 4096},
        {"M": 3, "N": 4104, "K": 4096, "bias": 1},
        {"M": 8, "N": 14336, "K": 4096},
    ):
        shape = {"layout": "NT", "bias": 0, **fields}
        args = problem.make_inputs(shape, "bfloat16", 1)
        ref = problem.reference(args, shape)
        for seed in problem.space.seed_configs():
            config = {**default, **seed.as_dict()}
            if not config["GEMV"] or problem.space.check(Config.of(config), Shape.of(shape), target) is not None:
                continue
            right_and_repeatable(spec, args, ref, shape, config)
            checked += 1
    assert checked >= 24, checked


def test_every_wide_tile_seed_is_right_and_repeatable_at_the_medium_shapes() -> None:
    # BLOCK_N 96, 160, 192 (two power-of-two blocks a tile, plain and TMA loads): each wide seed against float64 at
    # the medium shapes it is for, B transposed and row-major, and with a bias at an N that cuts the last tile (the
    # pointer kernel; TMA takes no bias), writing the same bits on every relaunch. The wave-fill rule that decides
    # where the search may pick them is the CPU tests'; here every seed runs at every shape its kernel takes.
    import sys

    from kerntune.tune.spec import load_spec

    problem = load_spec(str(KERNELS / "triton_gemm")).problem
    spec = sys.modules[problem.make_inputs.__module__]
    default = problem.space.default_config().as_dict()
    seeds = [{**default, **s.as_dict()} for s in problem.space.seed_configs() if s.as_dict()["BLOCK_N"] in spec.WIDE_N]
    assert {c["TMA"] for c in seeds} == {0, 1}
    checked = 0
    for fields in (
        {"M": 256, "N": 10240, "K": 8192},
        {"M": 128, "N": 18944, "K": 3584},
        {"M": 512, "N": 4608, "K": 3584, "layout": "NN"},
        {"M": 200, "N": 4104, "K": 4096, "bias": 1},
    ):
        shape = {"layout": "NT", "bias": 0, **fields}
        args = problem.make_inputs(shape, "bfloat16", 1)
        ref = problem.reference(args, shape)
        for config in seeds:
            if config["TMA"] and shape["bias"]:
                continue
            right_and_repeatable(spec, args, ref, shape, config)
            checked += 1
    assert checked == 3 * len(seeds) + sum(1 for c in seeds if not c["TMA"]), checked


def test_every_tma_split_k_seed_is_right_and_repeatable_with_its_counters_left_at_zero() -> None:
    # Fused split-K on TMA loads: each such seed against float64 at skinny shapes of both B layouts, the same bits
    # on every relaunch (the partials summed in a fixed order whatever order the programs arrive in), and the
    # kept arrival counters back at zero after each launch.
    import sys

    from kerntune.tune.spec import load_spec

    problem = load_spec(str(KERNELS / "triton_gemm")).problem
    spec = sys.modules[problem.make_inputs.__module__]
    default = problem.space.default_config().as_dict()
    seeds = [
        {**default, **s.as_dict()}
        for s in problem.space.seed_configs()
        if s.as_dict().get("TMA") and s.as_dict().get("SPLIT_K", 1) > 1
    ]
    assert len(seeds) == 8
    checked = 0
    for fields in (
        {"M": 16, "N": 4096, "K": 14336},
        {"M": 32, "N": 10240, "K": 8192},
        {"M": 128, "N": 4096, "K": 4096, "layout": "NN"},
        {"M": 40, "N": 4104, "K": 4096},
    ):
        shape = {"layout": "NT", "bias": 0, **fields}
        args = problem.make_inputs(shape, "bfloat16", 1)
        ref = problem.reference(args, shape)
        for config in seeds:
            if shape["K"] % (config["SPLIT_K"] * config["BLOCK_K"]):
                continue
            right_and_repeatable(spec, args, ref, shape, config)
            tiles = -(-shape["M"] // config["BLOCK_M"]) * -(-shape["N"] // config["BLOCK_N"])
            key = (config["SPLIT_K"], shape["M"], shape["N"], tiles, str(args["a"].device))
            assert key in spec._workspaces, "the launch's kept workspace is the one read here"
            counters = spec._workspaces[key][1]
            assert int(counters.abs().sum()) == 0, (shape, config)
            checked += 1
    assert checked >= 28, checked
