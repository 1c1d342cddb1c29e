"""End to end on PoCL's CPU device: real OpenCL compiles, real profiling events, real subprocess workers."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from tests.conftest import EXAMPLES, SPECS, CliResult, failures_by_config

pytest.importorskip("pyopencl")


def test_matmul_tunes_to_a_gated_winner_faster_than_default_and_slowest(kerntune: Callable[..., CliResult]) -> None:
    result = kerntune("tune", str(EXAMPLES / "opencl_matmul"), "--shape", "M=128,N=128,K=128", "--json")
    assert result.code == 0, result.stderr
    report = result.json()
    assert report["run"]["target"]["arch"] == "cpu-pocl"
    shape = report["shapes"][0]
    winner = shape["winner"]
    assert winner["gate"]["outcome"] == "pass" and winner["gate"]["value"] < 1e-5
    assert winner["measurement"]["conditions"] == {
        **winner["measurement"]["conditions"],
        "timer": "opencl-profiling",
        "regime": "cold",
    }
    assert winner["measurement"]["n"] >= 5 and winner["binary_hash"]
    default = next(b for b in shape["baselines"] if b["label"] == "default")
    assert default["winner_speedup"] >= 1.0
    assert shape["slowest"]["winner_speedup"] >= 1.0
    assert shape["counts"] == {"ok": 30}


@pytest.mark.parametrize("compile_workers", ["0", "1"])
def test_planted_faults_fail_with_their_reasons_and_a_correct_config_wins(
    kerntune: Callable[..., CliResult],
    compile_workers: str,
) -> None:
    result = kerntune(
        "tune",
        str(SPECS / "faults_opencl"),
        "--json",
        env={"KERNTUNE_CANDIDATE_TIMEOUT_S": "8", "KERNTUNE_COMPILE_WORKERS": compile_workers},
    )
    assert result.code == 0, result.stderr
    report = result.json()
    assert failures_by_config(report) == {
        "VARIANT=1,LS=64": "compile",
        "VARIANT=2,LS=64": "hang",
        "VARIANT=3,LS=64": "wrong-result",
        "VARIANT=4,LS=64": "crash",
    }
    failed = {f["config"]["VARIANT"]: f["reason"] for f in report["shapes"][0]["failed"]}
    assert "this is not OpenCL C" in failed[1] or "error" in failed[1].lower()
    assert "SIGSEGV" in failed[4]
    # With a compile-ahead worker the compile error is caught there, before the timing worker sees it.
    assert failed[1].endswith("(compile-ahead worker)") == (compile_workers == "1")
    assert report["shapes"][0]["winner"]["config"]["VARIANT"] in (0, 5)


def test_random_search_respects_the_evaluation_budget(kerntune: Callable[..., CliResult]) -> None:
    result = kerntune(
        "tune",
        str(EXAMPLES / "opencl_vector_add"),
        "--shape",
        "N=65536",
        "--strategy",
        "random",
        "--budget",
        "3",
        "--seed",
        "7",
        "--json",
    )
    assert result.code == 0, result.stderr
    report = result.json()
    assert report["run"]["stop_reason"].startswith("evaluation budget reached")
    assert report["shapes"][0]["counts"]["ok"] == 3 + 1  # three searched, one default baseline
    assert report["shapes"][0]["winner"]["gate"]["outcome"] == "pass"
    planned = json.loads(next(line for line in result.stderr.splitlines() if '"event": "planned"' in line))
    assert planned["estimate"] is None  # no time bound and no earlier run of this spec on this device

    again = kerntune(
        "tune",
        str(EXAMPLES / "opencl_vector_add"),
        "--shape",
        "N=65536",
        "--strategy",
        "random",
        "--budget",
        "3",
        "--seed",
        "8",
        "--json",
    )
    assert again.code == 0, again.stderr
    planned = json.loads(next(line for line in again.stderr.splitlines() if '"event": "planned"' in line))
    basis = planned["estimate"]["basis"]  # the first run's mean evaluation (compile, gate, measure) × planned
    assert basis.startswith(f"earlier runs: {planned['evaluations']} evaluations × ") and basis.endswith(" s")
    seconds = float(basis.split("× ")[1].removesuffix(" s"))
    assert 0.001 < seconds < 30 and planned["estimate"]["run_s"] == pytest.approx(
        planned["evaluations"] * seconds, rel=0.06, abs=0.1
    )


@pytest.mark.parametrize("strategy", ["tpe", "coordinate", "lever"])
def test_model_based_and_local_strategies_tune_a_real_kernel(kerntune: Callable[..., CliResult], strategy: str) -> None:
    result = kerntune(
        "tune",
        str(EXAMPLES / "opencl_matmul"),
        "--strategy",
        strategy,
        "--budget",
        "6",
        "--json",
        env={"KERNTUNE_CONFIRM_ROUNDS": "0"},
    )
    assert result.code == 0, result.stderr
    report = result.json()
    assert report["run"]["strategy"] == strategy
    shape = report["shapes"][0]
    assert shape["winner"]["gate"]["outcome"] == "pass"
    assert 2 <= shape["counts"]["ok"] <= 6 + 1  # the budget, plus the default config measured as a baseline


def test_a_plateau_stops_a_random_search_and_says_so(kerntune: Callable[..., CliResult]) -> None:
    # Rounds of one config and one stale round allowed: the search stops at the first config that does not
    # beat the best by 2% (continuing through all 30 would need 29 successive 2% improvements).
    result = kerntune(
        "tune",
        str(EXAMPLES / "opencl_matmul"),
        "--strategy",
        "random",
        "--json",
        env={"KERNTUNE_PLATEAU_ROUND": "1", "KERNTUNE_PLATEAU_ROUNDS": "1", "KERNTUNE_CONFIRM_ROUNDS": "0"},
    )
    assert result.code == 0, result.stderr
    report = result.json()
    assert report["run"]["stop_reason"].startswith("plateau: 1 rounds of 1 configs")
    assert report["shapes"][0]["counts"]["ok"] < 30
