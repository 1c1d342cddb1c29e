"""benchmarks/time-budget/wave_fill_vs_screens.py's arithmetic and its run over a candidates CSV, without a GPU."""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import benchmark_script, load_benchmark

wave_fill = load_benchmark("wave_fill_vs_screens")
SCRIPT = str(benchmark_script("wave_fill_vs_screens"))


def test_wave_fill_counts_tiles_over_whole_waves_and_the_real_rows() -> None:
    shape = wave_fill.fields("M=256,N=10240,K=8192,layout='NT',bias=0")
    assert shape["layout"] == "NT"
    # 2 × 80 = 160 tiles on 132 SMs: two waves, 160 of 264 slots
    assert wave_fill.wave_fill(shape, {"BLOCK_M": "128", "BLOCK_N": "128"}, 132) == pytest.approx(160 / 264)
    # split-K multiplies the tiles; M = 1 in a 16-row tile uses 1 row in 16
    decode = wave_fill.fields("M=1,N=6144,K=4096")
    assert wave_fill.wave_fill(decode, {"BLOCK_M": "16", "BLOCK_N": "64", "SPLIT_K": "2"}, 132) == pytest.approx(
        192 / 264 / 16
    )


def test_a_run_ranks_fill_against_screen_time_and_refuses_a_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "candidates.csv"
    with path.open("w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["shape", "role", "status", "config", "median_ms"])
        for i, bn in enumerate((32, 64, 128, 256) * 3):  # larger tiles: fewer tiles, worse fill, here faster
            config = f"BLOCK_M=128,BLOCK_N={bn},SPLIT_K={1 + i // 4}"
            out.writerow(["M=256,N=10240,K=8192", "screen", "ok", config, str(1.0 / bn + i * 1e-4)])
    done = subprocess.run([sys.executable, SCRIPT, str(path)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "256x10240x8192: 12 configs, rho" in done.stdout and "at 0 of 1 shapes" in done.stdout
    missing = subprocess.run(
        [sys.executable, SCRIPT, str(tmp_path / "none.csv")], capture_output=True, text=True, timeout=120
    )
    assert missing.returncode == 2 and "not a file" in missing.stderr
