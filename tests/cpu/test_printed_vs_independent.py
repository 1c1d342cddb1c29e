"""benchmarks/time-budget/printed_vs_independent.py: a report's printed ratio and its events' ratio set beside an
independent timing of the same config, shape by shape; shapes that cannot be compared are named, not silently
dropped."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import benchmark_script, load_benchmark

pvi = load_benchmark("printed_vs_independent")


def _shape(m: int) -> dict[str, object]:
    return {"M": m, "N": 4096, "K": 4096, "layout": "NT", "bias": 0}


def _report(*rows: tuple[int, int, float, float]) -> dict[str, object]:
    """(M, BLOCK_N, printed CUPTI ratio, events ratio) per shape, in a tune report's shape."""
    return {
        "shapes": [
            {
                "shape": _shape(m),
                "winner": {"id": 7, "config": {"BLOCK_M": 16, "BLOCK_N": bn}},
                "finalists": [
                    {"id": 7, "ratio": {"value": cupti, "timer": "CUPTI"}, "interleaved_ratio": {"ratio": events}}
                ],
            }
            for m, bn, cupti, events in rows
        ]
    }


def _winners(*rows: tuple[int, int, float]) -> dict[str, object]:
    """(M, BLOCK_N, independent ratio) per shape, as gemm_forms writes them, under the label 'run'."""
    return {
        "shapes": [
            {
                "shape": _shape(m),
                "rows": [
                    {
                        "label": "run",
                        "gated": True,
                        "checked": {"ratio": ratio},
                        "config": {"BLOCK_M": 16, "BLOCK_N": bn, "GEMV": 0},
                    }
                ],
            }
            for m, bn, ratio in rows
        ]
    }


def test_each_timer_is_measured_against_the_independent_check() -> None:
    report = _report((16, 32, 0.915, 0.928), (32, 64, 1.000, 1.050), (64, 64, 1.0, 1.0), (128, 64, 1.1, 1.1))
    winners = _winners((16, 32, 0.910), (32, 64, 1.004), (64, 128, 1.0))  # 64: another config; 128: not timed
    result = pvi.compare(report, winners, "run")
    assert [r["shape"][0] for r in result["rows"]] == [16, 32]
    assert result["rows"][0]["printed_off"] == pytest.approx(abs(math.log(0.915 / 0.910)))
    printed, events = result["summary"]["printed"], result["summary"]["events"]
    assert (printed["shapes"], printed["within_1pct"]) == (2, 2)  # 0.55% and 0.40% apart
    assert (events["shapes"], events["within_1pct"]) == (2, 0)  # 2.0% and 4.5% apart
    assert events["max_pct"] == pytest.approx(100 * abs(math.log(1.050 / 1.004)))
    why = {r["shape"][0]: r["why"] for r in result["left_out"]}
    assert why == {64: "not the same config", 128: "label 'run' did not time it"}


def test_no_meeting_shape_is_an_error_that_names_the_label(tmp_path: Path) -> None:
    (tmp_path / "r.json").write_text(json.dumps(_report((16, 32, 0.9, 0.9))))
    (tmp_path / "w.json").write_text(json.dumps(_winners((16, 32, 0.9))))
    script = [
        sys.executable,
        str(benchmark_script("printed_vs_independent")),
        str(tmp_path / "r.json"),
        str(tmp_path / "w.json"),
    ]
    done = subprocess.run([*script, "other"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "'other'" in done.stderr and len(done.stderr.strip().splitlines()) == 1
    done = subprocess.run(
        [*script, "run", "--json", str(tmp_path / "o.json")], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0 and "printed: within 1% of the independent check at 1 of 1 shapes" in done.stdout
    assert json.loads((tmp_path / "o.json").read_text())["rows"][0]["independent"] == 0.9
