"""Triton and torch on a CPU machine: the interpreter (and eager torch) check correctness; no timing is claimed."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.conftest import EXAMPLES, CliResult, has_gpu

pytest.importorskip("triton")
pytestmark = pytest.mark.skipif(has_gpu(), reason="the interpreter path is for machines without a GPU")


def test_matmul_in_the_interpreter_gates_and_claims_no_timing(kerntune: Callable[..., CliResult]) -> None:
    result = kerntune("tune", str(EXAMPLES / "triton_matmul"), "--shape", "M=64,N=64,K=128", "--dtype", "float16",
                      "--strategy", "random", "--budget", "3", "--json")
    assert result.code == 0, result.stderr
    report = result.json()
    assert report["run"]["target"]["claims_timing"] is False
    shape = report["shapes"][0]
    assert shape["winner"] is None and shape["timing_claimed"] is False
    checked = [b for b in shape["baselines"] if b["status"] == "ok"]
    assert any(b["label"] == "torch.matmul" for b in checked)
    assert all("measurement" not in b for b in checked)
    assert shape["counts"]["ok"] >= 3


def test_wrong_kernel_is_caught_by_the_gate_in_the_interpreter(kerntune: Callable[..., CliResult]) -> None:
    from tests.conftest import SPECS, failures_by_config

    result = kerntune("tune", str(SPECS / "faults_triton"), "--shape", "N=2048", "--json",
                      env={"KERNTUNE_CANDIDATE_TIMEOUT_S": "10"})
    assert result.code == 0, result.stderr
    failed = failures_by_config(result.json())
    assert failed["VARIANT=4,BLOCK=1024"] == "wrong-result"
    assert failed["VARIANT=3,BLOCK=1024"] == "hang"
    assert failed["oom"] == "oom"


def test_decorator_form_tunes_its_triton_configs(kerntune: Callable[..., CliResult]) -> None:
    from tests.conftest import SPECS

    result = kerntune("tune", str(SPECS / "decorator"), "--json")
    assert result.code == 0, result.stderr
    shape = result.json()["shapes"][0]
    assert shape["counts"] == {"ok": 2}  # the default (first config) and the second config
    (default,) = [b["config"] for b in shape["baselines"]]
    assert default["BLOCK"] == 128 and default["num_warps"] == 4


def test_library_ops_as_candidates_on_the_torch_backend(kerntune: Callable[..., CliResult]) -> None:
    from tests.conftest import SPECS

    result = kerntune("tune", str(SPECS / "torch_ops"), "--json")
    assert result.code == 0, result.stderr
    report = result.json()
    assert report["run"]["target"]["backend"] == "torch" and report["run"]["target"]["claims_timing"] is False
    assert report["shapes"][0]["counts"] == {"ok": 3}
