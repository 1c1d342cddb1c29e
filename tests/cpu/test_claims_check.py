"""The independent claims check's own reading of a profiler trace (benchmarks/measurement-trust/claims_check.py): calls
split at the flush's one-byte fill records, each call's kernels summed, block ratios, and the report's printed ratio."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT, benchmark_script, load_benchmark

pytest.importorskip("torch")
claims_check = load_benchmark("claims_check")

FLUSH = (
    "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<unsigned char>, std::array<char*, 1ul> >"
)


def _trace(calls: list[list[float]]) -> list[dict[str, Any]]:
    events, ts = [{"ph": "X", "cat": "cpu_op", "name": "aten::fill_", "ts": 0.0, "dur": 5.0}], 10.0
    for kernels in calls:
        events.append({"ph": "X", "cat": "kernel", "name": FLUSH, "ts": ts, "dur": 90.0})
        ts += 100.0
        for i, dur in enumerate(kernels):  # a split-K winner's own bf16 zero fill counts as its work, and a
            name = "void at::native::FillFunctor<c10::BFloat16>" if i else "matmul_kernel"  # library's memset
            events.append({"ph": "X", "cat": "gpu_memset" if i == 2 else "kernel", "name": name, "ts": ts, "dur": dur})
            ts += dur + 1.0
    return list(reversed(events))  # the reader orders them by time itself


def test_calls_are_split_at_the_flush_and_their_kernels_summed() -> None:
    calls = [[100.0], [98.0, 2.0], [101.0], [97.0, 2.0, 1.0]] * 3 + [[200.0], [101.0], [99.0], [200.0]]
    times = claims_check.call_times_us(_trace(calls), len(calls))
    assert times[:4] == [100.0, 100.0, 101.0, 100.0]
    found = claims_check.block_ratio(times)
    assert found["blocks"] == 4 and found["ratio"] == pytest.approx(1.005, abs=1e-9)  # median of 1.005 ×3, 0.5
    assert found["ci"][0] <= found["ratio"] <= found["ci"][1]
    with pytest.raises(RuntimeError, match="flush records"):
        claims_check.call_times_us(_trace(calls), len(calls) + 1)
    with pytest.raises(RuntimeError, match="no kernel of its own"):
        claims_check.call_times_us(_trace([[100.0], []]), 2)


def test_a_clean_flushs_read_after_the_fill_is_not_the_calls_time() -> None:
    read = "flush_read_kernel"
    events = _trace([[100.0], [101.0]])
    fills = sorted((e for e in events if e["name"] == FLUSH), key=lambda e: e["ts"])
    for fill in fills:  # the read runs after each fill, before the call's own kernels
        events.append({"ph": "X", "cat": "kernel", "name": read, "ts": fill["ts"] + 91.0, "dur": 8.0})
    assert claims_check.call_times_us(events, 2) == [100.0, 101.0]


def test_blocks_are_read_back_by_the_placement_they_ran_on() -> None:
    # Blocks take placements 0, 1, 2 in turn: placement 1's blocks are the 2nd, 5th and 8th.
    ratios = [1.00, 1.10, 0.90, 1.02, 1.12, 0.92, 1.01, 1.11, 0.91]
    assert claims_check.placement_ratios(ratios, 3) == pytest.approx([1.01, 1.11, 0.91])


def test_the_printed_ratio_is_the_winners_finalist_row() -> None:
    found = {
        "winner": {"id": 7},
        "finalists": [{"id": 2, "interleaved_ratio": {"ratio": 1.0}}, {"id": 7, "interleaved_ratio": {"ratio": 0.97}}],
    }
    assert claims_check.printed_ratio(found) == 0.97
    # The report's headline (kernel time where kerntune's profiler timed the winner) is what it prints first.
    led = {
        "winner": {"id": 7},
        "finalists": [{"id": 7, "ratio": {"value": 0.98, "timer": "CUPTI"}, "interleaved_ratio": {"ratio": 0.97}}],
    }
    assert claims_check.printed_ratio(led) == 0.98
    assert claims_check.printed_ratio({"winner": {"id": 9}, "finalists": found["finalists"]}) is None


def test_kerntunes_own_medians_are_read_from_the_winners_last_round() -> None:
    second = {"original_ms": 0.015456, "variant_ms": 0.0143205, "ratio": 0.93}
    found = {"winner": {"confirmed": {"conditions": {"telemetry": {"second_timer": second}}}}}
    assert claims_check.kerntune_medians_us(found) == pytest.approx({"torch_us": 15.456, "winner_us": 14.3205})
    assert claims_check.kerntune_medians_us({"winner": {"confirmed": None}}) is None
    assert (
        claims_check.kerntune_medians_us(
            {
                "winner": {
                    "confirmed": {"conditions": {"telemetry": {"second_timer": {"timer": "x", "error": "refused"}}}}
                }
            }
        )
        is None
    )


def test_bad_arguments_to_the_check_scripts_are_one_line_and_exit_2(tmp_path: Path) -> None:
    (tmp_path / "bad.json").write_text("{bad")
    (tmp_path / "empty.json").write_text("{}")
    out = str(tmp_path / "out.json")
    cases = [
        ("claims_check.py", [str(tmp_path / "bad.json"), out], "is not JSON"),
        ("claims_check.py", [str(tmp_path / "empty.json"), out], "no 'shapes' list"),
        ("claims_check.py", [str(tmp_path / "none.json"), out], "no report at"),
        ("claims_check.py", [str(tmp_path / "empty.json"), out, "many"], "usage:"),
        ("gate_step_state.py", [out, "gate-sometimes", "1,2,3=A:1"], "invalid choice"),
        ("gate_step_state.py", [out, "gate-first", "1,2=A"], "give M,N,K=NAME:VALUE"),
    ]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    for script, args, said in cases:
        done = subprocess.run(
            [sys.executable, str(benchmark_script(script.removesuffix(".py"))), *args],
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
        )
        assert done.returncode == 2 and said in done.stderr, (script, args, done.stderr)
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr  # one line, no traceback
    assert not Path(out).exists()
