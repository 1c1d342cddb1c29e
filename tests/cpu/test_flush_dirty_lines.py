"""The flush experiment's reading of a profiler trace (the claims check's,
benchmarks/measurement-trust/claims_check.py): launches split after any of the three flushes (a fill, a fill then a
read of another buffer, a read alone), and the per-side differences between flushes taken round by round
(benchmarks/measurement-trust/flush_dirty_lines.py)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import load_benchmark

pytest.importorskip("torch")
pytest.importorskip("triton")
flush_dirty_lines = load_benchmark("flush_dirty_lines")
claims_check = load_benchmark("claims_check")

FILL = (
    "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<unsigned char>, std::array<char*, 1ul> >"
)
SUM = "flush_read_kernel"
CUBLAS_SPLIT_K = "void cublasLt::splitKreduce_kernel<32, 16, int, float, __nv_bfloat16>"


def _trace(launches: list[tuple[str, list[tuple[str, float]]]]) -> list[dict[str, Any]]:
    """Each launch after its flush: ``write`` a fill, ``read`` the read kernel, ``write-read`` both."""
    events, ts = [], 0.0
    for kind, kernels in launches:
        flush = {"write": [FILL], "read": [SUM], "write-read": [FILL, SUM]}[kind]
        for name in flush:
            events.append({"ph": "X", "cat": "kernel", "name": name, "ts": ts, "dur": 50.0})
            ts += 60.0
        for name, dur in kernels:
            events.append(
                {"ph": "X", "cat": "gpu_memset" if name == "memset" else "kernel", "name": name, "ts": ts, "dur": dur}
            )
            ts += dur + 1.0
    return list(reversed(events))  # the reader orders them by time itself


def test_launches_are_split_after_any_flush_and_their_own_kernels_summed() -> None:
    launches = [
        ("write", [("nvjet_gemm", 40.0)]),
        ("write-read", [("nvjet_gemm", 30.0)]),
        ("read", [("memset", 1.0), ("gemm", 29.0), (CUBLAS_SPLIT_K, 2.0)]),
        ("write", [("read_kernel", 33.0)]),
    ]
    assert claims_check.call_times_us(_trace(launches), 4) == [40.0, 30.0, 32.0, 33.0]
    with pytest.raises(RuntimeError, match="cannot be split"):
        claims_check.call_times_us(_trace(launches), 5)


def test_the_flush_differences_are_taken_round_by_round() -> None:
    times = {
        "write": {"torch": [40.0, 41.0, 60.0]},
        "write-read": {"torch": [30.0, 32.0, 50.0]},
        "read": {"torch": [31.0, 31.0, 31.0]},
    }
    found = flush_dirty_lines.summarize(times, 117_440_512)
    assert found["median_us"]["write"]["torch"] == 41.0
    assert found["write_minus_write_read_us"]["torch"] == 10.0  # differences 10, 9, 10
    assert found["write_minus_read_us"]["torch"] == 10.0  # 9, 10, 29
    assert found["weight_tb_s"]["write-read"]["torch"] == pytest.approx(117_440_512 / 32.0 / 1e6)
