"""``kerntune profile TUNING_RUN``: hardware counters of a run's finalists and baselines from the vendor's profiler
(Nsight Compute on NVIDIA; rocprofv3 on AMD, untested here), attached to the candidates in the store.

Each candidate is profiled in its own process (``profile_launch``) under the profiler: compiled, warmed up,
then launched once inside an NVTX range, the only launch ncu keeps. A profile that fails or hangs is recorded
as an error for that candidate; the others go on.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from kerntune.devices import counters
from kerntune.errors import UsageError
from kerntune.model import Candidate
from kerntune.report.summary import RunReport, ShapeReport, build_report
from kerntune.store import Store
from kerntune.store.profiles import save_profile

PROFILE_TIMEOUT_S = 600.0
"""ncu replays a kernel once per pass its metrics need: far longer than the kernel, still bounded."""


@dataclass(frozen=True)
class ProfileRequest:
    run: str
    top: int = 3
    """Finalists per shape (confirmed ones first, else the fastest searched)."""
    baselines: bool = True


def chosen(report: RunReport, top: int, baselines: bool) -> list[tuple[ShapeReport, Candidate]]:
    """Per shape: the ``top`` finalists (or fastest timed configs), then the baselines that were timed."""
    picked = []
    for s in report.shapes:
        searched = [c for c in s.all_candidates if c.role == "search" and c.status == "ok" and c.measurement]
        ranked = [c for c in s.finalists if c.role == "search"] or sorted(
            searched, key=lambda c: c.measurement.median_ms if c.measurement else 0.0
        )
        picked += [(s, c) for c in ranked[:top]]
        if baselines:
            picked += [(s, b) for b in s.baselines if b.status == "ok"]
    return picked


def _payload(report: RunReport, s: ShapeReport, c: Candidate) -> dict[str, object]:
    run = report.run
    kernel_baseline = c.role == "baseline" and not c.config.items
    return {
        "spec_path": run.spec_path,
        "device": str(run.options.get("device", "")),
        "shape": s.shape.as_dict(),
        "dtype": run.dtype,
        "config": {} if kernel_baseline else c.config.as_dict(),
        "baseline": c.label if kernel_baseline else None,
        "warmup": 3,
    }


def profile_one(tool: str, payload: dict[str, object], workdir: Path) -> list[dict[str, object]]:
    """One launch described by ``payload`` (spec_path, device, shape, dtype, config or baseline, warmup) profiled
    by ``tool`` in its own process under ``workdir``: its kernels' counters, or a UsageError saying why none."""
    path = workdir / "payload.json"
    path.write_text(json.dumps(payload))
    harness = [sys.executable, "-m", "kerntune.inspect.profile_launch", str(path)]
    out_dir = workdir / "rocprof"
    command = counters.ncu_command(harness) if tool == "ncu" else counters.rocprof_command(harness, out_dir)
    try:
        proc = subprocess.run(
            command,
            capture_output=True,
            text=True,
            timeout=PROFILE_TIMEOUT_S,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
    except subprocess.TimeoutExpired as exc:
        raise UsageError(f"{tool} did not finish in {PROFILE_TIMEOUT_S:g} s") from exc
    if proc.returncode != 0:
        raise UsageError(f"{tool} exited {proc.returncode}: {(proc.stderr or proc.stdout)[-800:]}")
    return counters.parse_ncu_raw(proc.stdout) if tool == "ncu" else counters.parse_rocprof_counters(out_dir)


def profile(request: ProfileRequest, store: Store) -> list[dict[str, object]]:
    """Profile the run's chosen candidates; one row per candidate, with its kernels' counters or an error."""
    report = build_report(store, store.get_run(request.run))
    run = report.run
    if not run.target.claims_timing:
        raise UsageError(
            f"tuning run {run.id} ran on {run.target.device_name}, where no timing is claimed: profile a "
            "tuning run made on a GPU, on that GPU"
        )
    tool = counters.profiler_for(run.target.vendor)
    rows = []
    for s, c in chosen(report, request.top, request.baselines):
        row: dict[str, object] = {
            "shape": s.shape.key,
            "role": c.role,
            "label": c.name,
            "candidate_id": c.id,
            "tool": tool,
        }
        with tempfile.TemporaryDirectory(prefix="kerntune-profile-") as tmp:
            try:
                row["kernels"] = profile_one(tool, _payload(report, s, c), Path(tmp))
                if c.id is not None:
                    save_profile(store, c.id, tool, {"kernels": row["kernels"]})
            except UsageError as exc:
                row["error"] = str(exc)
        rows.append(row)
    return rows
