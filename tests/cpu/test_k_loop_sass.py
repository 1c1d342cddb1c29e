"""benchmarks/gemm/k_loop_sass.py without a GPU: the example's kernels cross-compiled for sm_90 with the shape at run
time and as constexprs, read back as SASS loop lengths; bad arguments refused."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from tests.conftest import ROOT, benchmark_script

pytest.importorskip("triton")
SCRIPT = benchmark_script("k_loop_sass")


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
    )


def test_a_known_k_shortens_the_mma_kernels_loop_without_spills() -> None:
    done = _run("--shape", "32,10240,8192", "--tile", "32,128,128,4,4", "--constexprs", "K")
    assert done.returncode == 0, done.stderr
    rows = {line.split(":")[0].strip(): line for line in done.stdout.splitlines()[1:]}

    def field(label: str, name: str) -> int:
        found = re.search(rf"{name} (\d+)", rows[label])
        assert found, rows[label]
        return int(found.group(1))

    assert field("K constexpr", "K loop") < field("as declared", "K loop"), done.stdout  # the MMA kernel's K: run time
    assert field("K constexpr", "spill ops") == 0 and field("K constexpr", "K loop") > 0, done.stdout


def test_bad_arguments_are_refused_with_exit_2() -> None:
    for args, said in (
        (["--shape", "32,10240"], "--shape is 3 positive whole numbers"),
        (["--constexprs", "Q"], "names Q, not arguments of matmul_kernel"),
    ):
        done = _run(*args)
        assert done.returncode == 2 and said in done.stderr, done.stderr
