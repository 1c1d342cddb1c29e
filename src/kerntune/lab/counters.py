"""``kerntune lab compare --counters``: hardware counters of the captured launch and its variant, one profiled
launch each, from Nsight Compute (``--clock-control none``: the card as found) — compute and memory throughput as
% of the device's sustained peak (speed of light), DRAM throughput, achieved and theoretical occupancy.

The profiler runs a lab job (``job.py``, job ``profile``) that compiles and warms both launches, restores the
captured inputs, and launches each once inside the NVTX range the profiler keeps (restores stay outside it).
NVIDIA only for now: rocprofv3 has no range filter on this path, so AMD is refused rather than guessed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kerntune.devices.counters import RANGE, ncu_command, parse_ncu_raw, profiler_for
from kerntune.errors import UsageError
from kerntune.lab.manifest import Manifest

if TYPE_CHECKING:
    from kerntune.lab.replay import Launch
from kerntune.lab.session import JOB_BUDGET_S

PROFILED = ("original", "variant")


def check_counters(manifest: Manifest) -> str:
    """The profiler for this capture, or a refusal (before anything runs or is recorded)."""
    if manifest["device"]["type"] != "cuda" or manifest.get("interpreted"):
        raise UsageError(
            f"--counters needs a GPU capture (Nsight Compute); this one ran on {manifest['device']['name']}"
        )
    if "gfx" in str(manifest["device"].get("arch", "")):
        raise UsageError("--counters reads Nsight Compute on NVIDIA GPUs; AMD counters in the lab are not done yet")
    return profiler_for("nvidia")


def profile_pair(folder: Path, manifest: Manifest, request: dict[str, Any]) -> dict[str, Any]:
    """Counters of the original launch and the variant's, by their order inside the profiled range."""
    tool = check_counters(manifest)
    harness = [sys.executable, "-m", "kerntune.lab.job", str(folder), json.dumps({**request, "job": "profile"})]
    try:
        done = subprocess.run(
            ncu_command(harness),
            capture_output=True,
            text=True,
            timeout=JOB_BUDGET_S,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
    except subprocess.TimeoutExpired:
        raise UsageError(f"{tool} did not finish in {JOB_BUDGET_S:g} s") from None
    if done.returncode != 0:
        raise UsageError(f"{tool} exited {done.returncode}: {(done.stderr or done.stdout)[-800:]}")
    name = manifest["kernel"]["name"]
    rows = [r for r in parse_ncu_raw(done.stdout) if str(r["kernel"]).startswith(name)]
    if len(rows) != len(PROFILED):
        raise UsageError(
            f"{tool} saw {len(rows)} launches of {name} in the range {RANGE}, expected "
            f"{len(PROFILED)}: {[r['kernel'] for r in rows]}"
        )
    return {"tool": tool, **{role: row["metrics"] for role, row in zip(PROFILED, rows, strict=True)}}


def launch_profiled(launches: list[Launch]) -> None:
    """In the profiled process: warm each launch (compiled, caches and clocks settled), then restore its inputs
    and launch it once inside the NVTX range, in order."""
    import torch

    for launch in launches:
        for _ in range(3):
            launch.reset()
            launch.run()
    for launch in launches:
        launch.reset()
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_push(RANGE)  # type: ignore[no-untyped-call]
        launch.run()
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_pop()  # type: ignore[no-untyped-call]
