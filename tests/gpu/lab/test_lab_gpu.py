"""The kernel laboratory on a real GPU: a compiled Triton launch captured from a running program, replayed in the
three modes with CUDA-event timing, a config variant compared and saved into the program's dispatch table, and
the program run again reading it (the H200 acceptance with the demo's matmul is benchmarks/h200_issue8.sh)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import DATA, CliResult, has_gpu

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not has_gpu(), reason="needs a CUDA or ROCm GPU")]

ON_GPU = {"LAB_DEVICE": "cuda"}


def test_capture_replay_compare_save_on_the_gpu(kerntune: Callable[..., CliResult], tmp_path: Path) -> None:
    lab = tmp_path / "lab"
    shutil.copytree(DATA / "lab", lab)
    program = [sys.executable, str(lab / "program.py")]
    before = subprocess.run(program, capture_output=True, text=True, check=True, env={**os.environ, **ON_GPU})
    cap = tmp_path / "cap"
    done = kerntune("capture", "--kernel", "scale_add", "--nth", "2", "-o", str(cap), "--json", "--", "python",
                    str(lab / "program.py"), env=ON_GPU)
    assert done.code == 0, done.stderr
    manifest = done.json()
    assert manifest["device"]["type"] == "cuda" and manifest["interpreted"] is False
    for mode in ("isolated", "sustained", "replays"):
        result = kerntune("replay", str(cap), "--mode", mode, "--iterations", "50", "--repeats", "3", "--json")
        assert result.code == 0, result.stderr
        replayed = result.json()
        assert replayed["mode"] == mode and replayed["reproduces_capture"] is True
        assert replayed["timing_claimed"] is True and 0 < replayed["median_ms"] < 10
        assert replayed["cache"].startswith("warm" if mode == "sustained" else "cold"), replayed["cache"]
    compared = kerntune("lab", "compare", str(cap), "--set", "BLOCK=64", "--iterations", "50", "--counters",
                        "--json")
    assert compared.code == 0, compared.stderr
    assert compared.json()["validation"]["passed"] and compared.json()["ratio"] > 0
    resources = compared.json()["variant_result"]["resources"]
    assert resources["registers"] > 0 and resources["matrix_instructions"] == 0, resources  # no tl.dot in it
    assert 0 < resources["occupancy"]["theoretical_pct"] <= 100, resources
    counters = compared.json()["counters"]
    for role in ("original", "variant"):
        assert counters[role]["duration_s"] > 0 and 0 < counters[role]["memory_sol_pct"] <= 100, counters
    table = tmp_path / "table.json"
    saved = kerntune("lab", "save", str(cap), "--set", "BLOCK=64", "--table", str(table), "--json")
    assert saved.code == 0, saved.stderr
    after = subprocess.run([*program, str(table)], capture_output=True, text=True, check=True,
                           env={**os.environ, **ON_GPU, "KERNTUNE_LOG_DISPATCH": "1"})
    assert after.stdout == before.stdout and '-> exact {"BLOCK": 64}' in after.stderr, after.stderr
    assert json.loads(table.read_text())["entries"][0]["median_ms"] == compared.json()["median_ms"]
