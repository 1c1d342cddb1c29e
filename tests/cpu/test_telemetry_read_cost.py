"""benchmarks/time-budget/telemetry_read_cost.py on a machine without NVML: the stopping check and the bootstrap are
timed, the reads are said to be missing (not invented), and a bad argument is one line and exit 2."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.conftest import ROOT, benchmark_script


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(benchmark_script("telemetry_read_cost")), *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
    )


def test_the_costs_are_timed_and_missing_reads_are_said() -> None:
    done = _run("--repeats", "3")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    checks = [line for line in lines if "stopping check" in line]
    assert [line.split()[0] for line in checks] == ["20", "100", "300", "1000"]
    assert all(float(line.split("stopping check ")[1].split()[0]) > 0 for line in checks)  # timed, not skipped
    assert "whole reading (Nvml.read)" in done.stdout or "no NVML reads timed" in done.stdout


def test_a_bad_repeat_count_is_refused() -> None:
    done = _run("--repeats", "0")
    assert done.returncode == 2 and done.stderr.strip() == "telemetry_read_cost: --repeats must be at least 1"
