"""Scope's reading of a Kineto (Chrome) trace, on events written here in Kineto's schema — what a CUDA run's
trace holds: host ops and runtime calls, kernels and copies matched to them by ``correlation``, and the device-side
annotation ranges torch.compile draws. Each event is named for the hazard it checks."""

from __future__ import annotations

from typing import Any

from kerntune.scope.trace import Window, analyze, gemm_line, kernel_class, layout_letter


def _op(name: str, ts: float, dur: float, ext: int, **args: Any) -> dict[str, Any]:
    return {"ph": "X", "cat": "cpu_op", "name": name, "ts": ts, "dur": dur, "args": {"External id": ext, **args}}


def _launch(name: str, ts: float, corr: int, ext: int) -> dict[str, Any]:
    return {
        "ph": "X",
        "cat": "cuda_runtime",
        "name": name,
        "ts": ts,
        "dur": 5,
        "args": {"correlation": corr, "External id": ext},
    }


def _device(cat: str, name: str, ts: float, dur: float, corr: int) -> dict[str, Any]:
    return {"ph": "X", "cat": cat, "name": name, "ts": ts, "dur": dur, "args": {"correlation": corr}}


ADDMM = {
    "Input Dims": [[4096], [16, 4096], [4096, 4096], [], []],
    "Input Strides": [[1], [4096, 1], [1, 4096], [], []],
    "Input type": ["c10::BFloat16"] * 3 + ["Scalar", "Scalar"],
    "Concrete Inputs": ["", "", "", "1", "1"],
}


def _trace() -> list[dict[str, Any]]:
    events = [
        # The weight upload, before the steady state: a long copy that must not be device time of the window.
        _launch("cudaMemcpyAsync", 0, 1, 0),
        _device("gpu_memcpy", "Memcpy HtoD (Pageable -> Device)", 10, 90_000, 1),
    ]
    for step in range(2):
        t = 100_000 + step * 10_000
        events += [
            {"ph": "X", "cat": "user_annotation", "name": "decode", "ts": t, "dur": 4_000},
            # What torch.compile draws on the device timeline: a range, not work.
            {"ph": "X", "cat": "gpu_user_annotation", "name": "## Call CompiledFxGraph ##", "ts": t, "dur": 9_000},
            _op("aten::addmm", t + 10, 50, 10 + step, **ADDMM),
            _launch("cudaLaunchKernel", t + 20, 100 + step, 10 + step),
            _device("kernel", "nvjet_tst_64x8_64x16_4x1_v_bz_TNT", t + 1_000, 600, 100 + step),
            _launch("cuLaunchKernelEx", t + 100, 200 + step, 0),
            _device("kernel", "triton_poi_fused_add_0", t + 1_700, 100, 200 + step),
            _launch("cuLaunchKernelEx", t + 200, 300 + step, 0),
            _device("kernel", "matmul_kernel", t + 1_900, 300, 300 + step),
            # Launched inside the step, run after the host range ended: still the step's.
            _launch("cudaLaunchKernel", t + 3_990, 400 + step, 0),
            _device("kernel", "void at::native::vectorized_elementwise_kernel<4>", t + 4_500, 200, 400 + step),
        ]
    return events


def test_only_device_work_launched_in_the_window_counts_and_its_classes_add_up() -> None:
    found = analyze(_trace(), Window(region="decode"))
    assert found["window"]["spans"] == 2
    assert found["device_us"] == 2 * (600 + 100 + 300 + 200)  # no upload, no annotation range
    assert sum(found["classes"].values()) == found["device_us"]
    assert found["classes"] == {
        "vendor BLAS": 1200,
        "ATen native": 400,
        "Triton (user) or custom, driver-launched": 600,
        "Triton (Inductor)": 200,
    }
    whole = analyze(_trace())
    assert whole["classes"]["memcpy"] == 90_000  # the whole run: the upload is there, apart from kernels


def test_busy_fraction_and_verdict() -> None:
    found = analyze(_trace(), Window(region="decode"))
    # Each step: 4 ms of host range, stretched to the last kernel it launched (4.7 ms); 1.2 ms of device work.
    assert found["window"]["wall_us"] == 2 * 4_700
    assert abs(found["busy"] - 2_400 / 9_400) < 1e-9
    assert found["verdict"].startswith("host-bound") and "26%" in found["verdict"]


def test_gemms_carry_shape_layout_bias_calls_and_device_time() -> None:
    (gemm,) = analyze(_trace(), Window(region="decode"))["gemms"]
    assert (gemm.op, gemm.shape, gemm.dtype, gemm.layout, gemm.bias) == (
        "aten::addmm",
        {"M": 16, "N": 4096, "K": 4096},
        "bfloat16",
        "NT",
        1,
    )
    assert gemm.calls == 2 and gemm.device_us == 1200  # its own kernels, by External id


def test_skip_and_duration_bound_the_window() -> None:
    found = analyze(_trace(), Window(skip_s=0.1, duration_s=0.005))  # the first step only
    assert found["device_us"] == 1200


def test_layouts_classes_and_unreadable_operators() -> None:
    assert layout_letter([16, 64], [64, 1]) == "N" and layout_letter([64, 32], [1, 64]) == "T"
    assert layout_letter([64, 32], [2, 128]) is None  # neither: a strided view the spec cannot take
    assert layout_letter([1, 64], [1, 1]) == "N"  # one row: any row stride reads as row-major
    assert kernel_class("Cijk_Ailk_Bljk_BBS_BH") == "vendor BLAS"
    assert kernel_class("my_kernel", "cudaLaunchKernel") == "custom CUDA or HIP"
    assert kernel_class("flash_fwd_kernel") == "attention" and kernel_class("ncclDevKernel_AllReduce") == "NCCL"
    assert gemm_line({"name": "aten::mm", "args": {"Input Dims": [[16]]}}) is None
    beta0 = gemm_line({"name": "aten::addmm", "args": {**ADDMM, "Concrete Inputs": ["", "", "", "0", "1"]}})
    assert beta0 is not None and beta0.bias == 0


def test_a_kernel_replayed_in_a_cuda_graph_is_classed_by_its_own_launch() -> None:
    # A replay launches every kernel of the graph by one cudaGraphLaunch; the tuned Triton kernel's warm-up
    # launch (cuLaunchKernelEx, before the window) says what it is, where the replay alone would read "custom".
    events = [
        _launch("cuLaunchKernelEx", 10, 1, 0),
        _device("kernel", "matmul_tma_kernel", 20, 30, 1),
        {"ph": "X", "cat": "user_annotation", "name": "step", "ts": 1_000, "dur": 500},
        _launch("cudaGraphLaunch", 1_010, 2, 0),
        _device("kernel", "matmul_tma_kernel", 1_050, 40, 2),
        _device("kernel", "mystery_kernel", 1_100, 10, 2),
    ]
    found = analyze(events, Window(region="step"))
    assert found["classes"] == {"Triton (user) or custom, driver-launched": 40, "custom CUDA or HIP": 10}
