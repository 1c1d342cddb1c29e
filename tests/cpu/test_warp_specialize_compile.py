"""benchmarks/gemm/warp_specialize_compile.py without a GPU: one form cross-compiles for sm_90 and says what it holds,
and a bad --block is refused on one line."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import benchmark_script, load_benchmark

pytest.importorskip("triton")
SCRIPT = benchmark_script("warp_specialize_compile")


def test_an_unspecialized_form_compiles_and_is_reported_so() -> None:
    probe = load_benchmark("warp_specialize_compile")
    said = probe.compile_once((64, 64, 64), 2, device_descriptors=False, b_t=False, warps=4, ws=False)
    assert said.startswith("not specialized; setmaxnreg 0, shared "), said


def test_a_bad_block_is_one_line_and_exit_2() -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--block", "128x128"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 2 and "--block is BLOCK_M,BLOCK_N,BLOCK_K" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
