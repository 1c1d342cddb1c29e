"""The kernel laboratory's loop on the CPU, with Triton kernels in the interpreter (no timing claimed there) and an
OpenCL kernel on PoCL (timed by its profiling events):
capture a launch from a running program, replay it in the three modes, compare a correct variant, a wrong one
(validation fails and says where) and one with another signature, save the correct one into the source and run the
program with it; refusals for a kernel that reads what it writes (sustained), a corrupted capture, a capture from
another device, a source changed since the capture, and a closed session."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import DATA, KERNELS, CliResult

INTERPRET = {"TRITON_INTERPRET": "1"}


@pytest.fixture
def lab(tmp_path: Path) -> Path:
    """A copy of tests/data/lab: save rewrites the kernel file, never the repository's."""
    folder = tmp_path / "lab"
    shutil.copytree(DATA / "lab", folder)
    return folder


def _program(lab: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(lab / "program.py"), *args],
        capture_output=True,
        text=True,
        env={**__import__("os").environ, **INTERPRET, **(env or {})},
        check=True,
    )


def test_capture_replay_compare_save(kerntune: Callable[..., CliResult], lab: Path) -> None:
    before = _program(lab).stdout
    cap = lab / "cap"
    done = kerntune(
        "lab",
        "capture",
        "--kernel",
        "scale_add",
        "--nth",
        "2",
        "-o",
        str(cap),
        "--json",
        "--",
        "python",
        str(lab / "program.py"),
        env=INTERPRET,
    )
    assert done.code == 0, done.stderr
    manifest = done.json()
    assert manifest["grid"] == [4] and manifest["positional"] == ["x_ptr", "y_ptr", "out_ptr", "n"]
    assert manifest["arguments"]["ALPHA"] == {"kind": "scalar", "value": 3.0}  # the second launch's constexpr
    assert manifest["kernel"]["first_line"] == 8 and manifest["interpreted"] is True
    assert {p.name for p in cap.iterdir()} >= {"manifest.json", "inputs.safetensors", "outputs.safetensors"}

    for mode in ("isolated", "sustained", "replays"):
        result = kerntune("lab", "replay", str(cap), "--mode", mode, "--iterations", "2", "--repeats", "2", "--json")
        assert result.code == 0, result.stderr
        replayed = result.json()
        assert replayed["mode"] == mode and replayed["reproduces_capture"] is True
        assert replayed["timing_claimed"] is False  # the interpreter's time is no kernel time
    assert len(replayed["replay_means_ms"]) == 2

    ok = kerntune("lab", "compare", str(cap), "--variant", str(lab / "variant_ok.py"), "--iterations", "2", "--json")
    assert ok.code == 0 and ok.json()["validation"] == {"passed": True, "rule": "bitwise"}
    wrong = kerntune("lab", "compare", str(cap), "--variant", str(lab / "variant_wrong.py"), "--iterations", "2")
    assert wrong.code == 1 and "validation (bitwise) FAILED: out_ptr differs at [0]" in " ".join(wrong.stdout.split())
    config = kerntune("lab", "compare", str(cap), "--set", "BLOCK=64", "--iterations", "2", "--json")
    assert config.code == 0 and config.json()["overrides"] == {"BLOCK": 64}  # grid 4 × 64 still covers n
    assert config.json()["validation"]["passed"]
    _save_a_config(kerntune, lab, cap, before)
    profiled = kerntune("lab", "compare", str(cap), "--set", "BLOCK=64", "--counters")
    assert profiled.code == 2 and "--counters needs a GPU capture" in profiled.stderr
    unknown = kerntune("lab", "compare", str(cap), "--set", "BLOCK_Q=64")
    assert unknown.code == 2 and "no constexpr or launch option" in unknown.stderr
    other = kerntune("lab", "compare", str(cap), "--variant", str(lab / "variant_signature.py"))
    assert other.code == 2 and "has another signature" in other.stderr

    refused = kerntune("lab", "save", str(cap), "--variant", str(lab / "variant_wrong.py"))
    assert refused.code == 2 and "no passing comparison" in refused.stderr
    saved = kerntune("lab", "save", str(cap), "--variant", str(lab / "variant_ok.py"), "--json")
    assert saved.code == 0, saved.stderr
    assert "the loads in the other order" in (lab / "kernels.py").read_text()
    assert Path(saved.json()["backup"]).read_text() == (DATA / "lab" / "kernels.py").read_text()
    assert _program(lab).stdout == before  # the program runs the saved kernel and computes the same
    again = kerntune("lab", "save", str(cap), "--variant", str(lab / "variant_ok.py"))
    assert again.code == 2 and "changed since the capture" in again.stderr

    rows = [json.loads(line) for line in (cap / "history.jsonl").read_text().splitlines()]
    # Only what ran and what was written: refused saves and refused comparisons leave no row.
    assert [r["job"] for r in rows] == ["replay", "replay", "replay", "compare", "compare", "compare", "save", "save"]
    assert '{"BLOCK": 64}' in rows[6]["saved"] and "kernels.py" in rows[7]["saved"]
    closed = kerntune("lab", "close", str(cap), "--json")
    assert closed.code == 0 and set(closed.json()["removed"]) == {"inputs.safetensors", "outputs.safetensors"}
    assert {"manifest.json", "history.jsonl", "logs", "backups"} <= set(closed.json()["kept"])
    gone = kerntune("lab", "replay", str(cap))
    assert gone.code == 2 and "was closed" in gone.stderr


