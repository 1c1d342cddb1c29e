"""Run a Python program under ``torch.profiler`` and write what ran: ``python -m kerntune.exec.profiled OUT.json
-- SCRIPT.py ARGS`` (or ``-- -m MODULE ARGS``). Used by ``kerntune scope`` and ``kerntune verify``.

OUT.json holds ``kernels`` (device kernels by name: launches and device microseconds), ``ops`` (the operators
that launched device work, or on a CPU-only machine the matmul-like operators, with input shapes and dtypes)
and the program's exit code. The program runs as ``__main__`` in this process, so the profiler sees every
launch; its exit code is passed on.
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

from kerntune.runtime.launch import run_program

MATMUL_OPS = ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::_scaled_mm")
"""The operators that compute a matmul (``aten::matmul`` and ``aten::linear`` call one of these: counting them
too would count each product twice)."""


def _on_device(event: Any) -> bool:
    kind = getattr(getattr(event, "device_type", None), "name", "CPU")
    return kind != "CPU"


def summarize(events: list[Any], gpu: bool) -> dict[str, Any]:
    """Device kernels by name and the operators that launched them (on a CPU-only run: matmul-like ops)."""
    kernels: dict[str, dict[str, float]] = defaultdict(lambda: {"launches": 0, "device_us": 0.0})
    ops: dict[tuple[str, str, str], dict[str, Any]] = {}
    for e in events:
        if _on_device(e):
            k = kernels[str(e.name)]
            k["launches"] += 1
            k["device_us"] += float(e.time_range.elapsed_us())
            continue
        launched = list(getattr(e, "kernels", None) or [])
        if not launched and (gpu or str(e.name) not in MATMUL_OPS):
            continue
        shapes = [list(s) for s in (e.input_shapes or [])]
        dtypes = [str(d) for d in (getattr(e, "input_dtypes", None) or [])]
        row = ops.setdefault((str(e.name), json.dumps(shapes), json.dumps(dtypes)), {
            "op": str(e.name), "input_shapes": shapes, "input_dtypes": dtypes, "calls": 0, "device_us": 0.0,
            "cpu_us": 0.0, "kernels": []})
        row["calls"] += 1
        row["cpu_us"] += float(e.time_range.elapsed_us())
        for k in launched:
            row["device_us"] += float(getattr(k, "duration", 0.0))
            if str(k.name) not in row["kernels"]:
                row["kernels"].append(str(k.name))
    return {"kernels": [{"name": n, **v} for n, v in sorted(kernels.items(), key=lambda kv: -kv[1]["device_us"])],
            "ops": sorted(ops.values(), key=lambda r: -(r["device_us"] or r["cpu_us"]))}


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[1] != "--":
        sys.stderr.write("usage: python -m kerntune.exec.profiled OUT.json -- SCRIPT.py ARGS | -m MODULE ARGS\n")
        return 2
    out, program = Path(argv[0]), argv[2:]
    import torch
    from torch.profiler import ProfilerActivity, profile

    gpu = bool(torch.cuda.is_available())
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if gpu else [])
    with profile(activities=activities, record_shapes=True) as prof:
        code = run_program(program)
        if gpu:
            torch.cuda.synchronize()
    summary = summarize(list(prof.events()), gpu)
    out.write_text(json.dumps({"gpu": gpu, "exit_code": code, "program": program, **summary}, indent=1))
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
