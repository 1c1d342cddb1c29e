"""kerntune verify's account of what a served program missed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest


def test_verify_gives_a_missed_gemm_key_the_device_time_of_its_library_calls() -> None:
    from kerntune.deploy.verify import _gemm_time
    from kerntune.runtime.corpus import CorpusLine

    gemms = [
        CorpusLine(op="aten::mm", shape={"M": 16, "N": 64, "K": 64}, layout="NT", bias=0, calls=3, device_us=30.0),
        CorpusLine(op="aten::mm", shape={"M": 16, "N": 64, "K": 64}, layout="NN", bias=0, calls=1, device_us=9.0),
    ]
    key = {"op": "triton_matmul", "M": 16, "N": 64, "K": 64, "layout": "NT", "bias": 0}
    assert _gemm_time(key, {"gemms": gemms}) == 30.0  # its layout only
    assert _gemm_time({**key, "M": 32}, {"gemms": gemms}) is None  # the profile has none of it
    assert _gemm_time({"op": "rmsnorm", "M": 16}, {"gemms": gemms}) is None  # not a GEMM's key


def _report(calls: int) -> list[dict[str, object]]:
    key = 'K=64;M=16;N=64;bias=0;layout="NT";op="triton_matmul"'
    return [
        {
            "name": "matmul",
            "table": "t.json",
            "disabled": None,
            "entries": {key: "measured"},
            "decisions": [
                {
                    "kind": "exact",
                    "key": key,
                    "calls": calls,
                    "config": {"BLOCK_M": 16},
                    "fields": {"op": "triton_matmul", "M": 16, "N": 64, "K": 64, "layout": "NT", "bias": 0},
                }
            ],
        }
    ]


def test_verify_ties_an_entry_to_the_kernels_its_own_calls_launched() -> None:
    from kerntune.deploy.verify import engagement
    from kerntune.runtime.corpus import CorpusLine

    line = CorpusLine(
        op="aten::mm", shape={"M": 16, "N": 64, "K": 64}, dtype="bfloat16", layout="NT", bias=0, calls=3, device_us=30.0
    )
    other = CorpusLine(
        op="aten::mm", shape={"M": 32, "N": 64, "K": 64}, dtype="bfloat16", layout="NT", bias=0, calls=5, device_us=50.0
    )
    kernels = [
        {"name": "matmul_kernel", "launches": 8, "device_us": 60.0},
        {"name": "nvjet_tst_64x8", "launches": 1, "device_us": 20.0},
    ]
    served = {
        "gemms": [line, other],
        "kernels": kernels,
        "gemm_kernels": {line.identity: {"matmul_kernel": 3}, other.identity: {"matmul_kernel": 5}},
    }
    found = engagement(_report(3), served)
    (row,) = found["entries"]
    assert row["engaged"] and row["profiled_by"] == "operator"  # its 3 calls, not all 8 launches of the kernel
    assert row["profiled_launches"] == 3 and row["other_launches"] == 0
    assert found["untied_launches"] == 0  # every launch of the kernel is some operator call's

    fell_back = {**served, "gemm_kernels": {line.identity: {"nvjet_tst_64x8": 3}}}
    found = engagement(_report(3), fell_back)
    assert not found["entries"][0]["engaged"] and found["never_engaged"]  # served, but cuBLAS ran its calls
    assert found["entries"][0]["other_kernels"] == ["nvjet_tst_64x8"]

    replayed = {"gemms": [], "kernels": kernels, "gemm_kernels": {}}  # CUDA-graph replays: no operator encloses
    found = engagement(_report(3), replayed)
    (row,) = found["entries"]
    assert found["untied_launches"] == 8
    assert row["engaged"] and row["profiled_by"] == "kernel name" and row["profiled_launches"] == 8
    assert engagement(_report(0), served)["never_engaged"]  # served no call


def test_verify_hands_over_the_engagement_before_the_end_to_end_ab(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The A/B after the profiled run takes minutes on a compiled model: a caller that stops it (a time limit, the
    user) must already hold what engaged."""
    from kerntune.deploy import verify as verify_module
    from kerntune.settings import Settings
    from kerntune.store import Store

    def profiled(command: list[str], env: dict[str, str]) -> dict[str, Any]:
        (Path(env["KERNTUNE_VERIFY_OUT"]) / "dispatch-1.json").write_text(json.dumps(_report(3)))
        return {"exit_code": 0, "gpu": False, "kernels": [], "gemms": [], "stderr": ""}

    handed: list[dict[str, Any]] = []

    def stopped(*args: object, **kwargs: object) -> None:
        assert handed, "the A/B started before the engagement was handed over"
        raise KeyboardInterrupt

    monkeypatch.setattr(verify_module, "profile_program", profiled)
    monkeypatch.setattr(verify_module, "run_ab", stopped)
    with pytest.raises(KeyboardInterrupt):
        verify_module.verify(["prog"], Store(tmp_path / "store"), Settings.from_env(), engaged=handed.append)
    (found,) = handed
    assert found["entries"][0]["engaged"] and found["never_engaged"] == [] and "end_to_end" not in found


def test_an_entry_shows_its_device_time_a_call_in_place_beside_the_tunes(tmp_path: Path) -> None:
    from kerntune.deploy.verify import engagement
    from kerntune.runtime.corpus import CorpusLine

    table = tmp_path / "t.json"
    fields = {"op": "triton_matmul", "M": 16, "N": 64, "K": 64, "layout": "NT", "bias": 0}
    entry = {"key": fields, "config": {"BLOCK_M": 16}, "median_ms": 0.02, "library_ratio": 0.8}
    table.write_text(json.dumps({"schema": 1, "entries": [entry]}))
    report = _report(4)
    report[0]["table"] = str(table)
    shape = {"M": 16, "N": 64, "K": 64}
    line = CorpusLine(op="aten::mm", shape=shape, dtype="bfloat16", layout="NT", bias=0, calls=4, device_us=120.0)
    profile = {"gemms": [line], "kernels": [], "gemm_kernels": {line.identity: {"matmul_kernel": 4}}}
    (row,) = engagement(report, profile)["entries"]
    assert row["device_us_per_call"] == 30.0  # slower in place than the 20 µs the tune measured
    assert row["tuned_us"] == pytest.approx(20.0) and row["tuned_library_us"] == pytest.approx(25.0)
    report[0]["table"] = str(tmp_path / "gone.json")  # a table no longer there: the tune's figures are unknown
    (row,) = engagement(report, profile)["entries"]
    assert row["device_us_per_call"] == 30.0 and row["tuned_us"] is None


@pytest.mark.parametrize("bad", [True, "0.02", 10**400, float("inf"), 0, -1.0, None])
def test_a_tables_bad_median_gives_no_tuned_figure(tmp_path: Path, bad: object) -> None:
    from kerntune.deploy.verify import _tuned_times
    from kerntune.runtime.table import entry_key

    fields = {"op": "k", "M": 16}
    table = tmp_path / "t.json"
    entry = {"key": fields, "config": {}, "median_ms": bad, "library_ratio": 0.9}
    table.write_text(json.dumps({"schema": 1, "entries": [entry]}, allow_nan=True))
    assert _tuned_times(str(table), entry_key(fields), {}) == {"tuned_us": None, "tuned_library_us": None}