def _save_a_config(kerntune: Callable[..., CliResult], lab: Path, cap: Path, before: str) -> None:
    """A --set variant goes where the program reads its config: the table entry of the captured launch's key (the
    capture recorded the Dispatcher selection that fed the launch); the program then runs it."""
    dispatch = json.loads((cap / "manifest.json").read_text())["dispatch"]
    assert dispatch["kind"] == "default" and dispatch["fields"]["n"] == 100 and dispatch["config"] == {"BLOCK": 32}
    table = lab / "table.json"
    nowhere = kerntune("lab", "save", str(cap), "--set", "BLOCK=64")
    assert nowhere.code == 2 and "give --table" in nowhere.stderr
    untested = kerntune("lab", "save", str(cap), "--set", "BLOCK=16", "--table", str(table))
    assert untested.code == 2 and "no passing comparison" in untested.stderr and not table.exists()
    saved = kerntune("lab", "save", str(cap), "--set", "BLOCK=64", "--table", str(table), "--json")
    assert saved.code == 0, saved.stderr
    (entry,) = json.loads(table.read_text())["entries"]
    assert entry["config"] == {"BLOCK": 64} and entry["status"] == "measured" and entry["key"] == dispatch["fields"]
    run = _program(lab, str(table), env={"KERNTUNE_LOG_DISPATCH": "1"})
    assert run.stdout == before and '-> exact {"BLOCK": 64}' in run.stderr, run.stderr
    table.write_text("{not json")
    broken = kerntune("lab", "save", str(cap), "--set", "BLOCK=64", "--table", str(table))
    assert broken.code == 2 and "will not overwrite" in broken.stderr and table.read_text() == "{not json"
    table.unlink()


def test_the_same_loop_for_an_opencl_kernel_on_pocl(kerntune: Callable[..., CliResult], lab: Path) -> None:
    """pyopencl's Kernel call is captured the same way; PoCL's profiling events time it (timing claimed)."""
    program = [sys.executable, str(lab / "opencl_program.py")]
    before = subprocess.run(program, capture_output=True, text=True, check=True).stdout
    cap = lab / "ocl"
    done = kerntune(
        "lab",
        "capture",
        "--kernel",
        "axpy",
        "--nth",
        "2",
        "-o",
        str(cap),
        "--json",
        "--",
        "python",
        str(lab / "opencl_program.py"),
    )
    assert done.code == 0, done.stderr
    manifest = done.json()
    assert (manifest["grid"], manifest["local"]) == ([1024], [64])
    assert manifest["arguments"]["alpha"] == {"kind": "scalar", "dtype": "float32", "value": 2.0}
    assert manifest["kernel"]["file"] == str((lab / "opencl_kernels.py").resolve())
    for mode in ("isolated", "sustained", "replays"):
        result = kerntune("lab", "replay", str(cap), "--mode", mode, "--iterations", "5", "--repeats", "2", "--json")
        assert result.code == 0, result.stderr
        assert result.json()["timing_claimed"] is True and result.json()["reproduces_capture"] is True
        assert result.json()["median_ms"] > 0
    ok = kerntune("lab", "compare", str(cap), "--variant", str(lab / "axpy_ok.cl"), "--iterations", "5", "--json")
    assert ok.code == 0 and ok.json()["validation"]["passed"] and ok.json()["ratio"] > 0
    side = ok.json()["interleaved"]  # the ratio is the two timed launch by launch beside each other
    assert side["pairs"] == 5 and side["ci"][0] <= ok.json()["ratio"] <= side["ci"][1] and "A B B A" in side["order"]
    slow = kerntune("lab", "compare", str(cap), "--variant", str(lab / "axpy_slow.cl"), "--iterations", "6")
    assert slow.code == 0, slow.stderr  # the same output, 4,000 more steps of arithmetic per element
    line = " ".join(slow.stdout.split())
    found = re.search(r"time ratio variant/original ([\d.]+) \(95% CI ([\d.]+)", line)
    assert found, line
    ratio, low = (float(v) for v in found.groups())
    assert ratio > 2 and low > 1, line
    wrong = kerntune("lab", "compare", str(cap), "--variant", str(lab / "axpy_wrong.cl"), "--iterations", "5")
    assert wrong.code == 1 and "FAILED: out differs at [0]" in " ".join(wrong.stdout.split())
    bytes_only = kerntune("lab", "compare", str(cap), "--variant", str(lab / "axpy_ok.cl"), "--rtol", "1e-3")
    assert bytes_only.code == 2 and "bitwise" in bytes_only.stderr
    saved = kerntune("lab", "save", str(cap), "--variant", str(lab / "axpy_ok.cl"), "--json")
    assert saved.code == 0, saved.stderr
    assert "the loads in the other order" in (lab / "opencl_kernels.py").read_text()
    assert subprocess.run(program, capture_output=True, text=True, check=True).stdout == before


