"""Scope's reading of profiler traces recorded on the H200 (``kerntune scope --region step --trace`` on
examples/hf_llama at its H200 size, 2026-12-01; trimmed by tests/data/scope_h200/trim.py): decode at batch 16 and
prefill at 512 tokens, eager and compiled. The weight upload falls outside the marked window, the classes add up
to the window's device time, the busy fraction tells a host-bound step from a device-bound one, and the GEMM
corpus lines carry shapes, dtype, layout and calls."""

from __future__ import annotations

from pathlib import Path

import pytest

from kerntune.scope.trace import WHOLE_RUN, Window, analyze, device_us_per_range, load_trace

TRACES = Path(__file__).resolve().parents[2] / "data" / "scope_h200"
STEP = Window(region="step")
STEPS = 20  # each recorded run timed 20 steps
DECODE_GEMMS = {  # (M, N, K): calls in 20 steps of 4 layers — q and o, gate and up, k and v, down, the LM head
    (16, 4096, 4096): 160,
    (16, 14336, 4096): 160,
    (16, 1024, 4096): 160,
    (16, 4096, 14336): 80,
    (16, 32000, 4096): 20,
}


def _analyzed(name: str, window: Window = STEP) -> dict:
    return analyze(load_trace(TRACES / f"{name}.trace.json.gz"), window)


@pytest.mark.parametrize("name", ["decode-none", "decode-reduce-overhead", "prefill-none", "prefill-default"])
def test_the_window_leaves_the_weight_upload_out_and_its_classes_add_up(name: str) -> None:
    whole, window = _analyzed(name, WHOLE_RUN), _analyzed(name)
    assert window["window"]["spans"] == STEPS
    assert abs(sum(window["classes"].values()) - window["device_us"]) < 1e-6
    assert whole["classes"]["memcpy"] > 0.25 * whole["device_us"]  # the whole run: the weight upload, 28-92%
    assert window["classes"].get("memcpy", 0) < 0.01 * window["device_us"]  # the steady state: none of it
    assert window["classes"]["vendor BLAS"] > 0.5 * window["device_us"]  # cuBLAS's nvjet kernels, B transposed
    assert all(k["name"] != "step" and "CompiledFxGraph" not in k["name"] for k in window["kernels"])
    assert 0 < window["busy"] <= 1 and window["window"]["wall_us"] >= window["device_us"] * window["busy"]


def test_eager_decode_is_host_bound_and_under_cuda_graphs_device_bound() -> None:
    eager, graphs = _analyzed("decode-none"), _analyzed("decode-reduce-overhead")
    assert eager["busy"] < 0.3 and eager["verdict"].startswith("host-bound")
    assert "under the profiler" in eager["verdict"]
    assert graphs["busy"] > 0.8 and graphs["verdict"].startswith("device-bound")
    assert graphs["window"]["wall_us"] < eager["window"]["wall_us"] / 4  # 0.9 ms a step against 7.5 (profiled)
    assert graphs["classes"]["Triton (Inductor)"] > 0 and "Triton (Inductor)" not in eager["classes"]
    assert graphs["gemms"] == []  # a graph replay records no operators: the corpus comes from eager runs


def test_a_host_that_runs_ahead_is_not_counted_once_per_queued_step() -> None:
    # Compiled prefill: the host queues each step in ~2 ms, the device takes ~27 ms; the stretched spans overlap,
    # and the window is their union (a sum read 4.6 s for 0.54 s of steps, and a busy fraction of 12%).
    found = _analyzed("prefill-default")
    assert found["window"]["wall_us"] < 1.02 * found["device_us"] / found["busy"] + 1
    assert found["busy"] > 0.95 and found["verdict"].startswith("device-bound")
    assert found["window"]["wall_us"] / STEPS < 30e3


def test_the_gemm_lines_carry_shape_dtype_layout_and_calls() -> None:
    decode, prefill = _analyzed("decode-none"), _analyzed("prefill-none")
    mm = {(g.shape["M"], g.shape["N"], g.shape["K"]): g for g in decode["gemms"] if g.op == "aten::mm"}
    assert {shape: g.calls for shape, g in mm.items()} == DECODE_GEMMS
    assert all(g.dtype == "bfloat16" and g.layout == "NT" and g.bias == 0 and g.device_us for g in mm.values())
    gemm_time = sum(g.device_us for g in mm.values())
    assert gemm_time == pytest.approx(decode["classes"]["vendor BLAS"], rel=0.01)  # each mm's kernels, found
    big = {(g.shape["M"], g.shape["N"], g.shape["K"]) for g in prefill["gemms"] if g.op == "aten::mm"}
    assert {(16 * 512, n, k) for (_, n, k) in DECODE_GEMMS} <= big


def test_each_gemm_line_names_the_kernels_its_calls_launched() -> None:
    found = _analyzed("decode-none")
    lines = {(g.shape["M"], g.shape["N"], g.shape["K"]): g for g in found["gemms"] if g.dtype == "bfloat16"}
    for shape, calls in DECODE_GEMMS.items():
        ran = found["gemm_kernels"][lines[shape].identity]
        assert sum(ran.values()) >= calls  # every call launched at least one kernel, tied to it by External id
        assert all("nvjet" in name or "gemm" in name.lower() or "splitK" in name for name in ran), ran


@pytest.mark.parametrize("name", ["decode-none", "decode-reduce-overhead", "prefill-none", "prefill-default"])
def test_device_time_per_marked_range_is_the_window_s_device_time_split_by_step(name: str) -> None:
    """The profiler's per-range device time (the lab's second timer): one figure per ``step`` range, in order,
    summing to the window's device time, each step close to the others (a steady state)."""
    events = load_trace(TRACES / f"{name}.trace.json.gz")
    per = device_us_per_range(events, "step")
    assert len(per) == STEPS and abs(sum(per) - analyze(events, STEP)["device_us"]) < 1e-6 * sum(per)
    middle = sorted(per)[STEPS // 2]
    assert all(0.8 * middle < x < 1.2 * middle for x in per), per
