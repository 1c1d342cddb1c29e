"""The laboratory on a library operator's call, on the CPU: capture the nth ``aten::addmm`` of a program written
for torch, not for kerntune (``nn.Linear`` with a bias); replay it in the three modes, where the library chooses its
kernel again; compare kerntune's Triton GEMM at a config on the captured inputs (Triton's interpreter: validated,
no timing claimed); refusals for a save that was never timed, a spec that cannot take the call, a config its
constraints refuse, an unknown operator, a capture over the size limit, and a --match nothing matches (the miss
names the calls that were made)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import DATA, KERNELS, CliResult, gemm_variant

pytest.importorskip("triton")

APP = DATA / "served" / "linear_app.py"
SPEC = KERNELS / "triton_gemm"
CONFIG = ("--set", "BLOCK_M=32", "--set", "BLOCK_N=64", "--set", "num_stages=2")


def _capture(
    kerntune: Callable[..., CliResult], out: Path, *options: str, env: dict[str, str] | None = None
) -> CliResult:
    return kerntune("lab", "capture", *options, "-o", str(out), "--json", "--", "python", str(APP), env=env)


def test_capture_replay_and_compare_an_aten_call(kerntune: Callable[..., CliResult], tmp_path: Path) -> None:
    cap = tmp_path / "addmm"
    done = _capture(kerntune, cap, "--kernel", "aten::addmm", "--nth", "2", "--match", "float16")
    assert done.code == 0, done.stderr
    manifest = done.json()
    assert manifest["program_exit"] == 0  # the program ran to its end, its own float64 checks passed
    assert manifest["kernel"]["language"] == "aten" and manifest["kernel"]["overload"] == "aten::addmm"
    # nn.Linear's weight reaches addmm as a transpose view: recorded in the call and in the strides
    assert manifest["kernel"]["call"] == "aten::addmm(64:float16, 32x64:float16, 64x64:float16:T)"
    assert manifest["positional"] == ["self", "mat1", "mat2"]
    assert manifest["arguments"]["mat2"]["strides"] == [1, 64] and manifest["device"]["type"] == "cpu"
    assert set(manifest["outputs_table"]["arguments"]) == {"self", "mat1", "mat2", "result"}

    for mode in ("isolated", "sustained", "replays"):
        replayed = kerntune("lab", "replay", str(cap), "--mode", mode, "--iterations", "2", "--repeats", "2", "--json")
        assert replayed.code == 0, replayed.stderr
        result = replayed.json()
        assert result["mode"] == mode and result["reproduces_capture"] is True  # the library, chosen again
        assert result["timing_claimed"] is False

    compared = kerntune("lab", "compare", str(cap), "--spec", str(SPEC), *CONFIG, "--iterations", "2", "--json")
    assert compared.code == 0, compared.stderr
    row = compared.json()
    assert row["validation"]["passed"] and row["validation"]["rule"].startswith("relative L2 error <= 0.01")
    assert 0 <= row["validation"]["error"] < 0.01  # fp32 accumulation rounded once: equal to the library here
    assert row["served_key"] == ["float16", 32, 64, 64, "NT", 1]  # the key kerntune run would look up
    assert row["served_config"]["BLOCK_M"] == 32 and row["ratio"] is None  # the interpreter: no ratio claimed
    # the same spec, its served kernel's output off by 5%
    wrong = gemm_variant(tmp_path / "wrong", "serve", "\n    return c\n", "\n    return c.mul_(1.05)\n")
    failed = kerntune("lab", "compare", str(cap), "--spec", str(wrong), *CONFIG, "--iterations", "1", "--json")
    assert failed.code == 1 and failed.json()["validation"]["argument"] == "result"
    assert 0.04 < failed.json()["validation"]["error"] < 0.06  # what the spec's kernel computed, compared

    untimed = kerntune("lab", "save", str(cap), "--spec", str(SPEC), *CONFIG, "--table", str(tmp_path / "t.json"))
    assert untimed.code == 2 and "no timing is claimed" in untimed.stderr and not (tmp_path / "t.json").exists()
    untried = kerntune(
        "lab", "save", str(cap), "--spec", str(SPEC), "--set", "BLOCK_M=16", "--table", str(tmp_path / "t.json")
    )
    assert untried.code == 2 and "no passing comparison" in untried.stderr
    refused = kerntune("lab", "compare", str(cap), "--spec", str(SPEC), "--iterations", "1")
    assert refused.code == 2 and "violates the constraint 'BLOCK_M <= M'" in refused.stderr  # the default's 128
    unknown = kerntune("lab", "compare", str(cap), "--spec", str(SPEC), "--set", "BLOCK_Q=1")
    assert unknown.code == 2 and "BLOCK_Q: not a parameter" in unknown.stderr
    source = kerntune("lab", "compare", str(cap), "--variant", str(APP))
    assert source.code == 2 and "is a library operator" in source.stderr

    rows = [json.loads(line) for line in (cap / "history.jsonl").read_text().splitlines()]
    assert [r["job"] for r in rows] == ["replay", "replay", "replay", "compare", "compare"]
    assert not rows[-1]["validation"]["passed"]


def test_a_call_the_spec_cannot_take_and_capture_refusals(kerntune: Callable[..., CliResult], tmp_path: Path) -> None:
    checks = tmp_path / "float64"  # the program's own float64 check: a dtype the Triton GEMM does not take
    done = _capture(kerntune, checks, "--kernel", "aten::mm", "--match", "float64")
    assert done.code == 0 and done.json()["kernel"]["call"].endswith(":float64:T)"), done.stderr
    declined = kerntune("lab", "compare", str(checks), "--spec", str(SPEC), *CONFIG)
    assert declined.code == 2 and "cannot take this call" in declined.stderr

    missed = _capture(kerntune, tmp_path / "none", "--kernel", "aten::mm", "--match", "bfloat16")
    assert missed.code == 2 and "aten::mm launched 0 times matching 'bfloat16'" in missed.stderr
    assert "aten::mm(32x64:float16, 64x16:float16) ×3" in missed.stderr  # the calls it did make, named
    assert not (tmp_path / "none").exists()
    large = _capture(kerntune, tmp_path / "large", "--kernel", "aten::addmm", env={"KERNTUNE_CAPTURE_MAX_MB": "0.001"})
    assert large.code == 2 and "over the capture limit" in large.stderr and not (tmp_path / "large").exists()
    nosuch = _capture(kerntune, tmp_path / "nosuch", "--kernel", "aten::no_such_op")
    assert nosuch.code == 2 and "no operator of that name" in nosuch.stderr
    overload = _capture(kerntune, tmp_path / "overload", "--kernel", "aten::mm.nope")
    assert overload.code == 2 and "has the overloads" in overload.stderr
    kernel_match = _capture(kerntune, tmp_path / "k", "--kernel", "scale_add", "--match", "x")
    assert kernel_match.code == 2 and "--match selects among an operator's calls" in kernel_match.stderr