def test_refusals(kerntune: Callable[..., CliResult], lab: Path) -> None:
    acc = lab / "acc"
    done = kerntune(
        "lab",
        "capture",
        "--kernel",
        "accumulate",
        "--tensors",
        "all",
        "-o",
        str(acc),
        "--json",
        "--",
        "python",
        str(lab / "program.py"),
        env=INTERPRET,
    )
    assert done.code == 0 and done.json()["others"]["count"] >= 1  # scope all: the program's other tensors too
    sustained = kerntune("lab", "replay", str(acc), "--mode", "sustained", "--iterations", "2")
    assert sustained.code == 2 and "reads what it writes" in sustained.stderr
    assert kerntune("lab", "replay", str(acc), "--iterations", "2").code == 0  # isolated restores before every launch
    assert "dispatch" not in done.json()  # its BLOCK equals the dispatcher's, but it is another kernel's launch
    undispatched = kerntune("lab", "save", str(acc), "--set", "BLOCK=64", "--table", str(lab / "t.json"))
    assert undispatched.code == 2 and "did not come from a kerntune Dispatcher" in undispatched.stderr

    missing = kerntune(
        "lab",
        "capture",
        "--kernel",
        "nope",
        "-o",
        str(lab / "none"),
        "--",
        "python",
        str(lab / "program.py"),
        env=INTERPRET,
    )
    assert missing.code == 2 and "nope launched 0 times" in missing.stderr
    assert "launched: " in missing.stderr and "scale_add ×" in missing.stderr  # what the program did launch
    assert not (lab / "none" / "manifest.json").exists()
    exists = kerntune(
        "lab", "capture", "--kernel", "accumulate", "-o", str(acc), "--", "python", str(lab / "program.py")
    )
    assert exists.code == 2 and "exists" in exists.stderr

    corrupted = lab / "corrupted"
    shutil.copytree(acc, corrupted)
    with (corrupted / "inputs.safetensors").open("ab") as handle:
        handle.write(b"x")
    bad = kerntune("lab", "replay", str(corrupted))
    assert bad.code == 2 and "does not match its manifest" in bad.stderr

    foreign = lab / "foreign"
    shutil.copytree(acc, foreign)
    manifest = json.loads((foreign / "manifest.json").read_text())
    manifest["device"] = {"type": "cuda", "name": "NVIDIA Z100", "arch": "sm_99", "compute_units": 999}
    (foreign / "manifest.json").write_text(json.dumps(manifest))
    elsewhere = kerntune("lab", "replay", str(foreign))
    assert elsewhere.code == 2 and "captured on NVIDIA Z100" in elsewhere.stderr
    (foreign / "manifest.json").write_text("{not json")
    broken = kerntune("lab", "replay", str(foreign))
    assert broken.code == 2 and "not a readable kerntune capture" in broken.stderr


def test_a_replayed_binary_is_inspected_like_kerntune_inspect() -> None:
    """Resources of the compiled kernel a replay ran: Triton's figures, then the SASS census (matrix instructions)
    and occupancy — here on the demo's matmul cross-compiled for sm_90; an arch with no ISA model is said."""
    import importlib.util

    from kerntune.backends.triton_cross import cross_compile
    from kerntune.lab.inspect_launch import launch_resources

    loaded = importlib.util.spec_from_file_location("lab_mm", KERNELS / "triton_gemm" / "spec.py")
    assert loaded is not None and loaded.loader is not None
    mm = importlib.util.module_from_spec(loaded)
    loaded.loader.exec_module(mm)
    pointers = {
        "a_ptr": "*bf16",
        "b_ptr": "*bf16",
        "c_ptr": "*bf16",
        "bias_ptr": "*bf16",
        "ws_ptr": "*fp32",
        "lock_ptr": "*i32",
    }
    scalars = (
        "M",
        "N",
        "K",
        "stride_am",
        "stride_ak",
        "stride_bk",
        "stride_bn",
        "stride_cm",
        "stride_cn",
        "stride_ab",
        "stride_bb",
        "stride_cb",
    )
    constexprs = {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 8, "SPLIT_K": 1, "FUSED": 0, "HAS_BIAS": 0}
    signature = {**pointers, **dict.fromkeys(scalars, "i32"), **dict.fromkeys(constexprs, "constexpr")}
    compiled = cross_compile(mm.matmul_kernel, signature, constexprs, "sm_90", {"num_warps": 4, "num_stages": 2})
    seen = launch_resources(compiled, "sm_90")
    assert seen is not None and seen["matrix_instructions"] > 0 and seen["num_warps"] == 4
    assert 0 < seen["occupancy"]["theoretical_pct"] <= 100 and seen["occupancy"]["blocks_per_sm"] >= 1
    unknown = launch_resources(compiled, "NVIDIA H200")
    assert unknown is not None and "no ISA model" in unknown["inspect_error"] and "instructions" not in unknown
