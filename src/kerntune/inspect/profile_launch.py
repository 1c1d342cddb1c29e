"""The process ``kerntune profile`` runs under a hardware-counter profiler: one config (or one baseline) of a
spec at one shape, compiled, warmed up, then launched once inside the NVTX range the profiler keeps.

Usage: ``python -m kerntune.inspect.profile_launch PAYLOAD.json`` with spec_path, device, shape, dtype,
config or baseline, warmup. Exit 0 when the launch ran; the profiler's output is the result.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TypedDict

from kerntune.devices.counters import RANGE
from kerntune.model import Config, Scalar, Shape
from kerntune.tune.evaluate import compile_for, kernel_for, placed_inputs, setup, worker


class ProfilePayload(TypedDict, total=False):
    """One config (or a baseline) of a spec at one shape: what ``kerntune profile`` launches under a profiler."""

    spec_path: str
    device: str
    shape: dict[str, Scalar]
    dtype: str
    config: dict[str, Scalar]
    baseline: str | None
    warmup: int


def launch_under_profiler(payload: ProfilePayload) -> None:
    state: dict[str, object] = {}
    setup(state, {"spec_path": payload["spec_path"], "device": payload.get("device", "")})
    spec = worker(state)
    backend = spec.backend
    shape = Shape.of(payload["shape"])
    args = placed_inputs(spec, shape, str(payload["dtype"]), 1)
    kernel = kernel_for(spec.problem, payload.get("baseline"))
    compiled = compile_for(spec, shape, Config.of(payload.get("config") or {}), kernel, args)
    for _ in range(int(payload.get("warmup", 3))):  # compiled, caches and clocks settled before the profiled one
        compiled.launch(args)
    backend.synchronize()
    import torch

    torch.cuda.nvtx.range_push(RANGE)  # type: ignore[no-untyped-call]
    compiled.launch(args)
    backend.synchronize()
    torch.cuda.nvtx.range_pop()  # type: ignore[no-untyped-call]


if __name__ == "__main__":
    launch_under_profiler(json.loads(Path(sys.argv[1]).read_text()))
