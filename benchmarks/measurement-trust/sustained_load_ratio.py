"""How the winner/torch.matmul ratio of one `kernels/triton_gemm` config moves with the power state: the two
calls timed by CUPTI kernel records (claims_check's protocol: torch W W torch, a 256 MiB fill before each call)
in one continuous profiler session of sustained load, cut into windows, with the SM clock and power read by NVML
after each window; then again after idle gaps of different lengths.

Why: on the H200 the independent check reads 8192³ at 0.9795 (six runs, torch.matmul 1617–1657 µs) where
kerntune's second timer reads 0.988–0.992 (torch.matmul 1418 µs): the same two kernels at different clocks, under
a power cap that lowers the clock of a long compute-bound load. This shows how fast the clock falls under load,
how fast it recovers in an idle gap, and what ratio each clock gives.

Usage: python benchmarks/measurement-trust/sustained_load_ratio.py OUT.json M,N,K=CONFIG   (CONFIG as NAME:VALUE,...;
prints one line per window: phase, seconds since the phase began, torch and winner µs, ratio, SM MHz, power W)
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pynvml
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from claims_check import FLUSH_BYTES, _problem, call_times_us, matmul_calls, warm_up

WINDOW_BLOCKS = 8
PHASES = (
    ("from idle", 3.0, 3.0),
    ("after 0.1 s idle", 0.1, 1.0),
    ("after 0.5 s idle", 0.5, 1.0),
    ("after 2 s idle", 2.0, 1.0),
)
"""(name, idle seconds before, seconds of sustained load)."""


def nvml_reading(handle: Any) -> dict[str, float]:
    return {
        "sm_mhz": float(pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM)),
        "power_w": pynvml.nvmlDeviceGetPowerUsage(handle) / 1e3,
    }


def phase(
    calls: dict[str, Any], flush: torch.Tensor, handle: Any, idle_s: float, load_s: float
) -> list[dict[str, Any]]:
    """Idle ``idle_s``, then windows of WINDOW_BLOCKS blocks (torch W W torch) for ``load_s`` under one profiler
    session; each window's median block ratio, the two medians, and NVML's reading after it."""
    torch.cuda.synchronize()
    time.sleep(idle_s)
    order = [calls["torch"], calls["winner"], calls["winner"], calls["torch"]] * WINDOW_BLOCKS
    windows: list[dict[str, Any]] = []
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        start = time.perf_counter()
        while time.perf_counter() - start < load_s:
            for call in order:
                flush.fill_(1)
                call()
            torch.cuda.synchronize()
            windows.append({"t_s": time.perf_counter() - start, **nvml_reading(handle)})
    with tempfile.TemporaryDirectory() as tmp:
        trace = Path(tmp) / "trace.json"
        prof.export_chrome_trace(str(trace))
        events = json.loads(trace.read_text())["traceEvents"]
    times = np.array(call_times_us(events, len(order) * len(windows))).reshape(len(windows), WINDOW_BLOCKS, 4)
    for w, blocks in zip(windows, times, strict=True):
        ratios = (blocks[:, 1] + blocks[:, 2]) / (blocks[:, 0] + blocks[:, 3])
        w.update(
            ratio=float(np.median(ratios)),
            torch_us=float(np.median(blocks[:, [0, 3]])),
            winner_us=float(np.median(blocks[:, [1, 2]])),
        )
    return windows


def main() -> int:
    try:
        out, (dims, _, text) = Path(sys.argv[1]), sys.argv[2].partition("=")
        shape = dict(zip("MNK", (int(x) for x in dims.split(",")), strict=True)) | {"layout": "NN", "bias": 0}
        config = {k: int(v) for k, v in (kv.split(":") for kv in text.split(","))}
    except (IndexError, ValueError) as exc:
        print(
            f"usage: python benchmarks/measurement-trust/sustained_load_ratio.py OUT.json M,N,K=NAME:VALUE,... ({exc})",
            file=sys.stderr,
        )
        return 2
    pynvml.nvmlInit()
    handle = pynvml.nvmlDeviceGetHandleByIndex(torch.cuda.current_device())
    problem = _problem()
    flush = torch.empty(FLUSH_BYTES, dtype=torch.uint8, device="cuda")
    args = problem.make_inputs(shape, "bfloat16", 1)
    calls = matmul_calls(problem, args, shape, config)
    warm_up(calls.values())
    rows = []
    for name, idle_s, load_s in PHASES:
        windows = phase(calls, flush, handle, idle_s, load_s)
        rows.append({"phase": name, "idle_s": idle_s, "load_s": load_s, "windows": windows})
        for w in windows:
            print(
                f"{name}: {w['t_s']:5.2f} s  torch {w['torch_us']:7.1f} us  winner {w['winner_us']:7.1f} us  "
                f"ratio {w['ratio']:.4f}  {w['sm_mhz']:.0f} MHz  {w['power_w']:.0f} W",
                flush=True,
            )
        late = [w for w in windows if w["t_s"] >= load_s / 2]
        print(
            f"{name}: second half median ratio {statistics.median(w['ratio'] for w in late):.4f} at "
            f"{statistics.median(w['sm_mhz'] for w in late):.0f} MHz; first window {windows[0]['ratio']:.4f} at "
            f"{windows[0]['sm_mhz']:.0f} MHz",
            flush=True,
        )
    out.write_text(json.dumps({"shape": shape, "config": config, "phases": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
